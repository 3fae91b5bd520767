#pragma once
// The grouped GEMM's two launches per MoE call as their blocks recorded them (a MOE_KERNEL_TIMELINE measuring
// build, kernel_timeline.h), summarised for `moe bench` on the op: when each stage's blocks started and ended
// relative to the call's stage 1, and how much of stage 2's blocks' time went idle at its end (the tail a
// fixed share per block leaves where some blocks start late: session 46's take-at-tail rule, expert_mma.h).
// Plain C++ over the records, tested on the CPU (tests/cuda/grouped_gemm_timeline_test.cpp).
#include <cstdio>
#include <vector>

#include "cuda/kernel_timeline.h"

namespace moe::cuda {

// First, median and last of one time over a launch's blocks, us after the call's first stage-1 block start.
struct BlockSpread {
  double first = 0, median = 0, last = 0;
};

// One call's pair of launches (a stage-2 launch with the last stage-1 launch that started before it), or the
// medians over the calls (summarize_grouped_gemm_timeline).
struct GroupedGemmCall {
  unsigned blocks1 = 0, blocks2 = 0;
  BlockSpread start1, end1, start2, end2;
  // Stage 2's blocks' idle time after their own end until its last block's, as a share of its blocks' whole
  // span (first start to last end, times its blocks): 0 where they all end together.
  double idle_at_end2 = 0;
};

struct GroupedGemmTimeline {
  int calls = 0;           // pairs found
  GroupedGemmCall median;  // each field the median over the calls
};

GroupedGemmTimeline summarize_grouped_gemm_timeline(const std::vector<KernelTimelineRecord>& records);
void write_grouped_gemm_timeline(std::FILE* out, const GroupedGemmTimeline& t);

}  // namespace moe::cuda
