// The weighted combine: out[t] = sum over slots, in slot order, of weight * y[pair] (+ gate * shared expert),
// rounded to bf16 once; y in fp32, or in bf16 from the grouped GEMM (grouped_gemm_y_bf16). A fixed order and
// no atomics: the same bits on every run. Each thread owns the columns of one 16-byte piece of y (four fp32
// or eight bf16) and issues the loads of several slots before summing, so one token's combine is not a chain
// of latencies.
#include <cuda_runtime.h>

#include "core/codecs.h"
#include "core/error.h"
#include "cuda/kernels/chain_count.cuh"
#include "cuda/kernels/kernel_timeline.cuh"
#include "cuda/kernels/launchers.h"
#include "cuda/kernels/pdl.cuh"
#include "cuda/kernels/pdl_launch.h"

MOE_KERNEL_TIMELINE_TU(combine)

namespace moe::cuda {
namespace {

constexpr int kCombineThreads = 256;
constexpr int kSlotsInFlight = 8;

// The values of one 16-byte piece of y: four fp32, or eight bf16 widened.
template <bool kBf16>
struct Piece {
  static constexpr int kCols = kBf16 ? 8 : 4;
  __device__ static void widen(const uint4& v, float (&f)[kCols]) {
    const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      if constexpr (kBf16) {
        f[2 * i] = __uint_as_float(w[i] << 16);
        f[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
      } else {
        f[i] = __uint_as_float(w[i]);
      }
    }
  }
};

template <int kCols>
__device__ __forceinline__ void store_bf16(uint16_t* out, const float (&acc)[kCols]) {
  uint32_t packed[kCols / 2];
#pragma unroll
  for (int i = 0; i < kCols / 2; ++i) packed[i] = f32x2_to_bf16x2(acc[2 * i], acc[2 * i + 1]);
  if constexpr (kCols == 8)
    *reinterpret_cast<uint4*>(out) = make_uint4(packed[0], packed[1], packed[2], packed[3]);
  else
    *reinterpret_cast<uint2*>(out) = make_uint2(packed[0], packed[1]);
}

template <bool kBf16>
__global__ void __launch_bounds__(kCombineThreads) combine_kernel(CombineArgs a) {
  using P = Piece<kBf16>;
  KernelTimelineScope timeline(kTlCombine);
  const int t = blockIdx.x, K = a.top_k, pieces = a.hidden / P::kCols;
  __shared__ int ids[32];
  __shared__ float w[32];
  // Through L2 (.cg): this SM's L1 may still hold the previous call's ids and weights.
  const auto read_slots = [&] {
    if (threadIdx.x < K) {
      ids[threadIdx.x] = __ldcg(a.topk_ids + static_cast<size_t>(t) * K + threadIdx.x);
      w[threadIdx.x] = __ldcg(a.topk_weights + static_cast<size_t>(t) * K + threadIdx.x);
    }
  };
  if (a.ids_before_wait) read_slots();
  if (a.chain_counters) {
    count_wait(a.chain_counters + 1, a.chain_targets[1]);
    count_wait(a.chain_counters, a.chain_targets[0]);
  } else {
    pdl_wait();
  }
  timeline.waited();
  // The next kernel (a decode step's next q/k/v GEMV) may start and request its weights now: it waits for
  // this grid before it reads the output.
  pdl_trigger();
  if (!a.ids_before_wait) read_slots();
  __syncthreads();
  timeline.mark(0);  // measuring builds: the token's slot ids and weights read
  const int piece = blockIdx.y * blockDim.x + threadIdx.x;
  if (piece >= pieces) return;
  const uint4* y = reinterpret_cast<const uint4*>(kBf16 ? static_cast<const void*>(a.y_bf16) : a.y);
  const uint4* y_shared =
      reinterpret_cast<const uint4*>(kBf16 ? static_cast<const void*>(a.y_shared_bf16) : a.y_shared);
  float acc[P::kCols] = {};
  for (int k0 = 0; k0 < K; k0 += kSlotsInFlight) {
    uint4 v[kSlotsInFlight];
#pragma unroll
    for (int i = 0; i < kSlotsInFlight; ++i) {
      const int k = k0 + i;
      v[i] = (k < K && ids[k] >= 0) ? y[(static_cast<size_t>(t) * K + k) * pieces + piece]
                                    : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int i = 0; i < kSlotsInFlight; ++i) {
      const int k = k0 + i;
      if (k >= K || ids[k] < 0) continue;
      float f[P::kCols];
      P::widen(v[i], f);
#pragma unroll
      for (int j = 0; j < P::kCols; ++j) acc[j] = fmaf(w[k], f[j], acc[j]);
    }
  }
  if (y_shared) {
    float f[P::kCols];
    P::widen(y_shared[static_cast<size_t>(t) * pieces + piece], f);
    const float gate = a.shared_gate[t];
#pragma unroll
    for (int j = 0; j < P::kCols; ++j) acc[j] = fmaf(gate, f[j], acc[j]);
  }
  store_bf16<P::kCols>(a.out + (static_cast<size_t>(t) * pieces + piece) * P::kCols, acc);
}

}  // namespace

void launch_combine(const CombineArgs& a, int M, cudaStream_t stream) {
  if (a.y_bf16) {
    require(a.hidden % 8 == 0 && a.y_shared == nullptr && reinterpret_cast<uintptr_t>(a.out) % 16 == 0,
            "combine: bf16 y needs hidden % 8 == 0 (", a.hidden,
            "), the shared expert's output in bf16 too and a 16-byte aligned output");
    const dim3 grid(M, (a.hidden / 8 + kCombineThreads - 1) / kCombineThreads);
    launch_overlapped(combine_kernel<true>, grid, dim3(kCombineThreads), 0, stream, a);
    return;
  }
  const dim3 grid(M, (a.hidden / 4 + kCombineThreads - 1) / kCombineThreads);
  launch_overlapped(combine_kernel<false>, grid, dim3(kCombineThreads), 0, stream, a);
}

}  // namespace moe::cuda
