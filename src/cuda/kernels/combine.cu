// The weighted combine: out[t] = sum over slots, in slot order, of weight * y[pair] (+ gate * shared expert),
// rounded to bf16 once; y in fp32, or in bf16 from the grouped GEMM (grouped_gemm_y_bf16). A fixed order and
// no atomics: the same bits on every run. Each thread owns four columns and issues the loads of several slots
// before summing, so one token's combine is not a chain of latencies.
#include <cuda_runtime.h>

#include "core/codecs.h"
#include "core/error.h"
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

// Eight bf16 values (one 16-byte load) widened to fp32.
__device__ __forceinline__ void widen8(const uint4& v, float (&f)[8]) {
  const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i)
    f[2 * i] = __uint_as_float(w[i] << 16), f[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
}

// The same sum over y in bf16 (the grouped GEMM's stage 2 with y_bf16): each thread owns eight columns, so
// every load is 16 bytes, as in the fp32 kernel; the arithmetic (fmaf per slot in slot order, then the shared
// expert) is the fp32 kernel's on the widened values.
__global__ void __launch_bounds__(kCombineThreads) combine_bf16_kernel(CombineArgs a) {
  KernelTimelineScope timeline(kTlCombine);
  pdl_wait();
  timeline.waited();
  pdl_trigger();
  const int t = blockIdx.x, K = a.top_k, H8 = a.hidden / 8;
  __shared__ int ids[32];
  __shared__ float w[32];
  if (threadIdx.x < K) {
    ids[threadIdx.x] = a.topk_ids[static_cast<size_t>(t) * K + threadIdx.x];
    w[threadIdx.x] = a.topk_weights[static_cast<size_t>(t) * K + threadIdx.x];
  }
  __syncthreads();
  const int h8 = blockIdx.y * blockDim.x + threadIdx.x;
  if (h8 >= H8) return;
  const uint4* y = reinterpret_cast<const uint4*>(a.y_bf16);
  float acc[8] = {};
  for (int k0 = 0; k0 < K; k0 += kSlotsInFlight) {
    uint4 v[kSlotsInFlight];
#pragma unroll
    for (int i = 0; i < kSlotsInFlight; ++i) {
      const int k = k0 + i;
      v[i] = (k < K && ids[k] >= 0) ? y[(static_cast<size_t>(t) * K + k) * H8 + h8] : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int i = 0; i < kSlotsInFlight; ++i) {
      const int k = k0 + i;
      if (k >= K || ids[k] < 0) continue;
      float f[8];
      widen8(v[i], f);
#pragma unroll
      for (int j = 0; j < 8; ++j) acc[j] = fmaf(w[k], f[j], acc[j]);
    }
  }
  if (a.y_shared_bf16) {
    float f[8];
    widen8(reinterpret_cast<const uint4*>(a.y_shared_bf16)[static_cast<size_t>(t) * H8 + h8], f);
    const float gate = a.shared_gate[t];
#pragma unroll
    for (int j = 0; j < 8; ++j) acc[j] = fmaf(gate, f[j], acc[j]);
  }
  uint32_t packed[4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
    packed[i] = f32_to_bf16(acc[2 * i]) | (static_cast<uint32_t>(f32_to_bf16(acc[2 * i + 1])) << 16);
  reinterpret_cast<uint4*>(a.out)[static_cast<size_t>(t) * H8 + h8] =
      make_uint4(packed[0], packed[1], packed[2], packed[3]);
}

}  // namespace

void launch_combine(const CombineArgs& a, int M, cudaStream_t stream) {
  if (a.y_bf16) {
    require(a.hidden % 8 == 0 && a.y_shared == nullptr, "combine: bf16 y needs hidden % 8 == 0 (", a.hidden,
            ") and the shared expert's output in bf16 too");
    const dim3 grid(M, (a.hidden / 8 + kCombineThreads - 1) / kCombineThreads);
    launch_overlapped(combine_bf16_kernel, grid, dim3(kCombineThreads), 0, stream, a);
    return;
  }
  const dim3 grid(M, (a.hidden / 4 + kCombineThreads - 1) / kCombineThreads);
  launch_overlapped(combine_kernel, grid, dim3(kCombineThreads), 0, stream, a);
}

}  // namespace moe::cuda
