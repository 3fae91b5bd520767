// Dynamic per-token fp8 1x128 activation quantisation (FORMATS.md section 3) of a linear's input, written in
// its dequantised form: what fake_quantize() gives on the CPU.
#include "model/cuda/common.cuh"
#include "model/cuda/launch.h"

namespace moe::model::gpu {
namespace {

// One warp per (row, 128-group).
__global__ void prepare_kernel(const float* x, int rows, int n, bool quantise, uint16_t* out_bf16,
                               float* out_f32) {
  pdl_wait();
  pdl_trigger();
  const int groups = (n + 127) / 128;
  const int64_t item = static_cast<int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  if (item >= static_cast<int64_t>(rows) * groups) return;
  const int lane = threadIdx.x % 32;
  const int64_t row = item / groups;
  const int g0 = static_cast<int>(item % groups) * 128, g1 = min(n, g0 + 128);
  const float* xr = x + row * n;
  float amax = 0.0f;
  for (int i = g0 + lane; i < g1; i += 32) amax = fmaxf(amax, fabsf(xr[i]));
  amax = warp_max(amax);
  const float scale = fp8_group_scale(amax);
  for (int i = g0 + lane; i < g1; i += 32) {
    float v = xr[i];
    if (quantise) v = fp8e4m3_to_f32(fp8_code(v, scale)) * scale;
    if (out_bf16) out_bf16[row * n + i] = f32_to_bf16(v);
    if (out_f32) out_f32[row * n + i] = v;
  }
}

}  // namespace

void prepare_activation(const float* x, int rows, int n, bool quantise, uint16_t* out_bf16, float* out_f32,
                        cudaStream_t s) {
  const int64_t items = static_cast<int64_t>(rows) * ((n + 127) / 128);
  if (items == 0) return;
  launch_pdl(prepare_kernel, blocks_for(items, 8), 256, 0, s, x, rows, n, quantise, out_bf16, out_f32);
}

}  // namespace moe::model::gpu
