// fp8 block-scale linears: a GEMV on the fp8 bytes for decode (few rows: reading the weights once is the
// whole cost, and fp8 halves it against bf16), and the dequantised bf16 copy that prefill GEMMs use.
#include "cuda/kernels/kernel_timeline.cuh"
#include "cuda/kernels/weight_decode.cuh"
#include "model/cuda/common.cuh"
#include "model/cuda/fp8_gemv_compact.h"
#include "model/cuda/fp8_gemv_mma.h"
#include "model/cuda/fp8_gemv_parts.cuh"
#include "model/cuda/kernel_attributes.h"
#include "model/cuda/launch.h"
#include "model/cuda/norm_rows.cuh"

MOE_KERNEL_TIMELINE_TU(fp8_linear)

namespace moe::model::gpu {
namespace {

// Warp w takes rows R * w .. R * w + R - 1; lane l takes the 16-byte chunks l, l + 32, ... of each (all of
// them, in registers, before the predecessor wait: programmatic dependent launch). Then the block quantises
// the M input rows into shared memory (FORMATS.md section 3, what prepare_activation writes), after the
// RMSNorm when asked. Each row's dot product adds its chunks in chunk order per lane and then the warp's
// fixed shuffle tree: the same operations for any R, so the bits do not depend on R.
template <int M, int R, bool kCombine>
__global__ void __launch_bounds__(32 * kWarps)
    gemv_kernel(const uint8_t* w, const float* scale, int rows, int cols, const float* x, float* y,
                NormInput norm) {
  constexpr int kChunks = kLaneChunks / R;  // per row and lane
  cuda::KernelTimelineScope timeline(cuda::kTlFp8Gemv);
  extern __shared__ float4 smem4[];
  __shared__ float scratch[32];
  float* a = reinterpret_cast<float*>(smem4);  // [M][cols]
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int row0 = (blockIdx.x * kWarps + warp) * R;
  const int vecs = cols / 16;
  // The block's weight scales go to shared memory before the wait too, so the dot products below read them
  // there instead of waiting one more global round trip after the quantisation.
  __shared__ float block_scales[kFp8GemvMaxCols / 128];
  load_block_scales<R>(scale, cols, block_scales);
  uint4 wv[R][kChunks];
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const bool live = row0 + r < rows;
    const uint4* wrow = reinterpret_cast<const uint4*>(w + static_cast<int64_t>(live ? row0 + r : 0) * cols);
#pragma unroll
    for (int u = 0; u < kChunks; ++u) {
      const int v = lane + 32 * u;
      wv[r][u] = live && v < vecs ? __ldcs(wrow + v) : make_uint4(0, 0, 0, 0);
    }
  }
  cuda::pdl_wait();
  timeline.waited();
  cuda::pdl_trigger();
  if (norm.weight) {
    norm_rows_to_shared<kCombine>(norm, M, cols, a, scratch);
    x = a;  // quantised in place below: each group is read and written by one warp
  }
  timeline.mark(0);  // measuring builds: the norm done (thread 0's view)
  // A lane holds 4 values of a 128-group; kItemBatch groups' loads go out together, so a warp's groups cost
  // one round trip to x (global memory when there is no norm) per batch instead of two per group. Four per
  // warp: the o projection's 32 groups of one token (4096 columns) in one round trip, not two.
  const int groups = (cols + 127) / 128;
  constexpr int kItemBatch = 4;
  for (int item0 = warp; item0 < M * groups; item0 += kWarps * kItemBatch) {
    float v[kItemBatch][4];
#pragma unroll
    for (int b = 0; b < kItemBatch; ++b) {
      const int item = item0 + b * kWarps, m = item / groups, g0 = (item % groups) * 128;
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const int i = g0 + lane + 32 * u;
        v[b][u] = item < M * groups && i < min(cols, g0 + 128) ? x[static_cast<int64_t>(m) * cols + i] : 0.0f;
      }
    }
#pragma unroll
    for (int b = 0; b < kItemBatch; ++b) {
      const int item = item0 + b * kWarps;
      if (item >= M * groups) break;
      quantise_group(a, cols, item / groups, (item % groups) * 128, v[b]);
    }
  }
  __syncthreads();
  timeline.mark(1);  // the inputs quantised
  if (row0 >= rows) return;
  float acc[M][R];
#pragma unroll
  for (int m = 0; m < M; ++m)
#pragma unroll
    for (int r = 0; r < R; ++r) acc[m][r] = 0.0f;
#pragma unroll
  for (int u = 0; u < kChunks; ++u) {
    const int v = lane + 32 * u;
    if (v >= vecs) break;
#pragma unroll
    for (int r = 0; r < R; ++r) {
      float f[16];
      cuda::decode16<cuda::WFormat::Fp8Block>(wv[r][u], f);
      // 8 vectors of 16 make one 128-column block (rows past the end use the block's scales: never written).
      const float sw = block_scales[v / 8];
#pragma unroll
      for (int m = 0; m < M; ++m) add_chunk(acc[m][r], sw, f, a + m * cols + v * 16);
    }
  }
  timeline.mark(2);  // the dot products done (warp 0's)
  store_rows<M, R>(acc, y, rows, row0);
}

