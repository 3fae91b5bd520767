#include "model/cuda/common.cuh"
#include "model/cuda/launch.h"

namespace moe::model::gpu {
namespace {

__global__ void embed_kernel(const uint16_t* table, const int32_t* ids, int H, float* x, int* zero_ints,
                             int num_zero_ints) {
  pdl_wait();
  pdl_trigger();
  const int row = blockIdx.x;
  if (row == 0)
    for (int i = threadIdx.x; i < num_zero_ints; i += blockDim.x) zero_ints[i] = 0;
  const uint16_t* src = table + static_cast<int64_t>(ids[row]) * H;
  for (int i = threadIdx.x; i < H; i += blockDim.x)
    x[static_cast<int64_t>(row) * H + i] = bf16_to_f32(src[i]);
}

}  // namespace

void embed_rows(const uint16_t* table, const int32_t* token_ids, int N, int H, float* x, cudaStream_t s,
                int* zero_ints, int num_zero_ints) {
  if (N == 0) return;
  launch_pdl(embed_kernel, N, 256, 0, s, table, token_ids, H, x, zero_ints, num_zero_ints);
}

}  // namespace moe::model::gpu
