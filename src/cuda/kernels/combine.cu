// The weighted combine: out[t] = sum over slots, in slot order, of weight * y[pair] (+ gate * shared expert),
// rounded to bf16 once. A fixed order and no atomics: the same bits on every run. Each thread owns four
// columns and issues the loads of several slots before summing, so one token's combine is not a chain of
// latencies.
#include <cuda_runtime.h>

#include "core/codecs.h"
#include "cuda/kernels/kernel_timeline.cuh"
#include "cuda/kernels/launchers.h"
#include "cuda/kernels/pdl.cuh"
#include "cuda/kernels/pdl_launch.h"

MOE_KERNEL_TIMELINE_TU(combine)

namespace moe::cuda {
namespace {

constexpr int kCombineThreads = 256;
constexpr int kSlotsInFlight = 8;

__device__ __forceinline__ void fma4(float4& acc, float w, const float4& v) {
  acc.x = fmaf(w, v.x, acc.x);
  acc.y = fmaf(w, v.y, acc.y);
  acc.z = fmaf(w, v.z, acc.z);
  acc.w = fmaf(w, v.w, acc.w);
}

__global__ void __launch_bounds__(kCombineThreads) combine_kernel(CombineArgs a) {
  KernelTimelineScope timeline(kTlCombine);
  pdl_wait();
  timeline.waited();
  // The next kernel (a decode step's next q/k/v GEMV) may start and request its weights now: it waits for
  // this grid before it reads the output.
  pdl_trigger();
  const int t = blockIdx.x, K = a.top_k, H4 = a.hidden / 4;
  __shared__ int ids[32];
  __shared__ float w[32];
  if (threadIdx.x < K) {
    ids[threadIdx.x] = a.topk_ids[static_cast<size_t>(t) * K + threadIdx.x];
    w[threadIdx.x] = a.topk_weights[static_cast<size_t>(t) * K + threadIdx.x];
  }
  __syncthreads();
  const int h4 = blockIdx.y * blockDim.x + threadIdx.x;
  if (h4 >= H4) return;
  const float4* y = reinterpret_cast<const float4*>(a.y);
  float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  for (int k0 = 0; k0 < K; k0 += kSlotsInFlight) {
    float4 v[kSlotsInFlight];
#pragma unroll
    for (int i = 0; i < kSlotsInFlight; ++i) {
      const int k = k0 + i;
      v[i] = (k < K && ids[k] >= 0) ? y[(static_cast<size_t>(t) * K + k) * H4 + h4]
                                    : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
#pragma unroll
    for (int i = 0; i < kSlotsInFlight; ++i) {
      const int k = k0 + i;
      if (k < K && ids[k] >= 0) fma4(acc, w[k], v[i]);
    }
  }
  if (a.y_shared)
    fma4(acc, a.shared_gate[t],
         reinterpret_cast<const float4*>(a.y_shared)[static_cast<size_t>(t) * H4 + h4]);
  const uint32_t lo = f32_to_bf16(acc.x) | (static_cast<uint32_t>(f32_to_bf16(acc.y)) << 16);
  const uint32_t hi = f32_to_bf16(acc.z) | (static_cast<uint32_t>(f32_to_bf16(acc.w)) << 16);
  reinterpret_cast<uint2*>(a.out)[static_cast<size_t>(t) * H4 + h4] = make_uint2(lo, hi);
}

}  // namespace

void launch_combine(const CombineArgs& a, int M, cudaStream_t stream) {
  const dim3 grid(M, (a.hidden / 4 + kCombineThreads - 1) / kCombineThreads);
  launch_overlapped(combine_kernel, grid, dim3(kCombineThreads), 0, stream, a);
}

}  // namespace moe::cuda
