// The fused decode kernel's timeline buffer (allocated once, when MOE_FUSED_TIMELINE is set) and its report:
// per event, the minimum, median and maximum over the blocks, relative to the first block's start.
#include "cuda/kernels/expert_fused_timeline.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "cuda/cuda_check.h"
#include "cuda/kernels/expert_fused.h"

namespace moe::cuda {

const char* const kTimelineEventNames[kEvents] = {"start",
                                                  "waited",
                                                  "routed, x staged",
                                                  "planned",
                                                  "scales loaded",
                                                  "first item",
                                                  "stage 1 done",
                                                  "barrier passed",
                                                  "h staged",
                                                  "stage 2 item 1 ready",
                                                  "item 1 MMAs done",
                                                  "item 1 barrier",
                                                  "item 2 ready",
                                                  "item 3 ready",
                                                  "last item ready",
                                                  "stage 2 done",
                                                  "end"};

unsigned long long* fused_timeline_buffer() {
  static unsigned long long* buffer = [] {
    unsigned long long* p = nullptr;
    if (std::getenv("MOE_FUSED_TIMELINE")) {
      const size_t bytes = static_cast<size_t>(sm_count()) * kEvents * sizeof(unsigned long long);
      MOE_CUDA_CHECK(cudaMalloc(&p, bytes));
      MOE_CUDA_CHECK(cudaMemset(p, 0, bytes));
    }
    return p;
  }();
  return buffer;
}

void fused_timeline_report() {
  unsigned long long* buffer = fused_timeline_buffer();
  if (!buffer) {
    std::printf("fused timeline: set MOE_FUSED_TIMELINE=1\n");
    return;
  }
  const int G = sm_count();
  std::vector<unsigned long long> t(static_cast<size_t>(G) * kEvents);
  MOE_CUDA_CHECK(cudaDeviceSynchronize());
  MOE_CUDA_CHECK(cudaMemcpy(t.data(), buffer, t.size() * sizeof(t[0]), cudaMemcpyDeviceToHost));
  unsigned long long t0 = ~0ull;
  for (int b = 0; b < G; ++b) t0 = std::min(t0, t[static_cast<size_t>(b) * kEvents + kStart]);

  std::printf(
      "fused timeline of the last launch (us after the first block's start: min / median / max over %d "
      "blocks)\n",
      G);
  for (int ev = 0; ev < kEvents; ++ev) {
    std::vector<double> v;
    for (int b = 0; b < G; ++b) {
      const unsigned long long x = t[static_cast<size_t>(b) * kEvents + ev];
      if (x >= t0) v.push_back(static_cast<double>(x - t0) / 1e3);
    }
    if (v.empty()) continue;
    std::sort(v.begin(), v.end());
    std::printf("  %-15s %7.2f %7.2f %7.2f\n", kTimelineEventNames[ev], v.front(), v[v.size() / 2], v.back());
  }
}

}  // namespace moe::cuda
