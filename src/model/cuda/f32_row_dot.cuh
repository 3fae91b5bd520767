#pragma once
// One warp's fp32 dot products of a weight row with M input rows, for the router's decode GEMV (f32_gemv.cu)
// and its fused form with the MoE prologue (router_prologue.cu): both run these, so their logits have the
// same bits. The first kF32RowSteps 16-byte loads of the row (all of a 2048-column row) are issued before the
// kernel's programmatic wait (the weights do not depend on the previous kernel), so they overlap its tail.
#include "model/cuda/common.cuh"

namespace moe::model::gpu {

constexpr int kF32RowSteps = 16;

// The lane's first loads of the row wrow of vecs float4s (evict-first: read once per step); none when !live.
__device__ __forceinline__ void f32_row_prefetch(const float4* wrow, int vecs, bool live,
                                                 float4 (&wv)[kF32RowSteps]) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int u = 0; u < kF32RowSteps; ++u)
    if (live && lane + 32 * u < vecs) wv[u] = __ldcs(wrow + lane + 32 * u);
}

// acc[m] = the lane's part of row · x[m] (x [M][vecs * 4], anywhere), lane-strided float4s in order; the
// caller adds the lanes (warp_sum). wv holds f32_row_prefetch's loads.
template <int M>
__device__ __forceinline__ void f32_row_dot(const float4* wrow, int vecs, const float* x,
                                            float4 (&wv)[kF32RowSteps], float (&acc)[M]) {
  const int lane = threadIdx.x % 32, cols = 4 * vecs;
#pragma unroll
  for (int m = 0; m < M; ++m) acc[m] = 0.0f;
  for (int v0 = lane; v0 < vecs; v0 += 32 * kF32RowSteps) {
    if (v0 != lane) {
#pragma unroll
      for (int u = 0; u < kF32RowSteps; ++u)
        if (v0 + 32 * u < vecs) wv[u] = __ldcs(wrow + v0 + 32 * u);
    }
#pragma unroll
    for (int u = 0; u < kF32RowSteps; ++u) {
      const int v = v0 + 32 * u;
      if (v >= vecs) break;
#pragma unroll
      for (int m = 0; m < M; ++m) {
        const float4 xv = reinterpret_cast<const float4*>(x + static_cast<int64_t>(m) * cols)[v];
        acc[m] += wv[u].x * xv.x + wv[u].y * xv.y + wv[u].z * xv.z + wv[u].w * xv.w;
      }
    }
  }
}

// Warp threadIdx.x / 32 of block blockIdx.x (kWarps warps a block) takes row `row` of W [rows, cols]; it
// issues the row's first loads at construction, which the kernels do before their programmatic wait.
template <int kWarps>
struct F32WarpRow {
  int row, vecs;
  bool live;
  const float4* ptr;
  float4 wv[kF32RowSteps];
  __device__ __forceinline__ F32WarpRow(const float* w, int rows, int cols)
      : row(blockIdx.x * kWarps + threadIdx.x / 32),
        vecs(cols / 4),
        live(row < rows),
        ptr(reinterpret_cast<const float4*>(w + static_cast<int64_t>(live ? row : 0) * cols)) {
    f32_row_prefetch(ptr, vecs, live, wv);
  }
  template <int M>
  __device__ __forceinline__ void dot(const float* x, float (&acc)[M]) {
    f32_row_dot<M>(ptr, vecs, x, wv, acc);
  }
};

}  // namespace moe::model::gpu
