#pragma once
// Timing by CUDA events on one stream: `enqueue` (a graph launch, a decode step) run `reps` times, each
// between two events, milliseconds per run. The benchmarks' one way of timing, so their medians compare.
#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

#include "cuda/cuda_check.h"

namespace moe::cuda {

template <typename Enqueue>
std::vector<double> time_each_ms(cudaStream_t stream, int reps, Enqueue&& enqueue) {
  cudaEvent_t e0, e1;
  MOE_CUDA_CHECK(cudaEventCreate(&e0));
  MOE_CUDA_CHECK(cudaEventCreate(&e1));
  std::vector<double> ms;
  for (int r = 0; r < reps; ++r) {
    MOE_CUDA_CHECK(cudaEventRecord(e0, stream));
    enqueue();
    MOE_CUDA_CHECK(cudaEventRecord(e1, stream));
    MOE_CUDA_CHECK(cudaEventSynchronize(e1));
    float t = 0;
    MOE_CUDA_CHECK(cudaEventElapsedTime(&t, e0, e1));
    ms.push_back(t);
  }
  MOE_CUDA_CHECK(cudaEventDestroy(e0));
  MOE_CUDA_CHECK(cudaEventDestroy(e1));
  MOE_CUDA_CHECK(cudaGetLastError());
  return ms;
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace moe::cuda
