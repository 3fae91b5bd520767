#pragma once
// The fused decode path of the MoE (a few tokens per call): after the GEMV path's one-block prologue
// (routing, grouping), two launches instead of stage 1, stage 2 and combine. Each block works on one expert x
// one tile of weight rows as the GEMV does; stage 2's last block per tile of output rows writes the weighted
// sum (expert_decode.cu). Every dot product uses the GEMV's lane split and operation order (gemv_rows.cuh),
// and the combine adds the slots in the combine kernel's order, so a token's output has the same bits on
// this path and on the GEMV path: batch invariance holds across the switch between them.
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/moe_params.h"

namespace moe::cuda {

constexpr int kDecodeMaxTokens = 8;

struct DecodeArgs {
  RouterParams router;
  ActivationParams act;
  const uint16_t* x;  // [M, H] bf16
  ExpertWeightsDev experts;
  ExpertWeightsDev shared;  // used when has_shared
  bool has_shared;
  // Lanes per row of [routed, shared][stage 1, stage 2]: the GEMV's choice (gemv_lanes_per_row).
  int lanes[2][2];
  uint16_t* h;               // [M * top_k, P] bf16 workspace
  uint16_t* shared_h;        // [M, Ps] bf16 workspace
  float* y;                  // [M * top_k, H] fp32 workspace: stage 2's per-pair outputs
  float* shared_y;           // [M, H]
  const float* shared_gate;  // [M] the prologue's shared-expert gates
  int* counters;             // [num_counters] workspace: blocks done per combine tile (zeroed by stage 1)
  int num_counters;
  int combine_rows;           // set by launch_decode
  uint16_t* out;              // [M, H] bf16
  GroupingDev grouping;       // the prologue's pairs by expert
  const int* topk_ids;        // [M, top_k] the prologue's routing
  const float* topk_weights;  // [M, top_k]
};

// Whether the decode path takes this call (token count, router and shared-memory limits).
bool decode_supported(const DecodeArgs& a, int M);
void launch_decode(const DecodeArgs& a, int M, cudaStream_t stream);
// Stage 2 alone, after the GEMV's stage 1 (which writes the same h, with the same bits): stage 2 and the
// combine in one launch. The counters must be zero already (the one-block prologue zeroes them).
void launch_decode_stage2(const DecodeArgs& a, int M, cudaStream_t stream);

}  // namespace moe::cuda
