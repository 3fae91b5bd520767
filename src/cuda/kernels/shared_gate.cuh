#pragma once
// The shared expert's gate of one token, sigmoid(shared_gate . x), computed by one warp in a fixed order
// (lane-strided products, then a shuffle tree), so the prologue and the fused decode kernels agree bitwise.
#include <cuda_runtime.h>

#include "core/codecs.h"
#include "cuda/kernels/block_reduce.cuh"

namespace moe::cuda {

// 1 when there is no gate weight (DeepSeek's shared_experts). Every lane gets the value.
__device__ __forceinline__ float warp_shared_gate_value(const uint16_t* x, const float* gate_weight,
                                                        int hidden) {
  if (!gate_weight) return 1.0f;
  const int lane = threadIdx.x % 32;
  float s = 0.0f;
  for (int h = lane; h < hidden; h += 32) s = fmaf(bf16_to_f32(x[h]), gate_weight[h], s);
  s = warp_sum(s);
  return 1.0f / (1.0f + expf(-s));
}

}  // namespace moe::cuda
