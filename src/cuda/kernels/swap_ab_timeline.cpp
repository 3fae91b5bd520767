// The swap-AB stages' timeline buffer (allocated once, when MOE_SWAP_AB_TIMELINE is set) and its report: per
// stage and event, the minimum, median and maximum over the blocks that wrote it, relative to stage 1's first
// block start.
#include "cuda/kernels/swap_ab_timeline.h"

#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

#include "cuda/cuda_check.h"
#include "cuda/kernels/stamp_buffer.h"

namespace moe::cuda {
namespace {

constexpr size_t kWords = 2 * kSwTimelineBlocks * kSwEvents;
const char* const kNames[kSwEvents] = {"start",  "waited",     "routed",  "grouped+x staged",
                                       "staged", "first step", "written", "end"};

}  // namespace

unsigned long long* swap_ab_timeline_buffer() {
  static unsigned long long* buffer = stamp_buffer_if_set("MOE_SWAP_AB_TIMELINE", kWords);
  return buffer;
}

void swap_ab_timeline_report() {
  unsigned long long* buffer = swap_ab_timeline_buffer();
  if (!buffer) return;
  const std::vector<unsigned long long> t = fetch_stamps(buffer, kWords);
  const unsigned long long* stage_stamps[2] = {t.data(), t.data() + kSwTimelineBlocks * kSwEvents};
  const unsigned long long t0 = earliest_stamp(stage_stamps[0], kSwTimelineBlocks, kSwEvents, kSwStart);
  std::printf(
      "swap-AB timeline of the last call (us after stage 1's first block start: min / median / max)\n");
  for (int stage = 0; stage < 2; ++stage)
    for (int ev = 0; ev < kSwEvents; ++ev) {
      const std::vector<double> v = event_times_us(stage_stamps[stage], kSwTimelineBlocks, kSwEvents, ev, t0);
      if (v.empty()) continue;
      std::printf("  stage %d %-17s %7.2f %7.2f %7.2f  (%zu blocks)\n", stage + 1, kNames[ev], v.front(),
                  v[v.size() / 2], v.back(), v.size());
    }
  MOE_CUDA_CHECK(cudaMemset(buffer, 0, kWords * sizeof(unsigned long long)));
}

}  // namespace moe::cuda
