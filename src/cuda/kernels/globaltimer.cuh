#pragma once
// The GPU's nanosecond clock and a block's index over its whole grid: what the measuring timelines stamp
// (kernel_timeline.cuh, the swap-AB and fused kernels' phase stamps) and the fused kernel's barrier timeout.
#include <cuda_runtime.h>

namespace moe::cuda {

__device__ __forceinline__ unsigned long long globaltimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ unsigned linear_block() {
  return blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
}

}  // namespace moe::cuda
