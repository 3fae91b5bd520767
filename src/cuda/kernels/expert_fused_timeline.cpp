// The fused decode kernel's timeline buffer (allocated once, when MOE_FUSED_TIMELINE is set) and its report:
// per event, the minimum, median and maximum over the blocks, relative to the first block's start.
#include "cuda/kernels/expert_fused_timeline.h"

#include <cstdio>
#include <vector>

#include "cuda/cuda_check.h"
#include "cuda/kernels/expert_fused.h"
#include "cuda/kernels/stamp_buffer.h"

namespace moe::cuda {

const char* const kTimelineEventNames[kEvents] = {"start",
                                                  "waited",
                                                  "routed, x staged",
                                                  "planned",
                                                  "scales loaded",
                                                  "first item",
                                                  "stage 1 done",
                                                  "barrier passed",
                                                  "h round trip",
                                                  "h staged",
                                                  "stage 2 item 1 ready",
                                                  "item 1 MMAs done",
                                                  "item 2 ready",
                                                  "item 3 ready",
                                                  "last item ready",
                                                  "stage 2 done",
                                                  "end"};

unsigned long long* fused_timeline_buffer() {
  static unsigned long long* buffer =
      stamp_buffer_if_set("MOE_FUSED_TIMELINE", static_cast<size_t>(sm_count()) * kEvents);
  return buffer;
}

void fused_timeline_report() {
  unsigned long long* buffer = fused_timeline_buffer();
  if (!buffer) {
    std::printf("fused timeline: set MOE_FUSED_TIMELINE=1\n");
    return;
  }
  const int G = sm_count();
  const std::vector<unsigned long long> t = fetch_stamps(buffer, static_cast<size_t>(G) * kEvents);
  const unsigned long long t0 = earliest_stamp(t.data(), G, kEvents, kStart);
  std::printf(
      "fused timeline of the last launch (us after the first block's start: min / median / max over %d "
      "blocks)\n",
      G);
  for (int ev = 0; ev < kEvents; ++ev) {
    const std::vector<double> v = event_times_us(t.data(), G, kEvents, ev, t0);
    if (v.empty()) continue;
    std::printf("  %-15s %7.2f %7.2f %7.2f\n", kTimelineEventNames[ev], v.front(), v[v.size() / 2], v.back());
  }
}

}  // namespace moe::cuda
