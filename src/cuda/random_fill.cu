#include "cuda/random_fill.h"

#include "cuda/cuda_check.h"

namespace moe::cuda {
namespace {

__device__ __forceinline__ uint32_t hash32(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return static_cast<uint32_t>(x);
}

__device__ __forceinline__ float uniform(uint64_t i, uint64_t seed) {
  return (hash32(i * 0x9e3779b97f4a7c15ull + seed) >> 8) * (1.0f / 16777216.0f);
}

__global__ void fill_kernel(uint8_t* dst, size_t bytes, RandomKind kind, uint64_t seed) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;; i += stride) {
    switch (kind) {
      case RandomKind::Bf16: {
        if (2 * i + 2 > bytes) return;
        const float v = (uniform(i, seed) + uniform(i, seed + 7) - 1.0f) * 0.1f;
        reinterpret_cast<uint16_t*>(dst)[i] = static_cast<uint16_t>(__float_as_uint(v) >> 16);
        break;
      }
      case RandomKind::Fp8: {
        if (i >= bytes) return;
        uint8_t c = static_cast<uint8_t>(hash32(i + seed * 0x100000001b3ull));
        if ((c & 0x7f) == 0x7f) c ^= 1;  // never NaN
        dst[i] = c;
        break;
      }
      case RandomKind::Bytes:
        if (i >= bytes) return;
        dst[i] = static_cast<uint8_t>(hash32(i + seed * 0x100000001b3ull));
        break;
      case RandomKind::E8m0Scale:
        if (i >= bytes) return;
        dst[i] = static_cast<uint8_t>(118 + hash32(i + seed) % 5);
        break;
      case RandomKind::Fp32Scale:
      case RandomKind::Fp32Small:
      case RandomKind::Fp32Logit: {
        if (4 * i >= bytes) return;
        const float u = uniform(i, seed);
        const float v = kind == RandomKind::Fp32Scale   ? 1e-4f * (1.0f + u)
                        : kind == RandomKind::Fp32Small ? (u - 0.5f) * 0.1f
                                                        : (u - 0.5f) * 8.0f;
        reinterpret_cast<float*>(dst)[i] = v;
        break;
      }
    }
  }
}

}  // namespace

void fill_random(void* dst, size_t bytes, RandomKind kind, uint64_t seed) {
  if (!bytes) return;
  fill_kernel<<<1024, 256>>>(static_cast<uint8_t*>(dst), bytes, kind, seed);
  MOE_CUDA_CHECK_LAUNCH();
}

}  // namespace moe::cuda
