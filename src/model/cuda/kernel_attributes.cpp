#include "model/cuda/kernel_attributes.h"

#include <cuda_runtime.h>

#include <mutex>
#include <set>
#include <utility>

#include "cuda/cuda_check.h"

namespace moe::model::gpu {

void allow_dynamic_smem(const void* kernel, int bytes) {
  static std::mutex mu;
  static std::set<std::pair<const void*, int>> done;  // (kernel, device)
  int device = 0;
  MOE_CUDA_CHECK(cudaGetDevice(&device));
  std::lock_guard<std::mutex> lock(mu);
  if (!done.insert({kernel, device}).second) return;
  MOE_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
}

}  // namespace moe::model::gpu
