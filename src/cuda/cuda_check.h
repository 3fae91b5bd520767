#pragma once
// Every CUDA call is checked; a failure throws moe::Error naming the call, the file and the line.
#include <cuda_runtime.h>

#include "core/error.h"

#define MOE_CUDA_CHECK(expr)                                                                               \
  do {                                                                                                     \
    const cudaError_t moe_cuda_err_ = (expr);                                                              \
    if (moe_cuda_err_ != cudaSuccess)                                                                      \
      ::moe::fail("CUDA error ", cudaGetErrorName(moe_cuda_err_), " (", cudaGetErrorString(moe_cuda_err_), \
                  ") in ", #expr, " at ", __FILE__, ":", __LINE__);                                        \
  } while (0)

namespace moe::cuda {
// Visible CUDA devices; 0 when there is no driver or device (the error that probing leaves is cleared, so it
// cannot surface at a later, unrelated check).
inline int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

// Multiprocessors of device 0 (grid sizing of the fused MoE's kernels). Read once.
inline int sm_count() {
  static const int count = [] {
    int n = 0;
    MOE_CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, 0));
    return n;
  }();
  return count;
}
}  // namespace moe::cuda

// After a kernel launch: the launch itself may have failed (bad configuration, too much shared memory).
#define MOE_CUDA_CHECK_LAUNCH() MOE_CUDA_CHECK(cudaGetLastError())
