#pragma once
// What the two fp8 decode GEMV kernels share (fp8_linear.cu: weights in registers; fp8_gemv_compact.cu:
// weights in shared memory, rolled loops): the block and lane geometry, and the arithmetic of the activation
// quantisation and of each chunk's dot product, so both give the same bits.
#include "model/cuda/common.cuh"

namespace moe::model::gpu {

constexpr int kWarps = 8;
// 16-byte weight chunks a lane holds in registers at once: all of its rows' chunks are loaded before the
// kernel waits for its predecessor, so one memory round trip covers the whole weight read.
constexpr int kLaneChunks = 16;

// Weight rows per warp for a row of `cols` bytes: as many as fit kLaneChunks per lane (4 for 2048 columns,
// 2 for 4096, 1 for 8192). More rows per warp means fewer blocks, and so fewer blocks redoing the RMSNorm and
// the activation quantisation that every block does for itself (ncu measured that work as a large part of
// the one-row-per-warp kernel's instructions).
inline int rows_per_warp(int cols) {
  const int chunks_per_row = (cols / 16 + 31) / 32;
  return kLaneChunks / chunks_per_row >= 4 ? 4 : kLaneChunks / chunks_per_row >= 2 ? 2 : 1;
}

// One 1x128 group of row m (columns g0 .. g0 + 127, those below cols) quantised into `a` (FORMATS.md section
// 3, as prepare_activation writes it), from this lane's four values v (columns g0 + lane + 32 u). Both GEMV
// kernels quantise through it, so their activations have the same bits.
// The group's scale from every lane's four values (their amax over the warp).
__device__ __forceinline__ float warp_group_scale(const float (&v)[4]) {
  float amax = 0.0f;
#pragma unroll
  for (int u = 0; u < 4; ++u) amax = fmaxf(amax, fabsf(v[u]));
  return fp8_group_scale(warp_max(amax));
}

__device__ __forceinline__ void quantise_group(float* a, int cols, int m, int g0, const float (&v)[4]) {
  const int lane = threadIdx.x % 32;
  const float s = warp_group_scale(v);
#pragma unroll
  for (int u = 0; u < 4; ++u) {
    const int i = g0 + lane + 32 * u;
    if (i < min(cols, g0 + 128)) a[m * cols + i] = fp8e4m3_to_f32(fp8_code(v[u], s)) * s;
  }
}

// The same group's e4m3 codes (quantise_group's codes, not its dequantised values) to q[g0 + lane + 32 u] and
// its scale to *scale_out, for a group of a whole 128 columns (the tensor-core GEMV, fp8_gemv_mma.cu).
__device__ __forceinline__ void quantise_group_codes(uint8_t* q, float* scale_out, int g0,
                                                     const float (&v)[4]) {
  const int lane = threadIdx.x % 32;
  const float s = warp_group_scale(v);
#pragma unroll
  for (int u = 0; u < 4; ++u) q[g0 + lane + 32 * u] = fp8_code(v[u], s);
  if (lane == 0) *scale_out = s;
}

// acc += sw * (the 16 decoded weights f of one chunk · the 16 activations at av), in the order both GEMV
// kernels use, so their dot products have the same bits.
__device__ __forceinline__ void add_chunk(float& acc, float sw, const float (&f)[16], const float* av_ptr) {
  const float4* av = reinterpret_cast<const float4*>(av_ptr);
  float part = 0.0f;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float4 xv = av[i];
    part += f[4 * i] * xv.x + f[4 * i + 1] * xv.y + f[4 * i + 2] * xv.z + f[4 * i + 3] * xv.w;
  }
  acc += sw * part;
}

// The weight scales of the block's rows into block_scales [ceil(cols / 128)]: its W * R rows (W warps of R
// rows, which divide 128, its first row W * R-aligned) share one row of 128 x 128 scale blocks. Weights are
// constant, so both kernels do this before their programmatic wait.
template <int R, int W = kWarps>
__device__ __forceinline__ void load_block_scales(const float* scale, int cols, float* block_scales) {
  static_assert(128 % (W * R) == 0, "a block's rows must lie in one 128-row scale block");
  const int scols = (cols + 127) / 128;
  const int64_t srow = static_cast<int64_t>(blockIdx.x) * W * R / 128;
  for (int i = threadIdx.x; i < scols; i += blockDim.x) block_scales[i] = scale[srow * scols + i];
}

// Each row's lane sums added by the warp's fixed shuffle tree; lane 0 stores rows row0 .. row0 + R - 1 of
// each of the M outputs (those below `rows`).
template <int M, int R>
__device__ __forceinline__ void store_rows(const float (&acc)[M][R], float* y, int rows, int row0) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int m = 0; m < M; ++m)
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const float total = warp_sum(acc[m][r]);
      if (lane == 0 && row0 + r < rows) y[static_cast<int64_t>(m) * rows + row0 + r] = total;
    }
}

}  // namespace moe::model::gpu
