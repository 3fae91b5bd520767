#pragma once
// Plain structs passed by value to the fused MoE kernels. Shared by host launchers and device code.
#include <cstdint>

namespace moe::cuda {

enum class WFormat : int { Bf16 = 0, Fp8Block = 1, Mxfp4 = 2 };
enum class AQuant : int { None = 0, Fp8 = 1, Mxfp4 = 2 };
enum class Act : int { Silu = 0, SwigluOai = 1 };
enum class Router : int { SoftmaxTopk = 0, TopkSoftmax = 1, SigmoidGrouped = 2 };

struct RouterParams {
  Router kind;
  int num_experts, top_k, n_group, topk_group;  // num_experts: all E (the router's logits), on every rank
  bool renormalize;
  float routed_scaling_factor;
  const float* bias;  // [E] or null
  // Expert parallelism: this rank's experts are [expert_begin, expert_begin + experts_local); routing picks
  // over all E, then writes local ids, and -1 for a pick on another rank (its slot contributes zero here).
  int expert_begin, experts_local;
};

// The weights of one projection pair of one rank in the engine layout (layout/plan.h):
// w13 [E, 2P, H] (gate rows, then up rows), w2 [E, H, P], their scales and optional fp32 biases.
struct ExpertWeightsDev {
  WFormat format;
  int num_experts;
  int hidden;        // H
  int inter;         // P: the padded per-rank intermediate
  int phase;         // fp8: the rank's offset into the checkpoint's 128-block grid along the intermediate dim
  int scale_blocks;  // fp8: scale rows per half of w13 / scale cols of w2
  const uint8_t* w13;
  const uint8_t* w2;
  const void* w13_scale;  // fp8: f32 [E, 2*SB, ceil(H/128)]; mxfp4: u8 [E, 2P, H/32]
  const void* w2_scale;   // fp8: f32 [E, ceil(H/128), SB];  mxfp4: u8 [E, H, P/32]
  const float* w13_bias;  // [E, 2P] or null
  const float* w2_bias;   // [E, H] or null
};

// Which (token, slot) pairs each expert serves. Pair p belongs to token p / pair_div.
struct GroupingDev {
  const int* offsets;       // [E + 1]
  const int* sorted_pairs;  // pairs grouped by expert
  const int* active;        // expert ids with at least one pair, [num_active]
  const int* num_active;    // device scalar
  int pair_div;
  // [E + 1]: active slot a's pairs are sorted_pairs[slot_begin[a], slot_begin[a + 1]) (the active experts are
  // in id order, so their ranges are consecutive), so a block finds its expert and its pairs in one round
  // trip instead of two; the total past the active slots.
  const int* slot_begin;
};

struct ActivationParams {
  Act act;
  AQuant quant;
  float swiglu_alpha, swiglu_limit;
};

}  // namespace moe::cuda
