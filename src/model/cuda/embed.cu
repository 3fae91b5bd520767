#include "model/cuda/common.cuh"
#include "model/cuda/launch.h"

namespace moe::model::gpu {
namespace {

__global__ void embed_kernel(const uint16_t* table, const int32_t* ids, int H, float* x) {
  pdl_wait();
  pdl_trigger();
  const int row = blockIdx.x;
  const uint16_t* src = table + static_cast<int64_t>(ids[row]) * H;
  for (int i = threadIdx.x; i < H; i += blockDim.x)
    x[static_cast<int64_t>(row) * H + i] = bf16_to_f32(src[i]);
}

}  // namespace

void embed_rows(const uint16_t* table, const int32_t* token_ids, int N, int H, float* x, cudaStream_t s) {
  if (N == 0) return;
  launch_pdl(embed_kernel, N, 256, 0, s, table, token_ids, H, x);
}

}  // namespace moe::model::gpu
