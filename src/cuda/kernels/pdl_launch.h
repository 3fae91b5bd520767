#pragma once
// Host side of programmatic dependent launch: launches a kernel that may overlap the tail of the previous one
// in the stream (the kernel itself calls pdl_wait() before touching its predecessor's outputs).
#include <cuda_runtime.h>

#include <utility>

#include "cuda/cuda_check.h"

namespace moe::cuda {

// cluster_x > 1: thread block clusters of cluster_x blocks along x (gridDim.x must be a multiple).
template <typename... KernelArgs, typename... Args>
void launch_overlapped_clusters(void (*kernel)(KernelArgs...), dim3 grid, dim3 block, size_t smem,
                                cudaStream_t stream, unsigned cluster_x, Args&&... args) {
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cudaLaunchAttribute attrs[2]{};
  attrs[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attrs[0].val.programmaticStreamSerializationAllowed = 1;
  attrs[1].id = cudaLaunchAttributeClusterDimension;
  attrs[1].val.clusterDim.x = cluster_x;
  attrs[1].val.clusterDim.y = 1;
  attrs[1].val.clusterDim.z = 1;
  cfg.attrs = attrs;
  cfg.numAttrs = cluster_x > 1 ? 2 : 1;
  MOE_CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...));
}

template <typename... KernelArgs, typename... Args>
void launch_overlapped(void (*kernel)(KernelArgs...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                       Args&&... args) {
  launch_overlapped_clusters(kernel, grid, block, smem, stream, 1u, std::forward<Args>(args)...);
}

// launch_overlapped, or (overlapped false) a plain launch after the previous kernel.
template <typename... KernelArgs, typename... Args>
void launch_overlapped_if(bool overlapped, void (*kernel)(KernelArgs...), dim3 grid, dim3 block, size_t smem,
                          cudaStream_t stream, Args&&... args) {
  if (overlapped) return launch_overlapped(kernel, grid, block, smem, stream, std::forward<Args>(args)...);
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  MOE_CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...));
}

}  // namespace moe::cuda
