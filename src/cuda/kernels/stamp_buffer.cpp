#include "cuda/kernels/stamp_buffer.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>

#include "cuda/cuda_check.h"

namespace moe::cuda {

unsigned long long* stamp_buffer_if_set(const char* env, size_t words) {
  unsigned long long* p = nullptr;
  if (std::getenv(env)) {
    MOE_CUDA_CHECK(cudaMalloc(&p, words * sizeof(unsigned long long)));
    MOE_CUDA_CHECK(cudaMemset(p, 0, words * sizeof(unsigned long long)));
  }
  return p;
}

std::vector<unsigned long long> fetch_stamps(const unsigned long long* device, size_t words) {
  std::vector<unsigned long long> t(words);
  MOE_CUDA_CHECK(cudaDeviceSynchronize());
  MOE_CUDA_CHECK(cudaMemcpy(t.data(), device, words * sizeof(t[0]), cudaMemcpyDeviceToHost));
  return t;
}

unsigned long long earliest_stamp(const unsigned long long* t, int blocks, int events, int ev) {
  unsigned long long t0 = ~0ull;
  for (int b = 0; b < blocks; ++b) {
    const unsigned long long x = t[static_cast<size_t>(b) * events + ev];
    if (x != 0) t0 = std::min(t0, x);
  }
  return t0;
}

std::vector<double> event_times_us(const unsigned long long* t, int blocks, int events, int ev,
                                   unsigned long long t0) {
  std::vector<double> v;
  for (int b = 0; b < blocks; ++b) {
    const unsigned long long x = t[static_cast<size_t>(b) * events + ev];
    if (x != 0 && x >= t0) v.push_back(static_cast<double>(x - t0) / 1e3);
  }
  std::sort(v.begin(), v.end());
  return v;
}

}  // namespace moe::cuda
