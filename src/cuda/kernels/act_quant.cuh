#pragma once
// Per-token dynamic activation quantisation, exactly as FORMATS.md section 3 (and the CPU reference) define
// it. A warp quantises one group of a row in place (values are replaced by their dequantised form); groups
// are handed out to warps by the callers, so every warp of a block works in parallel.
#include <cuda_runtime.h>

#include "core/codecs.h"
#include "cuda/kernels/block_reduce.cuh"
#include "cuda/moe_params.h"

namespace moe::cuda {

// Group g of a row of n values: fp8 groups are 128 long and start `phase` into the checkpoint's grid (so the
// first is 128 - phase long when phase > 0); mxfp4 groups are 32 long; `none` uses 128-long spans (plain
// copies). Host code uses it too, to size grids by the group count.
struct GroupGrid {
  int n, first, len;
  __host__ __device__ __forceinline__ GroupGrid(AQuant q, int n_, int phase) : n(n_) {
    len = q == AQuant::Mxfp4 ? 32 : 128;
    first = (q == AQuant::Fp8 && phase > 0) ? min(n_, 128 - phase) : min(n_, len);
  }
  __host__ __device__ __forceinline__ int count() const {
    return n <= first ? 1 : 1 + (n - first + len - 1) / len;
  }
  __host__ __device__ __forceinline__ int begin(int g) const { return g == 0 ? 0 : first + (g - 1) * len; }
  __host__ __device__ __forceinline__ int end(int g) const {
    return g == 0 ? first : min(n, first + g * len);
  }
};

// FORMATS.md section 3, fp8_1x128: a group's scale from its amax, and one value's e4m3 code under that scale.
__device__ __forceinline__ float fp8_group_scale(float amax) {
  return fmaxf(amax, 1e-10f) / 448.0f;
}
__device__ __forceinline__ uint8_t fp8_code(float v, float s) {
  return f32_to_fp8e4m3(fminf(fmaxf(__fdiv_rn(v, s), -448.0f), 448.0f));
}
// The codes of a pair of bf16 values (bits: lo in the low half) under scale s, lo's code in the low byte.
__device__ __forceinline__ uint16_t fp8_code_pair(uint32_t bits, float s) {
  const uint32_t lo = fp8_code(bf16_to_f32(static_cast<uint16_t>(bits & 0xffffu)), s);
  const uint32_t hi = fp8_code(bf16_to_f32(static_cast<uint16_t>(bits >> 16)), s);
  return static_cast<uint16_t>(lo | hi << 8);
}

// Quantises row[g0, g1) in place (g1 - g0 <= 128). Called by all 32 lanes of one warp.
__device__ __forceinline__ void warp_quantize_group(AQuant q, float* row, int g0, int g1) {
  const int lane = threadIdx.x % 32;
  if (q == AQuant::None) return;
  float amax = 0.0f;
  for (int i = g0 + lane; i < g1; i += 32) amax = fmaxf(amax, fabsf(row[i]));
  amax = warp_max(amax);
  if (q == AQuant::Fp8) {
    const float s = fp8_group_scale(amax);
    for (int i = g0 + lane; i < g1; i += 32) row[i] = fp8e4m3_to_f32(fp8_code(row[i], s)) * s;
  } else {
    const float scale = e8m0_to_f32(mx_scale_code(amax));
    for (int i = g0 + lane; i < g1; i += 32) {
      const float c = fminf(fmaxf(__fdiv_rn(row[i], scale), -6.0f), 6.0f);
      row[i] = e2m1_to_f32(f32_to_e2m1(c)) * scale;
    }
  }
}

// Widens bf16 src[g0, g1) into dst and quantises it (one warp).
__device__ __forceinline__ void warp_load_quantize_group(AQuant q, const uint16_t* src, float* dst, int g0,
                                                         int g1) {
  const int lane = threadIdx.x % 32;
  for (int i = g0 + lane; i < g1; i += 32) dst[i] = bf16_to_f32(src[i]);
  __syncwarp();
  warp_quantize_group(q, dst, g0, g1);
}

// This lane's four bf16 values of group [g0, g1) (g1 - g0 <= 128; g0, g1 multiples of 4): src[k..k+3] with
// k = g0 + 4 lane, as raw bits; zeros for a lane past the group's end.
__device__ __forceinline__ uint2 lane_group_bits(const uint16_t* src, int g0, int g1) {
  const int k = g0 + static_cast<int>(threadIdx.x % 32) * 4;
  return k < g1 ? *reinterpret_cast<const uint2*>(src + k) : make_uint2(0u, 0u);
}

// The group's e4m3 codes from every lane's lane_group_bits: to dst[k..k+3] for the lanes inside the group;
// returns the group's scale to every lane. Called by all 32 lanes of one warp.
__device__ __forceinline__ float warp_fp8_codes_from_bits(uint2 raw, int g0, int g1, uint8_t* dst) {
  const int k = g0 + static_cast<int>(threadIdx.x % 32) * 4;
  const float v[4] = {
      bf16_to_f32(static_cast<uint16_t>(raw.x & 0xffffu)), bf16_to_f32(static_cast<uint16_t>(raw.x >> 16)),
      bf16_to_f32(static_cast<uint16_t>(raw.y & 0xffffu)), bf16_to_f32(static_cast<uint16_t>(raw.y >> 16))};
  float amax = fmaxf(fmaxf(fabsf(v[0]), fabsf(v[1])), fmaxf(fabsf(v[2]), fabsf(v[3])));
  amax = warp_max(amax);
  const float s = fp8_group_scale(amax);
  if (k < g1) {
    uint32_t packed = 0;
#pragma unroll
    for (int j = 0; j < 4; ++j) packed |= static_cast<uint32_t>(fp8_code(v[j], s)) << (8 * j);
    *reinterpret_cast<uint32_t*>(dst + k) = packed;
  }
  return s;
}

// One warp quantises the bf16 values src[g0, g1) of one group (g1 - g0 <= 128; g0, g1 multiples of 4):
// e4m3 codes to dst[g0, g1); returns the group's scale to every lane.
__device__ __forceinline__ float warp_quantize_fp8_codes(const uint16_t* src, int g0, int g1, uint8_t* dst) {
  return warp_fp8_codes_from_bits(lane_group_bits(src, g0, g1), g0, g1, dst);
}

// Loads of 16 bytes per lane that warp_fp8_row has in flight together: two groups each, so 16 groups (a
// 2048-wide row) before the first reduction.
constexpr int kRowLoadBatch = 8;

// One warp quantises a whole row: the bf16 values src[0, n) in the 128 grid that starts `phase` before the
// row (FORMATS.md section 3; groups = ceil((n + phase) / 128); n and phase multiples of 8, src and dst
// 16- and 8-byte aligned): e4m3 codes to dst[0, n), scale g to scales[g]. Half-warp h of load j takes group
// 2j + h, 8 values per lane, so a group's amax takes 4 shuffles (the warp-per-group form took 5 for 4 values
// per lane, behind one 256-byte load) and every load of the row is issued before the first reduction.
// The same codes and scales as warp_quantize_fp8_codes: the amax is exact, then fp8_group_scale, fp8_code.
__device__ __forceinline__ void warp_fp8_row(const uint16_t* src, int n, int phase, int groups, uint8_t* dst,
                                             float* scales) {
  const int lane = static_cast<int>(threadIdx.x % 32), half = lane / 16, sub = lane % 16;
  for (int g0 = 0; g0 < groups; g0 += 2 * kRowLoadBatch) {
    uint4 raw[kRowLoadBatch];
#pragma unroll
    for (int j = 0; j < kRowLoadBatch; ++j) {
      const int g = g0 + 2 * j + half, k = g * 128 - phase + 8 * sub;
      raw[j] =
          g < groups && k >= 0 && k < n ? *reinterpret_cast<const uint4*>(src + k) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int j = 0; j < kRowLoadBatch; ++j) {
      if (g0 + 2 * j >= groups) break;  // the same for every lane: the shuffles below see the whole warp
      const int g = g0 + 2 * j + half, k = g * 128 - phase + 8 * sub;
      const uint32_t w[4] = {raw[j].x, raw[j].y, raw[j].z, raw[j].w};
      float v[8];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        v[2 * i] = bf16_to_f32(static_cast<uint16_t>(w[i] & 0xffffu));
        v[2 * i + 1] = bf16_to_f32(static_cast<uint16_t>(w[i] >> 16));
      }
      float amax = 0.0f;
#pragma unroll
      for (int i = 0; i < 8; ++i) amax = fmaxf(amax, fabsf(v[i]));
#pragma unroll
      for (int m = 8; m >= 1; m /= 2) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, m));
      const float s = fp8_group_scale(amax);
      if (g < groups && k >= 0 && k < n) {
        uint32_t lo = 0, hi = 0;
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          lo |= static_cast<uint32_t>(fp8_code(v[i], s)) << (8 * i);
          hi |= static_cast<uint32_t>(fp8_code(v[4 + i], s)) << (8 * i);
        }
        *reinterpret_cast<uint2*>(dst + k) = make_uint2(lo, hi);
      }
      if (sub == 0 && g < groups) scales[g] = s;
    }
  }
}

}  // namespace moe::cuda
