#pragma once
// The wgmma grouped GEMM's tile outputs through a warp's rows in shared memory (WarpRowStage): each warp
// writes the pieces its fragment holds of its 16 tile rows (rows gid and gid + 8 of its 16; the wgmma
// fragment, wgmma_sm90.cuh), then stores whole 16-byte chunks of them. The same values as store_h_row,
// store_y_row and store_h_codes: only the way they reach global memory differs.
#include "cuda/kernels/act_quant.cuh"
#include "cuda/kernels/expert_mma_tile.cuh"
#include "cuda/kernels/warp_row_stage.cuh"

namespace moe::cuda {

// Stage 1's bf16 outputs of one column block (64 outputs from n0: 128 bytes a row) to h's rows `rows`.
// h's rows must start 16-byte aligned and hold whole 8-output chunks (P % 8 == 0). Outputs past P are staged
// too (kSiluNoBias reads nothing for them; they are never stored), so the common case has no test per pair.
template <bool kSiluNoBias, int kRowBytes>
__device__ __forceinline__ void stage_h_tile(const MmaKernelArgs& a, int e, int n0, const int (&rows)[2],
                                             int lane, const WarpRowStage<kRowBytes>& st,
                                             const float (&acc)[64]) {
  const int P = a.w.inter, tig = lane % 4, m = lane / 8;
  st.begin();
#pragma unroll
  for (int jj = 0; jj < 4; ++jj) {
    // Matrices (row half h, 8-output chunk 2 jj + jl) for m = h + 2 jl: the four pairs of this lane.
    uint32_t r[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int h = i % 2, jl = i / 2, j = 4 * jj + jl, n = n0 + 16 * jj + 8 * jl + 2 * tig;
      r[i] = kSiluNoBias || n < P ? h_pair_of<kSiluNoBias>(a, e, n, j, h, acc) : 0u;
    }
    st.store_matrices(st.at(lane % 8 + 8 * (m % 2), 16 * (2 * jj + m / 2)), r);
  }
  st.copy_out(lane, rows, reinterpret_cast<uint8_t*>(a.h), static_cast<size_t>(P) * 2, 2 * n0, 0,
              min(WarpRowStage<kRowBytes>::kChunks, (P - n0) / 8));
}

// Stage 2's bf16 outputs of one column block (128 outputs from n0: 256 bytes a row) to y_bf16's rows `rows`.
// y's rows must start 16-byte aligned and hold whole 8-output chunks (H % 8 == 0). Outputs past H are staged
// too (never stored; their bias is not read).
template <bool kBias, int kRowBytes>
__device__ __forceinline__ void stage_y_tile(const MmaKernelArgs& a, const float* bias, int n0,
                                             const int (&rows)[2], int lane,
                                             const WarpRowStage<kRowBytes>& st, const float (&acc)[64]) {
  const int H = a.w.hidden, tig = lane % 4, m = lane / 8;
  st.begin();
#pragma unroll
  for (int jp = 0; jp < 8; ++jp) {
    // Matrices (row half h, 8-output chunk 2 jp + jl) for m = h + 2 jl.
    uint32_t r[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int h = i % 2, j = 2 * jp + i / 2, n = n0 + 8 * j + 2 * tig;
      const float2 v = y_pair_of<kBias>(kBias && n < H ? bias : nullptr, n, j, h, acc);
      r[i] = f32x2_to_bf16x2(v.x, v.y);
    }
    st.store_matrices(st.at(lane % 8 + 8 * (m % 2), 16 * (2 * jp + m / 2)), r);
  }
  st.copy_out(lane, rows, reinterpret_cast<uint8_t*>(a.y_bf16), static_cast<size_t>(H) * 2, 2 * n0, 0,
              min(WarpRowStage<kRowBytes>::kChunks, (H - n0) / 8));
}

// Stage 1's fp8 codes of one column block's h pairs (bits: bf16 pairs at outputs n0 + 16 jj + 8 jl + 2 tig,
// q = 2 jj + jl) of tile row gid + 8 h under its scale s, staged at their place in the 128-wide group of h
// that starts at output g0 (codes: one byte each). store_h_codes' codes.
template <int kRowBytes>
__device__ __forceinline__ void stage_h_codes(const MmaKernelArgs& a, int g0, int n0, int lane, int h,
                                              const uint32_t (&bits)[8], float s,
                                              const WarpRowStage<kRowBytes>& st) {
  const int gid = lane / 4, tig = lane % 4;
#pragma unroll
  for (int jj = 0; jj < 4; ++jj)
#pragma unroll
    for (int jl = 0; jl < 2; ++jl) {
      const int q = 2 * jj + jl, n = n0 + 16 * jj + 8 * jl + 2 * tig;
      if (n >= a.w.inter) continue;
      *reinterpret_cast<uint16_t*>(st.at(gid + 8 * h, n - g0)) = fp8_code_pair(bits[q], s);
    }
}

// The staged codes of the group from output g0 (a multiple of 16; P % 16 == 0) to h_codes' rows `rows`: the
// chunks inside [0, P).
template <int kRowBytes>
__device__ __forceinline__ void store_staged_h_codes(const MmaKernelArgs& a, int g0, const int (&rows)[2],
                                                     int lane, const WarpRowStage<kRowBytes>& st) {
  const int P = a.w.inter;
  st.copy_out(lane, rows, a.h_codes, static_cast<size_t>(P), g0, g0 < 0 ? -g0 / 16 : 0,
              min(WarpRowStage<kRowBytes>::kChunks, (P - g0) / 16));
}

}  // namespace moe::cuda
