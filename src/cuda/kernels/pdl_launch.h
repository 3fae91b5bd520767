#pragma once
// Host side of programmatic dependent launch: launches a kernel that may overlap the tail of the previous one
// in the stream (the kernel itself calls pdl_wait() before touching its predecessor's outputs).
#include <cuda_runtime.h>

#include "cuda/cuda_check.h"

namespace moe::cuda {

template <typename... KernelArgs, typename... Args>
void launch_overlapped(void (*kernel)(KernelArgs...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                       Args&&... args) {
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  MOE_CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...));
}

}  // namespace moe::cuda
