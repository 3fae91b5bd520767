// The dense MLP's activation and the residual add.
#include "model/cuda/common.cuh"
#include "model/cuda/launch.h"

namespace moe::model::gpu {
namespace {

__global__ void silu_mul_kernel(const float* gu, int rows, int I, float* h_f32, uint16_t* h_bf16) {
  pdl_wait();
  pdl_trigger();
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= static_cast<int64_t>(rows) * I) return;
  const int64_t r = i / I, c = i % I;
  const float g = gu[r * 2 * I + c], u = gu[r * 2 * I + I + c];
  const float h = g / (1.0f + expf(-g)) * u;
  if (h_f32) h_f32[i] = h;
  if (h_bf16) h_bf16[i] = f32_to_bf16(h);
}

__global__ void add_kernel(float* x, const float* y_f32, const uint16_t* y_bf16, int64_t count) {
  pdl_wait();
  pdl_trigger();
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= count) return;
  x[i] += y_f32 ? y_f32[i] : bf16_to_f32(y_bf16[i]);
}

}  // namespace

void silu_mul(const float* gate_up, int rows, int I, float* h_f32, uint16_t* h_bf16, cudaStream_t s) {
  const int64_t n = static_cast<int64_t>(rows) * I;
  if (n == 0) return;
  launch_pdl(silu_mul_kernel, blocks_for(n, 256), 256, 0, s, gate_up, rows, I, h_f32, h_bf16);
}

void add_into(float* x, const float* y_f32, const uint16_t* y_bf16, int64_t count, cudaStream_t s) {
  if (count == 0) return;
  launch_pdl(add_kernel, blocks_for(count, 256), 256, 0, s, x, y_f32, y_bf16, count);
}

}  // namespace moe::model::gpu
