#pragma once
// Decoding 16 bytes of weights into floats, per format. 16 bytes hold 8 bf16, 16 fp8 e4m3 or 32 packed e2m1.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include "core/codecs.h"
#include "cuda/moe_params.h"

namespace moe::cuda {

template <WFormat F>
struct WeightTraits;

template <>
struct WeightTraits<WFormat::Bf16> {
  static constexpr int kElems = 8;
  static constexpr int kRows = 4;         // rows a lane group works on at once
  static constexpr int kElemBytesX2 = 4;  // 2 * bytes per element
};
template <>
struct WeightTraits<WFormat::Fp8Block> {
  static constexpr int kElems = 16;
  static constexpr int kRows = 4;
  static constexpr int kElemBytesX2 = 2;
};
template <>
struct WeightTraits<WFormat::Mxfp4> {
  static constexpr int kElems = 32;
  static constexpr int kRows = 2;
  static constexpr int kElemBytesX2 = 1;
};

// An L2 policy that marks lines evict-first: for weights, which a decode step reads once, so that their
// stream does not push out what is read again (activations, KV pages, scales, the kernels' code).
__device__ __forceinline__ uint64_t l2_evict_first_policy() {
  uint64_t policy;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
  return policy;
}

// Streaming 16-byte load: weights are read once per call, so keep them out of L1, and first out of L2.
// kL2Prefetch256: with L2's 256-byte prefetch size, so a miss brings the line beside it too (load_weights16).
template <bool kL2Prefetch256 = false>
__device__ __forceinline__ uint4 load_stream16(const void* p) {
  uint4 v;
  const uint64_t policy = l2_evict_first_policy();
  if constexpr (kL2Prefetch256)
    asm volatile("ld.global.nc.L1::no_allocate.L2::cache_hint.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p), "l"(policy));
  else
    asm volatile("ld.global.nc.L1::no_allocate.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p), "l"(policy));
  return v;
}

// The expert weights' loads (the swap-AB stages, the GEMV path): the 256-byte prefetch brings the row's next
// K step, which the block's next K warp reads at about the same time (session 30, H100: DeepSeek-V3 full fp8
// M=1 147.2 against 152.2 us). The measured read bandwidth keeps load_stream16's plain form.
__device__ __forceinline__ uint4 load_weights16(const void* p) {
  return load_stream16<true>(p);
}

template <WFormat F>
__device__ __forceinline__ void decode16(const uint4& raw, float* out);

template <>
__device__ __forceinline__ void decode16<WFormat::Bf16>(const uint4& raw, float* out) {
  const uint32_t w[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    out[2 * i] = __uint_as_float(w[i] << 16);
    out[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
  }
}

template <>
__device__ __forceinline__ void decode16<WFormat::Fp8Block>(const uint4& raw, float* out) {
  const uint32_t w[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    // e4m3 values are exact in fp16, so fp8 -> half2 -> float2 loses nothing.
    const __half2_raw lo =
        __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(w[i] & 0xffffu), __NV_E4M3);
    const __half2_raw hi =
        __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(w[i] >> 16), __NV_E4M3);
    const float2 a = __half22float2(__half2(lo));
    const float2 b = __half22float2(__half2(hi));
    out[4 * i] = a.x;
    out[4 * i + 1] = a.y;
    out[4 * i + 2] = b.x;
    out[4 * i + 3] = b.y;
  }
}

template <>
__device__ __forceinline__ void decode16<WFormat::Mxfp4>(const uint4& raw, float* out) {
  const uint32_t w[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
#pragma unroll
    for (int n = 0; n < 8; ++n) out[8 * i + n] = e2m1_to_f32(static_cast<uint8_t>((w[i] >> (4 * n)) & 0xfu));
  }
}

}  // namespace moe::cuda
