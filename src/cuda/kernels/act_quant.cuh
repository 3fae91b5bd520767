#pragma once
// Per-token dynamic activation quantisation in shared memory, exactly as FORMATS.md section 3 (and the CPU
// reference) define it. A warp quantises one token row: values are replaced by their dequantised form.
#include <cuda_runtime.h>

#include "core/codecs.h"
#include "cuda/kernels/block_reduce.cuh"
#include "cuda/moe_params.h"

namespace moe::cuda {

// Quantises row[0, n) in place. fp8 groups of 128 start `phase` into the grid (the first group is 128 - phase
// long when phase > 0); mxfp4 groups are 32 long. Called by all 32 lanes of one warp.
__device__ __forceinline__ void warp_quantize_row(AQuant q, float* row, int n, int phase) {
  const int lane = threadIdx.x % 32;
  if (q == AQuant::None) return;
  if (q == AQuant::Fp8) {
    int g0 = 0, glen = phase > 0 ? 128 - phase : 128;
    while (g0 < n) {
      const int g1 = min(n, g0 + glen);
      float amax = 0.0f;
      for (int i = g0 + lane; i < g1; i += 32) amax = fmaxf(amax, fabsf(row[i]));
      amax = warp_max(amax);
      const float s = fmaxf(amax, 1e-10f) / 448.0f;
      for (int i = g0 + lane; i < g1; i += 32) {
        const float v = fminf(fmaxf(__fdiv_rn(row[i], s), -448.0f), 448.0f);
        row[i] = fp8e4m3_to_f32(f32_to_fp8e4m3(v)) * s;
      }
      g0 = g1;
      glen = 128;
    }
    __syncwarp();
    return;
  }
  // mxfp4: one lane per element of a 32-group.
  for (int g0 = 0; g0 < n; g0 += 32) {
    const float v = row[g0 + lane];
    const float amax = warp_max(fabsf(v));
    const float scale = e8m0_to_f32(mx_scale_code(amax));
    const float c = fminf(fmaxf(__fdiv_rn(v, scale), -6.0f), 6.0f);
    row[g0 + lane] = e2m1_to_f32(f32_to_e2m1(c)) * scale;
  }
  __syncwarp();
}

}  // namespace moe::cuda
