#pragma once
// The gated activation of stage 1 (FORMATS.md section 4), shared by the kernels that finish stage 1.
#include <cuda_runtime.h>

#include "cuda/moe_params.h"

namespace moe::cuda {

__device__ __forceinline__ float gated_activation(const ActivationParams& p, float g, float u) {
  if (p.act == Act::Silu) return g / (1.0f + expf(-g)) * u;
  g = fminf(g, p.swiglu_limit);
  u = fminf(fmaxf(u, -p.swiglu_limit), p.swiglu_limit);
  return g / (1.0f + expf(-p.swiglu_alpha * g)) * (u + 1.0f);
}

}  // namespace moe::cuda
