#pragma once
// The MoE router's fp32 GEMV (the post-attention RMSNorm inside it, as f32_gemv) and the MoE op's one-block
// prologue in one launch, for a few tokens: the GEMV's blocks are one thread block cluster; each sends its
// rows' logits into block 0's shared memory (distributed shared memory), and after one cluster barrier block
// 0 routes, quantises x and groups the pairs by expert (cuda/kernels/prologue_small.cuh) while the others
// exit. One kernel boundary and the logits' round trip through global memory fewer per MoE layer than
// f32_gemv followed by the op's prologue, with the same arithmetic in the same order: the same bits.
// The op launches it through cuda::RouterLaunch (moe_layer.h). Host code.
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/kernels/launchers.h"
#include "model/cuda/launch.h"

namespace moe::model::gpu {

// Whether router_prologue takes a router of `experts` rows of `cols` for M tokens (one cluster of at most 8
// blocks of 16 rows: up to 128 experts; M <= kF32GemvMaxM; cols as f32_gemv's).
bool router_prologue_fits(int experts, int cols, int M);

// On unless MOE_ROUTER_PROLOGUE=0 (router_prologue.cu says why); set_router_prologue overrides it (tests).
bool router_prologue_on();
void set_router_prologue(bool on);
int64_t router_prologue_launches();

// The router's logits of RMSNorm(norm) [M, cols] (norm.weight set; block 0 writes norm.x_out and
// norm.xn_bf16_out, which must be route.x) times w [rows, cols] fp32, then the one-block prologue of route
// and align on them. route.logits is not written.
void router_prologue(const float* w, int rows, int cols, int M, const NormInput& norm,
                     const cuda::RouteArgs& route, const cuda::AlignArgs& align, cudaStream_t s);

}  // namespace moe::model::gpu
