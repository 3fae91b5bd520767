#pragma once
// The CUDA backend of the model (model/backend.h): the whole transformer on one GPU, bf16 activations into
// cuBLAS GEMMs with fp32 accumulation, fp8 block linears through a GEMV on the fp8 bytes for decode, paged
// bf16 KV, the fused MoE of cuda/moe_layer.h, decode steps replayed from CUDA graphs. Declared without CUDA
// types so the factory and the CLI build everywhere; builds without CUDA get stand-ins that say so.
#include <cstdint>
#include <memory>

#include "io/hf_checkpoint.h"
#include "io/tensor_source.h"
#include "model/backend.h"
#include "model/weights.h"

namespace moe::model {

struct CudaBackendOptions {
  bool use_graphs = true;    // decode steps (one token per sequence) replayed from CUDA graphs
  int max_graph_batch = 64;  // larger decode batches run eagerly; smaller ones pad to 1, 2, 4, ... this
  // A MoE layer's weighted combine done inside the next layer's fp8 q/k/v GEMV (its RMSNorm stages the
  // experts' rows) where they fit, one launch fewer per layer at decode sizes with the same bits; one GPU
  // only. Off: on an H200 it made the batch-1 decode step slower (session 15, random Qwen3-30B-A3B fp8:
  // 3.485 against 3.033 ms), its staging costing more than the launch it saves. MOE_COMBINE_IN_NORM=1 or =0
  // in the environment overrides this.
  bool combine_in_norm = false;
};

// How many MoE calls this process's CUDA backends have left to the next layer's GEMV (combine_in_norm): for
// tests, which check that the fused form ran.
int64_t cuda_combines_in_norm();

// The fp8 decode GEMV's compact kernel (weights in shared memory, rolled loops; the same bits): whether it
// runs (on unless MOE_GEMV_COMPACT=0), a switch for tests, and its launches so far.
bool cuda_gemv_compact();
void set_cuda_gemv_compact(bool on);
int64_t cuda_gemv_compact_launches();

// The MoE router's GEMV and the op's one-block prologue in one launch (model/cuda/router_prologue.h; the
// same bits): whether it runs (on unless MOE_ROUTER_PROLOGUE=0), a switch for tests, its launches so far.
bool cuda_router_prologue();
void set_cuda_router_prologue(bool on);
int64_t cuda_router_prologue_launches();

// True when a CUDA device is visible (and this build has CUDA).
bool cuda_model_backend_available();

// Tensor parallelism on GPUs (docs/tensor-parallel.md): one CudaModelBackend per rank, built from the rank's
// shard of `ckpt`, with the all-reduce opts.tp_comm names; forward runs every rank on its own thread and
// returns rank 0's logits.
std::unique_ptr<ModelBackend> make_cuda_tp_backend(const HfCheckpoint& ckpt, const BackendOptions& opts,
                                                   const CudaBackendOptions& cuda_opts = {});

// Uploads `weights`; fp8 linears also read their codes and scales from `ckpt`.
std::unique_ptr<ModelBackend> make_cuda_model_backend(const ModelWeights& weights, const TensorSource& ckpt,
                                                      const BackendOptions& opts,
                                                      const CudaBackendOptions& cuda_opts = {});

}  // namespace moe::model
