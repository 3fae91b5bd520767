#pragma once
// Programmatic dependent launch (Hopper): a kernel may start while its predecessor in the stream finishes, do
// work that needs nothing from it (read its constant weights, set up), then wait. `pdl_wait()` must come
// before the first read of anything the predecessor writes; `pdl_trigger()` lets the successor launch early.
#include <cuda_runtime.h>

namespace moe::cuda {

__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__device__ __forceinline__ void pdl_trigger() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

}  // namespace moe::cuda
