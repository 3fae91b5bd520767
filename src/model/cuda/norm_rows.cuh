#pragma once
// The RMSNorm that precedes a decode GEMV, done inside the GEMV's blocks (one launch fewer per norm): every
// block normalises the few input rows into its shared memory; block 0 also writes the updated residual stream
// and, when asked, the normalised rows in bf16 for a later kernel. Same arithmetic and thread layout as
// rms_norm_kernel (norms.cu, 256 threads), so the bits equal the separate kernel's. With a pending MoE
// combine (NormInput::combine) the block also does the combine's arithmetic on rows it stages in shared
// memory, so the bits equal the combine kernel's output added as res_bf16.
#include <type_traits>

#include "cuda/kernels/mma_sm80.cuh"
#include "model/cuda/common.cuh"
#include "model/cuda/launch.h"

namespace moe::model::gpu {

// The NormInput a decode GEMV launches with: *norm checked (x_out must be another buffer than x; a pending
// combine comes alone, on rows of whole 16-byte pieces), or an empty one (weight null: the GEMV reads ready
// rows).
inline NormInput checked_norm_input(const NormInput* norm, const char* gemv) {
  require(!norm || (norm->weight && norm->x_out && norm->x_out != norm->x), gemv, ": bad NormInput");
  require(!norm || !norm->combine.y || (!norm->res_f32 && !norm->res_bf16 && norm->combine.top_k >= 1), gemv,
          ": a pending combine replaces the residual inputs");
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

// Where stage_combine puts things after the normalised rows a [M][n]: each token's slot rows [slots][n],
// then the weights [M][top_k], the gates [M] and the slot ids [M][top_k].
struct CombineStage {
  int slots;
  const float* rows;
  const float* weights;
  const float* gates;
  const int* ids;
};

__device__ inline CombineStage combine_stage(const cuda::MoeCombineInput& c, int M, int n, const float* a) {
  CombineStage s;
  s.slots = c.top_k + (c.y_shared ? 1 : 0);
  s.rows = a + M * n;
  s.weights = s.rows + M * s.slots * n;
  s.gates = s.weights + M * c.top_k;
  s.ids = reinterpret_cast<const int*>(s.gates + M);
  return s;
}

// Stages what the norm reads for a pending combine by cp.async, in two round trips: x into a [M][n] (the norm
// then reads it there), the weights, gates and slot ids; then the slot rows of the slots with an expert
// output (id >= 0; the others are zero-filled and not read, as the combine kernel does not read them). Rows
// are whole 16-byte pieces (n % 4 == 0, checked by the launcher).
__device__ inline void stage_combine(const NormInput& p, int M, int n, float* a) {
  const cuda::MoeCombineInput& c = p.combine;
  const CombineStage s = combine_stage(c, M, n, a);
  const int pieces = n / 4, K = c.top_k;
  const uint32_t a_base = cuda::smem_addr(a);
  for (int i = threadIdx.x; i < M * pieces; i += blockDim.x)
    cuda::cp_async16(a_base + 16u * i, p.x + 4 * static_cast<int64_t>(i), true);
  const uint32_t small_base = cuda::smem_addr(s.weights);  // weights, gates, ids: 4 bytes each
  for (int i = threadIdx.x; i < M * (2 * K + 1); i += blockDim.x) {
    // Without a shared expert the gates are zero-filled (nothing read).
    const bool gate = i >= M * K && i < M * (K + 1), id = i >= M * (K + 1);
    const void* src = !gate && !id ? static_cast<const void*>(c.topk_weights + i)
                      : id         ? static_cast<const void*>(c.topk_ids + (i - M * (K + 1)))
                      : c.y_shared ? static_cast<const void*>(c.shared_gate + (i - M * K))
                                   : static_cast<const void*>(c.topk_weights);
    cuda::cp_async4(small_base + 4u * i, src, !gate || c.y_shared);
  }
  cuda::cp_async_commit();
  cuda::cp_async_wait<0>();
  __syncthreads();
  const uint32_t rows_base = cuda::smem_addr(s.rows);
  for (int i = threadIdx.x; i < M * s.slots * pieces; i += blockDim.x) {
    const int row = i / pieces, piece = i % pieces, m = row / s.slots, k = row % s.slots;
    const bool routed = k < K;
    const bool ran = !routed || s.ids[m * K + k] >= 0;
    const float* src = !ran     ? c.y
                       : routed ? c.y + (static_cast<int64_t>(m) * K + k) * n
                                : c.y_shared + static_cast<int64_t>(m) * n;
    cuda::cp_async16(rows_base + 16u * i, src + (ran ? 4 * piece : 0), ran);
  }
  cuda::cp_async_commit();
  cuda::cp_async_wait<0>();
  __syncthreads();
}

// Token m's combined MoE output at column i, rounded to bf16 as the combine kernel stores it: its slots with
// an expert output in slot order, fmaf(weight, y, acc) from zero, then the shared expert's gate times its
// output (combine.cu).
__device__ inline float staged_combine(const cuda::MoeCombineInput& c, const CombineStage& s, int n, int m,
                                       int i) {
  const float* rows = s.rows + static_cast<int64_t>(m) * s.slots * n;
  float acc = 0.0f;
  for (int k = 0; k < c.top_k; ++k)
    if (s.ids[m * c.top_k + k] >= 0)
      acc = fmaf(s.weights[m * c.top_k + k], rows[static_cast<int64_t>(k) * n + i], acc);
  if (c.y_shared) acc = fmaf(s.gates[m], rows[static_cast<int64_t>(c.top_k) * n + i], acc);
  return bf16_to_f32(f32_to_bf16(acc));
}

// The norm's thread layout (rms_norm_kernel's block): blocks of at least this many threads run it.
constexpr int kNormThreads = 256;

// kCombine: p.combine is set (compiled apart, so the GEMVs without one keep their registers).
template <bool kCombine = false>
__device__ inline void norm_rows_to_shared(const NormInput& p, int M, int n, float* a, float* scratch) {
  constexpr int kBatch = 8;
  const bool writer = blockIdx.x == 0 && blockIdx.y == 0;
  // rms_norm_kernel's 256-thread layout whatever the block's size (256 or more threads): a wider block's
  // other threads add zeros to block_sum's warp-order total, which leaves it unchanged, so its sums of
  // squares (and all it normalises) keep the same bits. Summing with all 512 threads of the router_prologue
  // kernel or the 16-warp compact GEMV changed them (session 21's GPU test).
  constexpr int stride = kNormThreads;
  const bool summer = threadIdx.x < kNormThreads;
  // The weights of each thread's first batch go out with the first inputs: one round trip, not two, for a
  // row of up to kBatch * kNormThreads (2048) values. (Threads past the layout's 256 load none.)
  float w_first[kBatch];
#pragma unroll
  for (int u = 0; u < kBatch; ++u) {
    const int i = threadIdx.x + u * stride;
    w_first[u] = summer && i < n ? p.weight[i] : 0.0f;
  }
  if constexpr (kCombine) stage_combine(p, M, n, a);
  const CombineStage staged = combine_stage(p.combine, M, n, a);
  for (int m = 0; m < M; ++m) {
    const int64_t off = static_cast<int64_t>(m) * n;
    float ss = 0.0f;
    for (int i0 = threadIdx.x; summer && i0 < n; i0 += kBatch * stride) {
      float v[kBatch];
      if constexpr (kCombine) {
#pragma unroll
        for (int u = 0; u < kBatch; ++u) {
          const int i = i0 + u * stride;
          v[u] = i < n ? a[off + i] + staged_combine(p.combine, staged, n, m, i) : 0.0f;
        }
      } else {
        // Every load of the batch first, then the sums: written as one loop, ptxas put each element's loads
        // right before its adds, 8 round trips in a row after the wait (the decode GEMV's and the router
        // kernel's SASS: LDG x, LDG res, FADD, then the next element's LDGs).
        float xs[kBatch], rf[kBatch];
        uint16_t rb[kBatch];
#pragma unroll
        for (int u = 0; u < kBatch; ++u) {
          const int i = i0 + u * stride;
          xs[u] = i < n ? p.x[off + i] : 0.0f;
          rf[u] = p.res_f32 && i < n ? p.res_f32[off + i] : 0.0f;
          rb[u] = p.res_bf16 && i < n ? p.res_bf16[off + i] : uint16_t{0};
        }
#pragma unroll
        for (int u = 0; u < kBatch; ++u) {
          v[u] = xs[u];
          if (p.res_f32) v[u] += rf[u];
          if (p.res_bf16) v[u] += bf16_to_f32(rb[u]);
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
    for (int i0 = threadIdx.x; summer && i0 < n; i0 += kBatch * stride) {
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

// A decode GEMV's M input rows in shared memory `a` [M][n], then a barrier: normalised by `norm` when it has
// a weight (norm_rows_to_shared, no pending combine), else x's rows as they are (four 16-byte pieces in
// flight per thread and round; x 16-byte aligned, n % 4 == 0).
template <int kThreads>
__device__ inline void input_rows_to_shared(const float* x, const NormInput& norm, int M, int n, float* a,
                                            float* scratch) {
  if (norm.weight) {
    norm_rows_to_shared<false>(norm, M, n, a, scratch);
    return;
  }
  float4* a4 = reinterpret_cast<float4*>(a);
  const int pieces = M * n / 4;
  for (int i0 = threadIdx.x; i0 < pieces; i0 += 4 * kThreads) {
    float4 t[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const int i = i0 + k * kThreads;
      t[k] = i < pieces ? reinterpret_cast<const float4*>(x)[i] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
#pragma unroll
    for (int k = 0; k < 4; ++k)
      if (i0 + k * kThreads < pieces) a4[i0 + k * kThreads] = t[k];
  }
  __syncthreads();
}

}  // namespace moe::model::gpu
