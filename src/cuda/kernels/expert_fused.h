#pragma once
// The whole MoE of a few tokens (decode) in one launch, with no prologue kernel before it: one block per SM,
// every block routes the call's tokens itself (the same warp routing as route.cu) and quantises x, then
//  - stage 1: the block's share of (active expert, 8 h columns) items; a producer warp streams each item's
//    gate and up rows into a shared-memory ring with 1-D bulk copies, all of them as soon as the routing is
//    known, and eight consumer warps multiply them on the tensor cores and write h;
//  - one grid barrier (every block is resident: one per SM, checked at launch);
//  - stage 2: the block owns a contiguous range of output rows; the producer has already streamed those rows
//    of every active expert's w2 into the ring while stage 1 ran; the consumers quantise h, multiply, and
//    combine the slots of each token in slot order in shared memory, so the block writes its rows of out
//    directly: no y workspace, no combine kernel, no atomics on data.
//
// Bits: the dot products run on the tensor cores (mma.sync, 16 weight rows x 8 token columns), each K step of
// 128 bytes one MMA sum scaled by its fp8 weight and activation block scales, the warps' K steps added in
// warp order through shared memory. A column's sum depends only on that token: batch invariant at every M
// this path takes, and the same on every run. It differs in the last bits from the other paths.
//
// The grid barrier's arrival count is synchronisation state, not data: zero when the workspace is made, and
// every call leaves it at zero (the last block to arrive resets it before releasing the others). Two of these
// kernels must never run at once on one GPU (each waits for all of its blocks to be resident):
// forbid_fused_decode() turns the path off for a process that runs several ranks' steps on one GPU.
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/moe_params.h"

namespace moe::cuda {

constexpr int kFusedMaxTokens = 4;
constexpr int kFusedBarrierWords = 2;  // arrivals (zero between calls), generation

struct FusedArgs {
  RouterParams router;
  ActivationParams act;
  ExpertWeightsDev w;
  const uint16_t* x;    // [M, H] bf16
  const float* logits;  // [M, router.num_experts] fp32
  int* topk_ids;        // [M, K] out: the routing, written by block 0 (diagnostics, unique-expert counts)
  float* topk_weights;  // [M, K] out
  uint16_t* h;          // [M * K, P] bf16 workspace: stage 1's output by (token, slot) pair
  unsigned* barrier;    // [kFusedBarrierWords] the grid barrier (see above)
  uint16_t* out;        // [M, H] bf16
  unsigned long long* timeline;  // per block, kFusedTimelineEvents stamps (MOE_FUSED_TIMELINE=1), or null
  int M;
};

// Whether the one-launch path can take this call: bf16 (no activation quantisation) or fp8_block (fp8 1x128)
// weights without biases or a shared expert, a router of at most 256 experts, H a multiple of 512, rows the
// ring and a lane's registers can hold, M <= kFusedMaxTokens, and no forbid_fused_decode().
bool fused_supported(const ExpertWeightsDev& w, const RouterParams& r, AQuant q, int M, bool has_shared);
void launch_fused(const FusedArgs& a, cudaStream_t stream);
// For a process that may run two of these kernels at once on one GPU (several tensor-parallel ranks sharing
// a GPU): Auto and forced calls take the other paths from then on.
void forbid_fused_decode();
// The per-block timeline of the last launch when MOE_FUSED_TIMELINE=1 (moe bench prints it).
unsigned long long* fused_timeline_buffer();
void fused_timeline_report();

}  // namespace moe::cuda