template <int M, int R, bool kCombine>
void launch_gemv_as(const uint8_t* w, const float* scale, int rows, int cols, const float* x, float* y,
                    cudaStream_t s, const NormInput& norm) {
  static_assert(kCombineInNormMaxBytes <= kFp8GemvMaxM * kFp8GemvMaxCols * sizeof(float), "smem allowance");
  allow_dynamic_smem(reinterpret_cast<const void*>(gemv_kernel<M, R, kCombine>),
                     static_cast<int>(kFp8GemvMaxM * kFp8GemvMaxCols * sizeof(float)));
  const size_t smem =
      (static_cast<size_t>(M) * cols + combine_stage_floats(norm.combine, M, cols)) * sizeof(float);
  launch_pdl(gemv_kernel<M, R, kCombine>, blocks_for(rows, kWarps * R), 32 * kWarps, smem, s, w, scale, rows,
             cols, x, y, norm);
}

template <int M, int R>
void launch_gemv(const uint8_t* w, const float* scale, int rows, int cols, const float* x, float* y,
                 cudaStream_t s, const NormInput& norm) {
  if (norm.combine.y)
    launch_gemv_as<M, R, true>(w, scale, rows, cols, x, y, s, norm);
  else
    launch_gemv_as<M, R, false>(w, scale, rows, cols, x, y, s, norm);
}

__global__ void dequant_kernel(const uint8_t* w, const float* scale, int64_t rows, int64_t cols,
                               uint16_t* out_bf16, float* out_f32) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= rows * cols) return;
  const int64_t r = i / cols, c = i % cols;
  const float v = fp8e4m3_to_f32(w[i]) * scale[(r / 128) * ((cols + 127) / 128) + c / 128];
  if (out_bf16) out_bf16[i] = f32_to_bf16(v);
  if (out_f32) out_f32[i] = v;
}

}  // namespace

void fp8_gemv(const uint8_t* w, const float* scale, int rows, int cols, const float* x, int M, float* y,
              cudaStream_t s, const NormInput* norm) {
  require(cols % 16 == 0 && cols <= kFp8GemvMaxCols && M >= 1 && M <= kFp8GemvMmaMaxM, "fp8_gemv: cols ",
          cols, " M ", M, " unsupported");
  const NormInput n = checked_norm_input(norm, "fp8_gemv");
  require(!n.combine.y || fp8_gemv_takes_combine(M, cols, n.combine.top_k, n.combine.y_shared != nullptr),
          "fp8_gemv: a pending combine of ", M, " rows of ", cols, " does not fit");
  const int R = rows_per_warp(cols);
  if (fp8_gemv_mma_on() && fp8_gemv_mma_takes(rows, cols, M, n))
    return fp8_gemv_mma(w, scale, rows, cols, x, M, y, s, n);
  require(M <= kFp8GemvMaxM, "fp8_gemv: ", M, " tokens of ", rows, " x ", cols,
          " need the tensor-core kernel, which is off (MOE_GEMV_MMA=0) or does not fit them");
  if (fp8_gemv_compact_on() && fp8_gemv_compact_takes(x, n))
    return fp8_gemv_compact(w, scale, rows, cols, x, M, R, y, s, n);
  with_rows<kFp8GemvMaxM>(M, [&](auto m) {
    constexpr int kM = decltype(m)::value;
    // Four rows of three or four tokens would take more registers than two blocks per SM allow.
    if (R == 4 && kM <= 2) return launch_gemv<kM, 4>(w, scale, rows, cols, x, y, s, n);
    if (R == 4) return launch_gemv<kM, 2>(w, scale, rows, cols, x, y, s, n);
    if (R == 2) return launch_gemv<kM, 2>(w, scale, rows, cols, x, y, s, n);
    launch_gemv<kM, 1>(w, scale, rows, cols, x, y, s, n);
  });
}

bool fp8_gemv_takes_combine(int M, int cols, int top_k, bool shared_expert) {
  if (M < 1 || M > kFp8GemvMaxM || cols % 4 != 0 || cols > kFp8GemvMaxCols || top_k < 1) return false;
  // The rows the norm keeps (M x cols), then the staging's own layout (what stage_combine writes).
  const int64_t floats = static_cast<int64_t>(M) * cols + combine_stage_floats(M, cols, top_k, shared_expert);
  return floats * static_cast<int64_t>(sizeof(float)) <= kCombineInNormMaxBytes;
}

void fp8_block_dequantize(const uint8_t* w, const float* scale, int64_t rows, int64_t cols,
                          uint16_t* out_bf16, float* out_f32, cudaStream_t s) {
  if (rows * cols == 0) return;
  dequant_kernel<<<blocks_for(rows * cols, 256), 256, 0, s>>>(w, scale, rows, cols, out_bf16, out_f32);
  MOE_CUDA_CHECK_LAUNCH();
}

}  // namespace moe::model::gpu
