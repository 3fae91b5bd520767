#pragma once
// The arithmetic of the CUDA-core expert GEMV, shared by the grouped GEMV (expert_gemv.cu) and the fused
// decode kernels (expert_decode.cu) so that both compute every dot product with the same operations in the
// same order: a row's K is split over LPR lanes, lane l taking 16-byte chunks l, l + LPR, ...; each chunk's
// products are summed in element order, scaled by the chunk's weight scale and added to the lane's sum; a
// fixed shuffle tree then adds the LPR lane sums. Same LPR, same bits, whichever kernel runs it.
#include <cuda_runtime.h>

#include "core/codecs.h"
#include "cuda/kernels/activation.cuh"
#include "cuda/kernels/block_reduce.cuh"
#include "cuda/kernels/weight_decode.cuh"
#include "cuda/moe_params.h"

namespace moe::cuda {

// Where a stage-1 or stage-2 weight row lives, and its scale row.
struct RowRef {
  const uint8_t* w = nullptr;
  const void* scale = nullptr;
  bool valid = false;
};

// Row r of a tile of `tile_rows` weight rows starting at output row (stage 2) or intermediate column
// (stage 1, gate rows then up rows of the same columns) tile_row0, of expert e.
template <WFormat F, int STAGE>
__device__ __forceinline__ RowRef row_ref(const ExpertWeightsDev& w, int e, int tile_row0, int r,
                                          int tile_rows) {
  RowRef ref;
  constexpr int kX2 = WeightTraits<F>::kElemBytesX2;
  const int H = w.hidden, P = w.inter;
  if (STAGE == 1) {
    const int half_rows = tile_rows / 2;
    const int half = r / half_rows, n = tile_row0 + r % half_rows;
    if (n >= P) return ref;
    const size_t row_bytes = static_cast<size_t>(H) * kX2 / 2;
    const size_t srow = static_cast<size_t>(half) * P + n;
    ref.w = w.w13 + (static_cast<size_t>(e) * 2 * P + srow) * row_bytes;
    if (F == WFormat::Fp8Block) {
      const int hb = (H + 127) / 128;
      ref.scale =
          static_cast<const float*>(w.w13_scale) +
          (static_cast<size_t>(e) * 2 * w.scale_blocks + half * w.scale_blocks + (n + w.phase) / 128) * hb;
    } else if (F == WFormat::Mxfp4) {
      ref.scale =
          static_cast<const uint8_t*>(w.w13_scale) + (static_cast<size_t>(e) * 2 * P + srow) * (H / 32);
    }
  } else {
    const int h = tile_row0 + r;
    if (h >= H) return ref;
    const size_t row_bytes = static_cast<size_t>(P) * kX2 / 2;
    ref.w = w.w2 + (static_cast<size_t>(e) * H + h) * row_bytes;
    if (F == WFormat::Fp8Block) {
      ref.scale = static_cast<const float*>(w.w2_scale) +
                  (static_cast<size_t>(e) * ((H + 127) / 128) + h / 128) * w.scale_blocks;
    } else if (F == WFormat::Mxfp4) {
      ref.scale = static_cast<const uint8_t*>(w.w2_scale) + (static_cast<size_t>(e) * H + h) * (P / 32);
    }
  }
  ref.valid = true;
  return ref;
}

// Scale of the chunk starting at element k0 of a row (its K phase included).
template <WFormat F>
__device__ __forceinline__ float chunk_scale(const void* scale, int k0, int k_phase) {
  if (F == WFormat::Fp8Block) return static_cast<const float*>(scale)[(k0 + k_phase) / 128];
  if (F == WFormat::Mxfp4) return e8m0_to_f32(static_cast<const uint8_t*>(scale)[k0 / 32]);
  return 1.0f;
}

// R weight rows at one K chunk: the raw bytes and the chunk's scales, loaded ahead of use.
template <WFormat F, int R>
struct Chunk {
  uint4 raw[R];
  float scale[R];
};

// Chunk j of each row; rows that do not exist and chunks past the row load zeros.
template <WFormat F, int R>
__device__ __forceinline__ void load_chunk(Chunk<F, R>& c, const RowRef* rows, int j, int chunks,
                                           int k_phase) {
  using Tr = WeightTraits<F>;
  const int k0 = j * Tr::kElems;
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const bool ok = rows[r].valid && j < chunks;
    c.raw[r] = ok ? load_weights16(rows[r].w + static_cast<size_t>(k0) * Tr::kElemBytesX2 / 2)
                  : make_uint4(0, 0, 0, 0);
    c.scale[r] = ok ? chunk_scale<F>(rows[r].scale, k0, k_phase) : 0.0f;
  }
}

