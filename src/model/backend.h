#pragma once
// The boundary between scheduling (host: sequences, page tables, sampling) and computation. A backend owns
// the weights and the KV page storage and runs one forward step over a batch of sequences; the CPU backend is
// the fp32 reference, a CUDA backend implements the same interface in its own files.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/model_spec.h"

namespace moe::model {

// One sequence's part of a step: its new tokens go at positions [start_pos, start_pos + tokens.size()); the
// K/V of positions [0, start_pos) are already in the pages of its page table, which has room for the new ones
// too.
struct StepSequence {
  std::vector<int32_t> tokens;
  int64_t start_pos = 0;
  std::vector<int32_t> page_table;
  bool all_logits = false;  // logits of every new token (prefill checks) or only of the last one
};

class ModelBackend {
 public:
  virtual ~ModelBackend() = default;
  virtual std::string name() const = 0;
  virtual const ModelSpec& spec() const = 0;
  virtual int64_t page_size() const = 0;
  virtual int64_t num_pages() const = 0;
  // Runs the step and returns fp32 logits, [rows, vocab]: per sequence in order, all its new tokens or its
  // last.
  virtual std::vector<float> forward(const std::vector<StepSequence>& batch) = 0;
  // Copies one physical KV page (every layer) for prefix sharing.
  virtual void copy_kv_page(int32_t src, int32_t dst) = 0;
};

struct BackendOptions {
  int64_t page_size = 16;
  int64_t num_pages = 256;
  bool verbose = false;  // loading progress on stderr
  // Tensor parallelism (docs/tensor-parallel.md). On the cpu backend tp_size > 1 is the simulated mode: every
  // rank's shard runs in turn and the partial outputs are summed at each all-reduce point.
  int tp_size = 1;
  bool expert_parallel = false;  // MoE layers split the experts over the ranks instead of each expert's rows
  // The cuda backend's all-reduce at tp_size > 1: "nccl" (one GPU per rank), "host" (through host memory,
  // ranks spread over the visible GPUs, several per GPU if need be; eager decode steps: a check mode) or
  // "auto" (nccl when there are enough GPUs, else an error that suggests host).
  std::string tp_comm = "auto";
};

// InputError unless `tp_comm` is one of auto, nccl, host (the values of BackendOptions::tp_comm).
void require_known_tp_comm(const std::string& tp_comm);

// Opens a model directory on `backend` ("cpu"; "cuda" once it exists). Throws InputError for unknown names.
std::unique_ptr<ModelBackend> open_model_backend(const std::string& dir, const std::string& backend,
                                                 const BackendOptions& opts);

}  // namespace moe::model
