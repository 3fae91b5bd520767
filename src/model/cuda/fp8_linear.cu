// fp8 block-scale linears: a GEMV on the fp8 bytes for decode (few rows: reading the weights once is the
// whole cost, and fp8 halves it against bf16), and the dequantised bf16 copy that prefill GEMMs use.
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "model/cuda/common.cuh"
#include "model/cuda/launch.h"

namespace moe::model::gpu {
namespace {

constexpr int kWarps = 8, kInflight = 4;

__device__ __forceinline__ void decode16(const uint4& w, float* f) {
  const uint32_t words[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const __nv_fp8x2_storage_t pair = static_cast<__nv_fp8x2_storage_t>(words[i] >> (16 * half));
      const __half2_raw raw = __nv_cvt_fp8x2_to_halfraw2(pair, __NV_E4M3);
      const float2 v = __half22float2(*reinterpret_cast<const __half2*>(&raw));
      f[4 * i + 2 * half] = v.x;
      f[4 * i + 2 * half + 1] = v.y;
    }
  }
}

// One warp per output row; lane takes 16 bytes per step, kInflight steps loaded before use.
template <int M>
__global__ void __launch_bounds__(32 * kWarps)
    gemv_kernel(const uint8_t* w, const float* scale, int rows, int cols, const float* a, float* y) {
  const int row = blockIdx.x * kWarps + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (row >= rows) return;
  const int scols = (cols + 127) / 128;
  const float* srow = scale + static_cast<int64_t>(row / 128) * scols;
  const uint4* wrow = reinterpret_cast<const uint4*>(w + static_cast<int64_t>(row) * cols);
  const int vecs = cols / 16;
  float acc[M];
#pragma unroll
  for (int m = 0; m < M; ++m) acc[m] = 0.0f;
  for (int v0 = lane; v0 < vecs; v0 += 32 * kInflight) {
    uint4 wv[kInflight];
#pragma unroll
    for (int u = 0; u < kInflight; ++u) {
      const int v = v0 + 32 * u;
      if (v < vecs) wv[u] = __ldcs(wrow + v);
    }
#pragma unroll
    for (int u = 0; u < kInflight; ++u) {
      const int v = v0 + 32 * u;
      if (v >= vecs) break;
      float f[16];
      decode16(wv[u], f);
      const float sw = srow[v / 8];  // 8 vectors of 16 make one 128-column block
#pragma unroll
      for (int m = 0; m < M; ++m) {
        const float4* av = reinterpret_cast<const float4*>(a + static_cast<int64_t>(m) * cols + v * 16);
        float part = 0.0f;
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const float4 x = av[i];
          part += f[4 * i] * x.x + f[4 * i + 1] * x.y + f[4 * i + 2] * x.z + f[4 * i + 3] * x.w;
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

__global__ void dequant_kernel(const uint8_t* w, const float* scale, int64_t rows, int64_t cols,
                               uint16_t* out) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= rows * cols) return;
  const int64_t r = i / cols, c = i % cols;
  out[i] = f32_to_bf16(fp8e4m3_to_f32(w[i]) * scale[(r / 128) * ((cols + 127) / 128) + c / 128]);
}

}  // namespace

void fp8_gemv(const uint8_t* w, const float* scale, int rows, int cols, const float* a, int M, float* y,
              cudaStream_t s) {
  require(cols % 16 == 0 && M >= 1 && M <= kFp8GemvMaxM, "fp8_gemv: cols ", cols, " M ", M, " unsupported");
  const unsigned grid = blocks_for(rows, kWarps);
  switch (M) {
    case 1:
      gemv_kernel<1><<<grid, 32 * kWarps, 0, s>>>(w, scale, rows, cols, a, y);
      break;
    case 2:
      gemv_kernel<2><<<grid, 32 * kWarps, 0, s>>>(w, scale, rows, cols, a, y);
      break;
    case 3:
      gemv_kernel<3><<<grid, 32 * kWarps, 0, s>>>(w, scale, rows, cols, a, y);
      break;
    default:
      gemv_kernel<4><<<grid, 32 * kWarps, 0, s>>>(w, scale, rows, cols, a, y);
      break;
  }
  MOE_CUDA_CHECK_LAUNCH();
}

void fp8_block_to_bf16(const uint8_t* w, const float* scale, int64_t rows, int64_t cols, uint16_t* out,
                       cudaStream_t s) {
  if (rows * cols == 0) return;
  dequant_kernel<<<blocks_for(rows * cols, 256), 256, 0, s>>>(w, scale, rows, cols, out);
  MOE_CUDA_CHECK_LAUNCH();
}

}  // namespace moe::model::gpu
