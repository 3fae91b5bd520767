// The weighted combine: out[t] = sum over slots, in slot order, of weight * y[pair] (+ gate * shared expert),
// rounded to bf16 once; y in fp32, or in bf16 from the grouped GEMM (grouped_gemm_y_bf16). A fixed order and
// no atomics: the same bits on every run. Each thread owns the columns of one 16-byte piece of y (four fp32
// or eight bf16; combine_piece.cuh).
#include <cuda_runtime.h>

#include "core/codecs.h"
#include "core/error.h"
#include "cuda/kernels/chain_count.cuh"
#include "cuda/kernels/combine_piece.cuh"
#include "cuda/kernels/kernel_timeline.cuh"
#include "cuda/kernels/launchers.h"
#include "cuda/kernels/pdl.cuh"
#include "cuda/kernels/pdl_launch.h"

MOE_KERNEL_TIMELINE_TU(combine)

namespace moe::cuda {
namespace {

constexpr int kCombineThreads = 256;

template <bool kBf16>
__global__ void __launch_bounds__(kCombineThreads) combine_kernel(CombineArgs a) {
  using P = YPiece<kBf16>;
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
  add_slot_pieces<kBf16>(y + static_cast<size_t>(t) * K * pieces, ids, w, K, pieces, piece, acc);
  if (y_shared) {
    float f[P::kCols];
    P::widen(y_shared[static_cast<size_t>(t) * pieces + piece], f);
    const float gate = a.shared_gate[t];
#pragma unroll
    for (int j = 0; j < P::kCols; ++j) acc[j] = fmaf(gate, f[j], acc[j]);
  }
  store_bf16_piece<P::kCols>(a.out + (static_cast<size_t>(t) * pieces + piece) * P::kCols, acc);
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