// acc[t][r] += scale_r * (chunk of row r) . act[t][k0, k0 + kElems) for the first nt tokens; act rows are
// act_stride floats apart.
template <WFormat F, int R, int T>
__device__ __forceinline__ void accumulate_chunk(const Chunk<F, R>& c, const float* act, int act_stride,
                                                 int k0, int nt, float (&acc)[T][R]) {
  constexpr int E = WeightTraits<F>::kElems;
  float wv[R][E];
#pragma unroll
  for (int r = 0; r < R; ++r) decode16<F>(c.raw[r], wv[r]);
#pragma unroll
  for (int t = 0; t < T; ++t) {
    if (t >= nt) break;
    const float4* av4 = reinterpret_cast<const float4*>(act + t * act_stride + k0);
    float part[R];
#pragma unroll
    for (int r = 0; r < R; ++r) part[r] = 0.0f;
#pragma unroll
    for (int q = 0; q < E / 4; ++q) {
      const float4 av = av4[q];
#pragma unroll
      for (int r = 0; r < R; ++r) {
        part[r] = fmaf(wv[r][4 * q], av.x, part[r]);
        part[r] = fmaf(wv[r][4 * q + 1], av.y, part[r]);
        part[r] = fmaf(wv[r][4 * q + 2], av.z, part[r]);
        part[r] = fmaf(wv[r][4 * q + 3], av.w, part[r]);
      }
    }
#pragma unroll
    for (int r = 0; r < R; ++r) acc[t][r] = fmaf(part[r], c.scale[r], acc[t][r]);
  }
}

// The LPR lane sums of one value, added by a fixed shuffle tree (all 32 lanes call it).
__device__ __forceinline__ float lane_group_sum(float v, int lpr) {
  for (int off = lpr / 2; off > 0; off /= 2) v += __shfl_xor_sync(kFullMask, v, off);
  return v;
}

// Stage 1's output for a pass of nt tokens: res [nt][rows_per_tile] holds the tile's gate rows, then its up
// rows; h[pair][col] = activation(gate + bias, up + bias) in bf16. pair_of(t) is the pass's t-th pair.
template <typename PairOf>
__device__ __forceinline__ void write_stage1_h(const ExpertWeightsDev& w, const ActivationParams& act,
                                               int expert, const float* res, int rows_per_tile, int tile_row0,
                                               int nt, PairOf pair_of, uint16_t* h) {
  const int half = rows_per_tile / 2, P = w.inter;
  for (int i = threadIdx.x; i < nt * half; i += blockDim.x) {
    const int t = i / half, c = i % half, col = tile_row0 + c;
    if (col >= P) continue;
    float g = res[t * rows_per_tile + c], u = res[t * rows_per_tile + half + c];
    if (w.w13_bias) {
      g += w.w13_bias[static_cast<size_t>(expert) * 2 * P + col];
      u += w.w13_bias[static_cast<size_t>(expert) * 2 * P + P + col];
    }
    h[static_cast<size_t>(pair_of(t)) * P + col] = f32_to_bf16(gated_activation(act, g, u));
  }
}

// Stage 2's output for a pass: y[pair][row] = res + bias, fp32 (the combine weights and sums the slots).
template <typename PairOf>
__device__ __forceinline__ void write_stage2_y(const ExpertWeightsDev& w, int expert, const float* res,
                                               int rows_per_tile, int tile_row0, int nt, PairOf pair_of,
                                               float* y) {
  const int H = w.hidden;
  for (int i = threadIdx.x; i < nt * rows_per_tile; i += blockDim.x) {
    const int t = i / rows_per_tile, r = i % rows_per_tile, hrow = tile_row0 + r;
    if (hrow >= H) continue;
    float v = res[t * rows_per_tile + r];
    if (w.w2_bias) v += w.w2_bias[static_cast<size_t>(expert) * H + hrow];
    y[static_cast<size_t>(pair_of(t)) * H + hrow] = v;
  }
}

}  // namespace moe::cuda
