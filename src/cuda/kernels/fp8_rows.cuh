#pragma once
// Rows of bf16 values quantised to fp8 e4m3 codes + one fp32 scale per 1x128 group, exactly as FORMATS.md
// section 3 (and warp_quantize_group) define it: s = max(amax, 1e-10) / 448, code = e4m3(clamp(x / s, ±448))
// with an fp32 division. Groups follow the checkpoint's grid: group g spans [g*128 - phase, (g+1)*128 -
// phase) clipped to the row (GroupGrid). The tensor-core path multiplies the codes and applies the scales per
// K block.
#include <cuda_runtime.h>

#include "core/codecs.h"
#include "cuda/kernels/block_reduce.cuh"

namespace moe::cuda {

struct Fp8RowsArgs {
  const uint16_t* src;   // [rows, n] bf16
  int n, phase, groups;  // groups = ceil((n + phase) / 128)
  const int* row_list;   // row i of the work is src row row_list[i]; null: row i
  const int* row_count;  // device scalar bounding i; null: rows_bound
  int rows_bound;
  uint8_t* codes;  // [rows, n]
  float* scales;   // [rows, groups]
};

// One warp per (row, group); n and phase are multiples of 16, so each lane owns 4 aligned values.
__global__ void __launch_bounds__(256) fp8_rows_kernel(Fp8RowsArgs a) {
  const int warp = static_cast<int>((blockIdx.x * blockDim.x + threadIdx.x) / 32), lane = threadIdx.x % 32;
  const int i = warp / a.groups, g = warp % a.groups;
  const int count = a.row_count ? *a.row_count : a.rows_bound;
  if (i >= count || i >= a.rows_bound) return;
  const int row = a.row_list ? a.row_list[i] : i;
  const int g0 = max(0, g * 128 - a.phase), g1 = min(a.n, (g + 1) * 128 - a.phase);
  const int k = g0 + lane * 4;
  const bool mine = k < g1;
  const size_t base = static_cast<size_t>(row) * a.n;
  float v[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  if (mine) {
    const uint2 raw = *reinterpret_cast<const uint2*>(a.src + base + k);
    v[0] = bf16_to_f32(static_cast<uint16_t>(raw.x & 0xffffu));
    v[1] = bf16_to_f32(static_cast<uint16_t>(raw.x >> 16));
    v[2] = bf16_to_f32(static_cast<uint16_t>(raw.y & 0xffffu));
    v[3] = bf16_to_f32(static_cast<uint16_t>(raw.y >> 16));
  }
  float amax = fmaxf(fmaxf(fabsf(v[0]), fabsf(v[1])), fmaxf(fabsf(v[2]), fabsf(v[3])));
  amax = warp_max(amax);
  const float s = fmaxf(amax, 1e-10f) / 448.0f;
  if (mine) {
    uint32_t packed = 0;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const float q = fminf(fmaxf(__fdiv_rn(v[j], s), -448.0f), 448.0f);
      packed |= static_cast<uint32_t>(f32_to_fp8e4m3(q)) << (8 * j);
    }
    *reinterpret_cast<uint32_t*>(a.codes + base + k) = packed;
  }
  if (lane == 0) a.scales[static_cast<size_t>(row) * a.groups + g] = s;
}

inline void launch_fp8_rows(const Fp8RowsArgs& a, cudaStream_t stream) {
  const long long warps = static_cast<long long>(a.rows_bound) * a.groups;
  fp8_rows_kernel<<<static_cast<unsigned>((warps + 7) / 8), 256, 0, stream>>>(a);
}

}  // namespace moe::cuda
