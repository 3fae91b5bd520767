#pragma once
// The RMSNorm that precedes a decode GEMV, done inside the GEMV's blocks (one launch fewer per norm): every
// block normalises the few input rows into its shared memory; block 0 also writes the updated residual stream
// and, when asked, the normalised rows in bf16 for a later kernel. Same arithmetic and thread layout as
// rms_norm_kernel (norms.cu, 256 threads), so the bits equal the separate kernel's.
#include <type_traits>

#include "model/cuda/common.cuh"
#include "model/cuda/launch.h"

namespace moe::model::gpu {

// The NormInput a decode GEMV launches with: *norm checked (x_out must be another buffer than x), or an empty
// one (weight null: the GEMV reads ready rows).
inline NormInput checked_norm_input(const NormInput* norm, const char* gemv) {
  require(!norm || (norm->weight && norm->x_out && norm->x_out != norm->x), gemv, ": bad NormInput");
  return norm ? *norm : NormInput{};
}

// f(std::integral_constant<int, m>{}) for m = min(M, kMax), M >= 1: kernels templated on their row count.
template <int kMax, typename F>
void with_rows(int M, F&& f) {
  if constexpr (kMax > 1) {
    if (M < kMax) return with_rows<kMax - 1>(M, f);
  }
  f(std::integral_constant<int, kMax>{});
}

// a [M][n] (shared memory) = RMSNorm(p.x + residual); needs blockDim.x == 256 like rms_norm_kernel.
// Each thread's elements are read kBatch at a time before any is stored: the stores (shared memory, the
// residual copy) could alias the inputs as far as the compiler knows, so a plain loop waits one global
// round trip per element. Every thread still adds its elements in index order: the bits are unchanged.
__device__ inline void norm_rows_to_shared(const NormInput& p, int M, int n, float* a, float* scratch) {
  constexpr int kBatch = 8;
  const bool writer = blockIdx.x == 0 && blockIdx.y == 0;
  const int stride = blockDim.x;
  // The weights of each thread's first batch go out with the first inputs: one round trip, not two, for a
  // row of up to kBatch * blockDim.x (2048) values.
  float w_first[kBatch];
#pragma unroll
  for (int u = 0; u < kBatch; ++u) {
    const int i = threadIdx.x + u * stride;
    w_first[u] = i < n ? p.weight[i] : 0.0f;
  }
  for (int m = 0; m < M; ++m) {
    const int64_t off = static_cast<int64_t>(m) * n;
    float ss = 0.0f;
    for (int i0 = threadIdx.x; i0 < n; i0 += kBatch * stride) {
      float v[kBatch];
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        const int i = i0 + u * stride;
        v[u] = 0.0f;
        if (i < n) {
          v[u] = p.x[off + i];
          if (p.res_f32) v[u] += p.res_f32[off + i];
          if (p.res_bf16) v[u] += bf16_to_f32(p.res_bf16[off + i]);
        }
      }
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        const int i = i0 + u * stride;
        if (i >= n) break;
        a[off + i] = v[u];
        if (writer) p.x_out[off + i] = v[u];
        ss += v[u] * v[u];
      }
    }
    const float total = block_sum(ss, scratch);
    const float inv = 1.0f / sqrtf(total / static_cast<float>(n) + p.eps);
    for (int i0 = threadIdx.x; i0 < n; i0 += kBatch * stride) {
      float w[kBatch];
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        const int i = i0 + u * stride;
        w[u] = i0 == static_cast<int>(threadIdx.x) ? w_first[u] : i < n ? p.weight[i] : 0.0f;
      }
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        const int i = i0 + u * stride;
        if (i >= n) break;
        const float o = w[u] * (a[off + i] * inv);
        a[off + i] = o;
        if (writer && p.xn_bf16_out) p.xn_bf16_out[off + i] = f32_to_bf16(o);
      }
    }
  }
  __syncthreads();
}

}  // namespace moe::model::gpu
