// fp8 block-scale linears: a GEMV on the fp8 bytes for decode (few rows: reading the weights once is the
// whole cost, and fp8 halves it against bf16), and the dequantised bf16 copy that prefill GEMMs use.
#include "cuda/kernels/weight_decode.cuh"
#include "model/cuda/common.cuh"
#include "model/cuda/launch.h"
#include "model/cuda/norm_rows.cuh"

namespace moe::model::gpu {
namespace {

constexpr int kWarps = 8, kInflight = 4;
// One token: five resident blocks per SM, so a q/k/v projection (5120 rows, 640 blocks) runs in one wave on
// 132 SMs and every block issues its weight loads before waiting for the previous kernel. More tokens need
// more registers (fewer blocks would spill).
constexpr int min_blocks_per_sm(int M) {
  return M == 1 ? 5 : 3;
}

// One warp per output row; lane takes 16 bytes per step, kInflight steps loaded before use. The first steps'
// weight loads (for rows of up to 32 * kInflight * 16 bytes: the whole row) are issued before the kernel
// waits for its predecessor (programmatic dependent launch): weights do not depend on it, so their latency
// hides behind the previous kernel's tail. Then the block quantises the M input rows into shared memory
// (FORMATS.md section 3, what prepare_activation writes): every block redoes this small amount of work so the
// decode step needs no separate launch for it.
template <int M>
__global__ void __launch_bounds__(32 * kWarps, min_blocks_per_sm(M))
    gemv_kernel(const uint8_t* w, const float* scale, int rows, int cols, const float* x, float* y,
                NormInput norm) {
  extern __shared__ float4 smem4[];
  __shared__ float scratch[32];
  float* a = reinterpret_cast<float*>(smem4);  // [M][cols]
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int row = blockIdx.x * kWarps + warp;
  const bool live = row < rows;
  const int vecs = cols / 16;
  const uint4* wrow = reinterpret_cast<const uint4*>(w + static_cast<int64_t>(live ? row : 0) * cols);
  uint4 wv[kInflight];
#pragma unroll
  for (int u = 0; u < kInflight; ++u) {
    const int v = lane + 32 * u;
    if (live && v < vecs) wv[u] = __ldcs(wrow + v);
  }
  cuda::pdl_wait();
  cuda::pdl_trigger();
  if (norm.weight) {
    norm_rows_to_shared(norm, M, cols, a, scratch);
    x = a;  // quantised in place below: each group is read and written by one warp
  }
  // A lane holds 4 values of a 128-group; kItemBatch groups' loads go out together, so a warp's groups cost
  // one round trip to x (global memory when there is no norm) per batch instead of two per group.
  const int groups = (cols + 127) / 128;
  constexpr int kItemBatch = 2;
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
      const int item = item0 + b * kWarps, m = item / groups, g0 = (item % groups) * 128;
      if (item >= M * groups) break;
      float amax = 0.0f;
#pragma unroll
      for (int u = 0; u < 4; ++u) amax = fmaxf(amax, fabsf(v[b][u]));
      amax = warp_max(amax);
      const float s = fp8_group_scale(amax);
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const int i = g0 + lane + 32 * u;
        if (i < min(cols, g0 + 128)) a[m * cols + i] = fp8e4m3_to_f32(fp8_code(v[b][u], s)) * s;
      }
    }
  }
  __syncthreads();
  if (!live) return;
  const int scols = (cols + 127) / 128;
  const float* srow = scale + static_cast<int64_t>(row / 128) * scols;
  float acc[M];
#pragma unroll
  for (int m = 0; m < M; ++m) acc[m] = 0.0f;
  for (int v0 = lane; v0 < vecs; v0 += 32 * kInflight) {
    if (v0 != lane) {  // the first steps' weights came in before the wait
#pragma unroll
      for (int u = 0; u < kInflight; ++u) {
        const int v = v0 + 32 * u;
        if (v < vecs) wv[u] = __ldcs(wrow + v);
      }
    }
#pragma unroll
    for (int u = 0; u < kInflight; ++u) {
      const int v = v0 + 32 * u;
      if (v >= vecs) break;
      float f[16];
      cuda::decode16<cuda::WFormat::Fp8Block>(wv[u], f);
      const float sw = srow[v / 8];  // 8 vectors of 16 make one 128-column block
#pragma unroll
      for (int m = 0; m < M; ++m) {
        const float4* av = reinterpret_cast<const float4*>(a + m * cols + v * 16);
        float part = 0.0f;
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const float4 xv = av[i];
          part += f[4 * i] * xv.x + f[4 * i + 1] * xv.y + f[4 * i + 2] * xv.z + f[4 * i + 3] * xv.w;
        }
        acc[m] += sw * part;
      }
    }
  }
#pragma unroll
  for (int m = 0; m < M; ++m) {
    const float total = warp_sum(acc[m]);
    if (lane == 0) y[static_cast<int64_t>(m) * rows + row] = total;
  }
}

template <int M>
void launch_gemv(const uint8_t* w, const float* scale, int rows, int cols, const float* x, float* y,
                 cudaStream_t s, const NormInput& norm) {
  static bool configured = false;  // set on the first (eager) call, never inside a graph capture
  if (!configured) {
    MOE_CUDA_CHECK(cudaFuncSetAttribute(gemv_kernel<M>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(kFp8GemvMaxM * kFp8GemvMaxCols * sizeof(float))));
    configured = true;
  }
  launch_pdl(gemv_kernel<M>, blocks_for(rows, kWarps), 32 * kWarps,
             static_cast<size_t>(M) * cols * sizeof(float), s, w, scale, rows, cols, x, y, norm);
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
  require(cols % 16 == 0 && cols <= kFp8GemvMaxCols && M >= 1 && M <= kFp8GemvMaxM, "fp8_gemv: cols ", cols,
          " M ", M, " unsupported");
  const NormInput n = checked_norm_input(norm, "fp8_gemv");
  with_rows<kFp8GemvMaxM>(M,
                          [&](auto m) { launch_gemv<decltype(m)::value>(w, scale, rows, cols, x, y, s, n); });
}

void fp8_block_dequantize(const uint8_t* w, const float* scale, int64_t rows, int64_t cols,
                          uint16_t* out_bf16, float* out_f32, cudaStream_t s) {
  if (rows * cols == 0) return;
  dequant_kernel<<<blocks_for(rows * cols, 256), 256, 0, s>>>(w, scale, rows, cols, out_bf16, out_f32);
  MOE_CUDA_CHECK_LAUNCH();
}

}  // namespace moe::model::gpu
