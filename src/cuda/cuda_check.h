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

// After a kernel launch: the launch itself may have failed (bad configuration, too much shared memory).
#define MOE_CUDA_CHECK_LAUNCH() MOE_CUDA_CHECK(cudaGetLastError())
