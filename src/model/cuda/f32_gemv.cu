// y [M, rows] = x [M, cols] · Wᵀ for fp32 W [rows, cols] and a few rows of x: the MoE router at decode sizes.
// One warp per output row (f32_row_dot.cuh: the row's first loads go out before the wait, so no weight
// round trip is left after it).
#include "cuda/kernels/kernel_timeline.cuh"
#include "model/cuda/common.cuh"
#include "model/cuda/f32_row_dot.cuh"
#include "model/cuda/kernel_attributes.h"
#include "model/cuda/launch.h"
#include "model/cuda/norm_rows.cuh"

MOE_KERNEL_TIMELINE_TU(f32_gemv)

namespace moe::model::gpu {
namespace {

constexpr int kWarps = 8;

template <int M>
__global__ void __launch_bounds__(32 * kWarps)
    f32_gemv_kernel(const float* w, int rows, int cols, const float* x, float* y, NormInput norm) {
  extern __shared__ float4 smem4[];  // [M][cols] when the input is normalised here
  __shared__ float scratch[32];
  cuda::KernelTimelineScope timeline(cuda::kTlF32Gemv);
  const int lane = threadIdx.x % 32;
  F32WarpRow<kWarps> wr(w, rows, cols);
  pdl_wait();
  timeline.waited();
  pdl_trigger();
  if (norm.weight) {
    norm_rows_to_shared(norm, M, cols, reinterpret_cast<float*>(smem4), scratch);
    x = reinterpret_cast<const float*>(smem4);
  }
  timeline.mark(0);  // measuring builds: the norm done (thread 0's view)
  if (!wr.live) return;
  float acc[M];
  wr.dot<M>(x, acc);
  timeline.mark(1);  // warp 0's dot products done
#pragma unroll
  for (int m = 0; m < M; ++m) {
    const float total = warp_sum(acc[m]);
    if (lane == 0) y[static_cast<int64_t>(m) * rows + wr.row] = total;
  }
}

template <int M>
void launch(const float* w, int rows, int cols, const float* x, float* y, cudaStream_t s,
            const NormInput& norm) {
  allow_dynamic_smem(reinterpret_cast<const void*>(f32_gemv_kernel<M>),
                     static_cast<int>(M * kFp8GemvMaxCols * sizeof(float)));
  const size_t smem = norm.weight ? static_cast<size_t>(M) * cols * sizeof(float) : 0;
  launch_pdl(f32_gemv_kernel<M>, blocks_for(rows, kWarps), 32 * kWarps, smem, s, w, rows, cols, x, y, norm);
}

}  // namespace

void f32_gemv(const float* w, int rows, int cols, const float* x, int M, float* y, cudaStream_t s,
              const NormInput* norm) {
  require(cols % 4 == 0 && cols <= kFp8GemvMaxCols && M >= 1 && M <= kF32GemvMaxM, "f32_gemv: cols ", cols,
          " M ", M, " unsupported");
  const NormInput n = checked_norm_input(norm, "f32_gemv");
  require(!n.combine.y, "f32_gemv: takes no pending combine (only fp8_gemv stages one)");
  with_rows<kF32GemvMaxM>(M, [&](auto m) { launch<decltype(m)::value>(w, rows, cols, x, y, s, n); });
}

}  // namespace moe::model::gpu
