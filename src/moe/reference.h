#pragma once
// The fp32 CPU reference of the fused MoE (FORMATS.md section 4): the oracle every other backend is checked
// against. Simple and literal; threaded over experts; deterministic (fixed summation order, no atomics).
#include <cstdint>
#include <vector>

#include "moe/expert_weights.h"
#include "moe/moe_config.h"

namespace moe {

struct Routing {
  int top_k = 0;
  std::vector<int32_t> ids;    // [M, top_k], -1 = no expert (not local to this rank)
  std::vector<float> weights;  // [M, top_k]
};

Routing route_tokens(const MoeConfig& cfg, const MoeWeights& w, const float* router_logits, int64_t M);

struct ExpertOptions {
  bool include_shared = true;
};

// out [M, H] = sum over chosen experts of weight * expert(x) (+ shared expert). x holds bf16 values.
void reference_experts(const MoeConfig& cfg, const MoeWeights& w, const float* x, int64_t M,
                       const Routing& routing, float* out, const ExpertOptions& opts = {});

// Routing + experts.
void reference_moe(const MoeConfig& cfg, const MoeWeights& w, const float* x, const float* router_logits,
                   int64_t M, float* out, Routing* routing_out = nullptr);

// Helpers shared with tests: one expert MLP on one token, given dequantised matrices.
float activation_fn(const MoeConfig& cfg, float gate, float up);

}  // namespace moe
