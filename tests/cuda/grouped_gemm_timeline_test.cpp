// The grouped GEMM's per-call timeline (grouped_gemm_timeline.h) on synthetic records (no GPU): each stage-2
// launch paired with the stage-1 launch before it, its blocks' spreads after stage 1's first start, the idle
// share at stage 2's end, launches cut short by the record cap left out, and the medians over the calls.
#include "cuda/grouped_gemm_timeline.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

namespace moe::cuda {
namespace {

KernelTimelineRecord block(int kind, unsigned launch, unsigned b, unsigned blocks, double start_us,
                           double end_us) {
  return {static_cast<unsigned long long>(start_us * 1e3),
          0ull,
          static_cast<unsigned long long>(end_us * 1e3),
          kind,
          launch,
          b,
          blocks};
}

// One call at t0 (us): stage 1's 4 blocks start at t0 and end at t0 + 10 but its block 0 at t0 + 20 (a run
// more); stage 2's 4 blocks start as stage 1's end (block 0's at t0 + 20) and each run 10 us.
void call(std::vector<KernelTimelineRecord>& r, unsigned launch, double t0) {
  for (unsigned b = 0; b < 4; ++b) r.push_back(block(kTlGemm1, launch, b, 4, t0, t0 + (b == 0 ? 20 : 10)));
  for (unsigned b = 0; b < 4; ++b) {
    const double start = t0 + (b == 0 ? 20 : 10);
    r.push_back(block(kTlGemm2, launch, b, 4, start, start + 10));
  }
}

TEST(GroupedGemmTimeline, StageTwoTailAfterAStageOneBlockWithARunMore) {
  std::vector<KernelTimelineRecord> r;
  call(r, 0, 1000.0);
  call(r, 1, 2000.0);
  r.push_back(block(kTlCombine, 0, 0, 1, 1031.0, 1032.0));  // other kinds are not the GEMM's
  const GroupedGemmTimeline t = summarize_grouped_gemm_timeline(r);
  ASSERT_EQ(t.calls, 2);
  const GroupedGemmCall& c = t.median;
  EXPECT_EQ(c.blocks1, 4u);
  EXPECT_EQ(c.blocks2, 4u);
  EXPECT_NEAR(c.start1.first, 0.0, 1e-9);
  EXPECT_NEAR(c.end1.first, 10.0, 1e-9);
  EXPECT_NEAR(c.end1.last, 20.0, 1e-9);
  EXPECT_NEAR(c.start2.first, 10.0, 1e-9);
  EXPECT_NEAR(c.start2.last, 20.0, 1e-9);
  EXPECT_NEAR(c.end2.median, 20.0, 1e-9);
  EXPECT_NEAR(c.end2.last, 30.0, 1e-9);
  // Three blocks idle 10 us each of 4 blocks x 20 us.
  EXPECT_NEAR(c.idle_at_end2, 30.0 / 80.0, 1e-9);
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  write_grouped_gemm_timeline(f, t);
  std::rewind(f);
  char line[256] = {};
  ASSERT_NE(std::fgets(line, sizeof line, f), nullptr);
  EXPECT_NE(std::string(line).find("2 calls"), std::string::npos) << line;
  std::fclose(f);
}

TEST(GroupedGemmTimeline, LaunchesCutShortAndUnpairedAreLeftOut) {
  std::vector<KernelTimelineRecord> r;
  call(r, 0, 1000.0);
  call(r, 1, 2000.0);
  r.pop_back();  // the second call's stage 2 lost a block to the record cap
  r.push_back(block(kTlGemm2, 7, 0, 1, 500.0, 510.0));  // a stage 2 with no stage 1 before it
  const GroupedGemmTimeline t = summarize_grouped_gemm_timeline(r);
  EXPECT_EQ(t.calls, 1);
  EXPECT_TRUE(summarize_grouped_gemm_timeline({}).calls == 0);
}

}  // namespace
}  // namespace moe::cuda
