#pragma once
// The fused decode path of the MoE (a few tokens per call): two launches instead of prologue, stage 1,
// stage 2 and combine. Each block routes the call's tokens itself and works on one expert x one tile of
// weight rows, as the GEMV does; stage 2's last block per tile of output rows writes the weighted sum
// (expert_decode.cu). Every dot product uses the GEMV's lane split and operation order (gemv_rows.cuh), and
// the combine adds the slots in the combine kernel's order, so a token's output has the same bits on this
// path and on the GEMV path: batch invariance holds across the switch between them.
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/moe_params.h"

namespace moe::cuda {

constexpr int kDecodeMaxTokens = 8;

struct DecodeArgs {
  RouterParams router;
  ActivationParams act;
  const float* logits;  // [M, E]
  const uint16_t* x;    // [M, H] bf16
  ExpertWeightsDev experts;
  ExpertWeightsDev shared;  // used when has_shared
  bool has_shared;
  const float* shared_gate_weight;  // [H] or null (gate 1)
  // Lanes per row of [routed, shared][stage 1, stage 2]: the GEMV's choice (gemv_lanes_per_row).
  int lanes[2][2];
  uint16_t* h;         // [M * top_k, P] bf16 workspace
  uint16_t* shared_h;  // [M, Ps] bf16 workspace
  float* y;            // [M * top_k, H] fp32 workspace: stage 2's per-pair outputs
  float* shared_y;     // [M, H]
  float* shared_gate;  // [M]
  int* counters;       // [num_counters] workspace: blocks done per combine tile (zeroed by stage 1)
  int num_counters;
  int combine_rows;     // set by launch_decode
  uint16_t* out;        // [M, H] bf16
  int* topk_ids;        // [M, top_k] out: the routing, as the prologue writes it
  float* topk_weights;  // [M, top_k]
};

// Whether the decode path takes this call (token count, router and shared-memory limits).
bool decode_supported(const DecodeArgs& a, int M);
void launch_decode(const DecodeArgs& a, int M, cudaStream_t stream);

}  // namespace moe::cuda
