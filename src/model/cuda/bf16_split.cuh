#pragma once
// fp32 values as bf16 pairs for the tensor cores: one rounded term, or two (x = hi + lo, lo = bf16(x - hi):
// about 16 significant bits), which keeps attention scores and outputs within fp32 rounding of the CPU
// reference (attention_prefill_tc.cu measured why one term is not enough).
#include <cuda_bf16.h>

#include <cstdint>

namespace moe::model::gpu {

__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&v);
}

// (a, b) as two bf16 pairs: hi = the rounded values, lo = the rounded remainders.
__device__ __forceinline__ void split_bf16(float a, float b, uint32_t& hi, uint32_t& lo) {
  const __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
  const float2 hf = __bfloat1622float2(h);
  hi = *reinterpret_cast<const uint32_t*>(&h);
  lo = pack_bf16(a - hf.x, b - hf.y);
}

}  // namespace moe::model::gpu
