#pragma once
// The gated activation of stage 1 (FORMATS.md section 4), shared by the kernels that finish stage 1.
#include <cuda_runtime.h>

#include "cuda/moe_params.h"

namespace moe::cuda {

// The sigmoid by the hardware's exponential and a reciprocal-based division (__expf, __fdividef: a few ulp of
// fp32, far below the bf16 rounding every caller applies next) instead of expf and an IEEE division, which
// took most of the grouped GEMM's stage-1 epilogue (about 40 instructions a value, 32 values per thread per
// tile). Every kernel that finishes stage 1 takes it from here, so the paths keep giving the same bits. For g
// far below zero 1 + e^-g overflows to infinity and the quotient is -0, as the IEEE division gives.
template <Act kAct>
__device__ __forceinline__ float gated_activation_as(const ActivationParams& p, float g, float u) {
  if constexpr (kAct == Act::Silu) {
    return __fdividef(g, 1.0f + __expf(-g)) * u;
  } else {
    g = fminf(g, p.swiglu_limit);
    u = fminf(fmaxf(u, -p.swiglu_limit), p.swiglu_limit);
    return __fdividef(g, 1.0f + __expf(-p.swiglu_alpha * g)) * (u + 1.0f);
  }
}

// The kind chosen at run time (gated_activation_as where the caller knows it).
__device__ __forceinline__ float gated_activation(const ActivationParams& p, float g, float u) {
  return p.act == Act::Silu ? gated_activation_as<Act::Silu>(p, g, u)
                            : gated_activation_as<Act::SwigluOai>(p, g, u);
}

}  // namespace moe::cuda
