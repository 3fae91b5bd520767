#pragma once
// One 16-byte piece of the weighted combine: a token's slots, in slot order, fmaf(weight, y, acc) from zero,
// skipping slots with no local expert (id < 0). The loads of several slots are issued before the sums, so a
// token's combine is not a chain of latencies. combine.cu and stage 2's own combine (expert_swap_ab.cu) both
// use it, so both give the same bits.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "core/codecs.h"

namespace moe::cuda {

// The values of one 16-byte piece of y: four fp32, or eight bf16 widened.
template <bool kBf16>
struct YPiece {
  static constexpr int kCols = kBf16 ? 8 : 4;
  __device__ static void widen(const uint4& v, float (&f)[kCols]) {
    const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      if constexpr (kBf16) {
        f[2 * i] = __uint_as_float(w[i] << 16);
        f[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
      } else {
        f[i] = __uint_as_float(w[i]);
      }
    }
  }
};

// Adds piece `piece` of the token's K slots into acc. y_token: the token's first slot row of y, rows of
// `pieces` pieces; ids and w: the token's K slot ids and weights. Loads go through L2 (.cg): in stage 2's own
// combine other blocks of the same grid wrote y, and this SM's L1 may hold an older copy.
template <bool kBf16>
__device__ __forceinline__ void add_slot_pieces(const uint4* y_token, const int* ids, const float* w, int K,
                                                int pieces, int piece, float (&acc)[YPiece<kBf16>::kCols]) {
  constexpr int kSlotsInFlight = 8;
  for (int k0 = 0; k0 < K; k0 += kSlotsInFlight) {
    uint4 v[kSlotsInFlight];
#pragma unroll
    for (int i = 0; i < kSlotsInFlight; ++i) {
      const int k = k0 + i;
      v[i] = (k < K && ids[k] >= 0) ? __ldcg(y_token + static_cast<size_t>(k) * pieces + piece)
                                    : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int i = 0; i < kSlotsInFlight; ++i) {
      const int k = k0 + i;
      if (k >= K || ids[k] < 0) continue;
      float f[YPiece<kBf16>::kCols];
      YPiece<kBf16>::widen(v[i], f);
#pragma unroll
      for (int j = 0; j < YPiece<kBf16>::kCols; ++j) acc[j] = fmaf(w[k], f[j], acc[j]);
    }
  }
}

// Stores kCols accumulated values as bf16 (16 or 8 bytes, aligned).
template <int kCols>
__device__ __forceinline__ void store_bf16_piece(uint16_t* out, const float (&acc)[kCols]) {
  uint32_t packed[kCols / 2];
#pragma unroll
  for (int i = 0; i < kCols / 2; ++i) packed[i] = f32x2_to_bf16x2(acc[2 * i], acc[2 * i + 1]);
  if constexpr (kCols == 8)
    *reinterpret_cast<uint4*>(out) = make_uint4(packed[0], packed[1], packed[2], packed[3]);
  else
    *reinterpret_cast<uint2*>(out) = make_uint2(packed[0], packed[1]);
}

}  // namespace moe::cuda
