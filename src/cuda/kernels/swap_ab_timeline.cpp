// The swap-AB stages' timeline buffer (allocated once, when MOE_SWAP_AB_TIMELINE is set) and its report: per
// stage and event, the minimum, median and maximum over the blocks that wrote it, relative to stage 1's first
// block start.
#include "cuda/kernels/swap_ab_timeline.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "cuda/cuda_check.h"

namespace moe::cuda {
namespace {

constexpr size_t kWords = 2 * kSwTimelineBlocks * kSwEvents;
const char* const kNames[kSwEvents] = {"start",  "waited",     "routed", "grouped+x staged",
                                       "staged", "first step", "end"};

}  // namespace

unsigned long long* swap_ab_timeline_buffer() {
  static unsigned long long* buffer = [] {
    unsigned long long* p = nullptr;
    if (std::getenv("MOE_SWAP_AB_TIMELINE")) {
      MOE_CUDA_CHECK(cudaMalloc(&p, kWords * sizeof(unsigned long long)));
      MOE_CUDA_CHECK(cudaMemset(p, 0, kWords * sizeof(unsigned long long)));
    }
    return p;
  }();
  return buffer;
}

void swap_ab_timeline_report() {
  unsigned long long* buffer = swap_ab_timeline_buffer();
  if (!buffer) return;
  std::vector<unsigned long long> t(kWords);
  MOE_CUDA_CHECK(cudaDeviceSynchronize());
  MOE_CUDA_CHECK(cudaMemcpy(t.data(), buffer, kWords * sizeof(t[0]), cudaMemcpyDeviceToHost));
  const auto at = [&](int stage, int block, int ev) {
    return t[(static_cast<size_t>(stage) * kSwTimelineBlocks + block) * kSwEvents + ev];
  };
  unsigned long long t0 = ~0ull;
  for (int b = 0; b < kSwTimelineBlocks; ++b)
    if (at(0, b, kSwStart)) t0 = std::min(t0, at(0, b, kSwStart));
  std::printf(
      "swap-AB timeline of the last call (us after stage 1's first block start: min / median / max)\n");
  for (int stage = 0; stage < 2; ++stage)
    for (int ev = 0; ev < kSwEvents; ++ev) {
      std::vector<double> v;
      for (int b = 0; b < kSwTimelineBlocks; ++b) {
        const unsigned long long x = at(stage, b, ev);
        if (x >= t0 && x != 0) v.push_back((static_cast<double>(x) - static_cast<double>(t0)) / 1e3);
      }
      if (v.empty()) continue;
      std::sort(v.begin(), v.end());
      std::printf("  stage %d %-17s %7.2f %7.2f %7.2f  (%zu blocks)\n", stage + 1, kNames[ev], v.front(),
                  v[v.size() / 2], v.back(), v.size());
    }
  MOE_CUDA_CHECK(cudaMemset(buffer, 0, kWords * sizeof(unsigned long long)));
}

}  // namespace moe::cuda
