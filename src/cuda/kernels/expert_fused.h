#pragma once
// The fused MoE for a few tokens per call (decode): after the one-block prologue (routing, x quantised,
// pairs grouped by expert), one persistent launch does stage 1, stage 2 and the weighted combine. Each block
// (one or two per SM) has a producer warp that streams whole weight tiles (16 rows of w13, or up to 64 rows
// of w2: contiguous runs of tens of kilobytes) into a shared-memory ring with 1-D bulk copies (TMA), never
// waiting on them, and loads each tile's fp8 scales into the ring; eight consumer warps multiply them on CUDA
// cores from shared memory. Stage 2 of an expert starts once every stage-1 tile of that expert is done (a
// counter per expert), and the warp that finishes the last expert of a tile of output rows writes the
// combine. Stage 2's weights are requested while stage 1 is still running.
//
// Bits: each dot product is one warp, lane l taking the 16-byte chunks l, l + 32, ... of the row, each
// chunk's products summed in a fixed order and scaled by its K block's scale, the lanes then added by a fixed
// shuffle tree. So a token's output depends only on that token (batch invariant for every M this path takes)
// and is the same on every run. It differs in the last bits from the GEMV path (another lane split).
//
// Status: correct on the H200 (GPU tests) but measured slower than the GEMV (docs/performance.md), so Auto
// takes it only with MOE_FUSED=1.
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/moe_params.h"

namespace moe::cuda {

constexpr int kFusedMaxTokens = 8;

struct FusedArgs {
  ExpertWeightsDev w;
  GroupingDev g;
  ActivationParams act;
  const float* xq;            // [M, H] the prologue's quantised x (dequantised values)
  uint16_t* h;                // [M * K, P] bf16 workspace
  float* y;                   // [M * K, H] fp32 workspace: stage 2's per-pair rows
  int* counters;              // fused_counter_ints(E, H) ints, zeroed by the prologue of the same call
  const int* topk_ids;        // [M, K]
  const float* topk_weights;  // [M, K]
  uint16_t* out;              // [M, H] bf16
  int M;
};

// Ints of the counter workspace: one per expert (stage-1 tiles done) and one per tile of output rows
// (experts done with it).
int fused_counter_ints(int num_experts, int hidden);
// Whether the fused path takes this call: bf16 or fp8_block weights, no shared expert, M <= kFusedMaxTokens,
// and tiles that fit in shared memory.
bool fused_supported(const ExpertWeightsDev& w, int M, int top_k, bool has_shared);
void launch_fused(const FusedArgs& a, cudaStream_t stream);
// Prints the last launch's per-block timeline when built with -DMOE_FUSED_TIMELINE (a measuring build); says
// that it is not compiled in otherwise.
void fused_timeline_report();

}  // namespace moe::cuda
