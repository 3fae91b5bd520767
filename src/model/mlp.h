#pragma once
// The feed-forward half of a decoder layer on the CPU: a dense SwiGLU MLP, or an MoE layer whose router
// logits are x · gateᵀ in fp32 and whose experts run through the fused MoE reference (moe::reference_moe).
#include <cstdint>

#include "model/weights.h"

namespace moe::model {

// out [M, H] = down(silu(gate(x)) * up(x)); h stays fp32 (the reference is an fp32 model), fp8 weights
// quantise their inputs per token per 1x128 group.
void dense_mlp(const DenseMlpWeights& w, const float* x, int64_t M, float* out);

// out [M, H] = the MoE layer on x: router logits = x · gateᵀ in fp32, routing over all experts (moe::route).
// Under tensor / expert parallelism w.experts is one rank's shard and out its partial sum: EP keeps only the
// slots of the rank's experts, and only EP rank 0 adds the shared expert. Quantised
// experts (fp8 / mxfp4) run through the fused MoE reference (moe::reference_experts, FORMATS.md section 4),
// which rounds the expert's h to bf16 before quantising it, as every engine kernel does. Unquantised (bf16)
// experts keep h in fp32, as the fp32 HF model does: the fused op's bf16 rounding of h alone moves the tiny
// test models' logits by ~9e-4 relative L2, nearly the whole 1e-3 budget of the model check.
void moe_mlp(const MoeLayerWeights& w, const float* x, int64_t M, float* out);

}  // namespace moe::model
