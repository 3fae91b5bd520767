#pragma once
// The feed-forward half of a decoder layer on the CPU: a dense SwiGLU MLP, or an MoE layer whose router
// logits are x · gateᵀ in fp32 and whose experts run through the fused MoE reference (moe::reference_moe).
#include <cstdint>

#include "model/weights.h"

namespace moe::model {

// out [M, H] = down(silu(gate(x)) * up(x)); h stays fp32 (the reference is an fp32 model), fp8 weights
// quantise their inputs per token per 1x128 group.
void dense_mlp(const DenseMlpWeights& w, const float* x, int64_t M, float* out);

// out [M, H] = the fused MoE of FORMATS.md section 4 on x. Note that the fused op rounds the expert's SiLU
// output h to bf16 before the down projection (what every engine kernel does); an fp32 HF model keeps it in
// fp32, which moves the logits of the tiny test models by ~1e-4 relative L2.
void moe_mlp(const MoeLayerWeights& w, const float* x, int64_t M, float* out);

}  // namespace moe::model
