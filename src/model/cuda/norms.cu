// RMSNorm over rows, fused with the residual add that precedes it.
#include "model/cuda/common.cuh"
#include "model/cuda/launch.h"

namespace moe::model::gpu {
namespace {

__global__ void rms_norm_kernel(float* x, const float* res_f32, const uint16_t* res_bf16, const float* weight,
                                const int32_t* row_index, int n, float eps, float* out_f32,
                                uint16_t* out_bf16) {
  __shared__ float scratch[32];
  pdl_wait();
  pdl_trigger();
  const int row = blockIdx.x;
  const int64_t in_row = row_index ? row_index[row] : row;
  float* xr = x + in_row * n;
  float ss = 0.0f;
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    float v = xr[i];
    if (res_f32) v += res_f32[in_row * n + i];
    if (res_bf16) v += bf16_to_f32(res_bf16[in_row * n + i]);
    if (res_f32 || res_bf16) xr[i] = v;
    ss += v * v;
  }
  const float total = block_sum(ss, scratch);
  const float inv = 1.0f / sqrtf(total / static_cast<float>(n) + eps);
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    const float o = weight[i] * (xr[i] * inv);
    if (out_f32) out_f32[static_cast<int64_t>(row) * n + i] = o;
    if (out_bf16) out_bf16[static_cast<int64_t>(row) * n + i] = f32_to_bf16(o);
  }
}

}  // namespace

void rms_norm(float* x, const float* residual_f32, const uint16_t* residual_bf16, const float* weight,
              const int32_t* row_index, int rows, int n, float eps, float* out_f32, uint16_t* out_bf16,
              cudaStream_t s) {
  if (rows == 0) return;
  launch_pdl(rms_norm_kernel, rows, 256, 0, s, x, residual_f32, residual_bf16, weight, row_index, n, eps,
             out_f32, out_bf16);
}

}  // namespace moe::model::gpu
