#pragma once
// The thread block cluster barrier in two halves (PTX barrier.cluster): a block arrives when it starts and
// waits before its first write to another block's shared memory, which must have started (CUDA's rule for
// distributed shared memory); by then every block has long arrived, so the wait costs nothing. Every thread
// of the block calls both (.aligned).
#include <cuda_runtime.h>

namespace moe::cuda {

__device__ __forceinline__ void cluster_arrive_relaxed() {
  asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
}
__device__ __forceinline__ void cluster_wait() {
  asm volatile("barrier.cluster.wait.aligned;" ::: "memory");
}

}  // namespace moe::cuda
