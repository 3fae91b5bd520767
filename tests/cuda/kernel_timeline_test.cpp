// The kernel timeline's report logic on synthetic records (no GPU): launches assembled from their blocks,
// decode layers found in launch order, medians per position, and launches cut off by the record cap left out.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "cuda/kernel_timeline.h"

namespace moe::cuda {
namespace {

struct Recorder {
  std::vector<KernelTimelineRecord> records;
  unsigned launches[kTlKinds] = {};
  // A launch of `kind` whose `blocks` blocks start at `start` (+ 100 ns per block), pass their wait at
  // `wait` (+ 100 ns per block; 0: no wait) and end at `end` - 100 ns per block (times in us).
  void launch(int kind, unsigned blocks, double start, double wait, double end) {
    for (unsigned b = 0; b < blocks; ++b) {
      const auto ns = [&](double us, int sign) {
        return static_cast<unsigned long long>(us * 1e3 + sign * 100.0 * b);
      };
      records.push_back(
          {ns(start, 1), wait > 0 ? ns(wait, 1) : 0ull, ns(end, -1), kind, launches[kind], b, blocks});
    }
    ++launches[kind];
  }
  // One decode layer starting at t0 (us): eight launches of four blocks, each 5 us after the previous one's
  // start. Returns the index of its first record.
  // Without the combine (with_combine false): seven, stage 2 combining a one-token call itself.
  size_t layer(double t0, double stage1_span, bool with_combine = true) {
    const size_t first = records.size();
    const int kinds[] = {kTlFp8Gemv,  kTlAttention, kTlFp8Gemv, kTlF32Gemv,
                         kTlPrologue, kTlStage1,    kTlStage2,  kTlCombine};
    double t = t0;
    for (int k : kinds) {
      if (k == kTlCombine && !with_combine) break;
      const double span = k == kTlStage1 ? stage1_span : 6.0;
      launch(k, 4, t, t + 1.0, t + span);
      t += 5.0;
    }
    return first;
  }
  // Three repeats (100 us apart) of `kinds` in order, each launch 5 us after the previous one's start and 6
  // us long but the launch of kind `varying`, whose span is `span0` + the repeat's index (its median: span0
  // + 1).
  void repeats(const std::vector<int>& kinds, int varying, double span0) {
    for (int rep = 0; rep < 3; ++rep) {
      double t = 1000.0 + 100.0 * rep;
      for (int k : kinds) {
        launch(k, 4, t, t + 1.0, t + (k == varying ? span0 + rep : 6.0));
        t += 5.0;
      }
    }
  }
  // Mark i of block b of the attention launch (the second) of the layer whose first record is `first`, at
  // `us`.
  void mark_attention(size_t first, unsigned b, int i, double us) {
    KernelTimelineRecord& rec = records[first + 4 + b];
    ASSERT_EQ(rec.kind, kTlAttention);
    rec.mark[i] = static_cast<unsigned long long>(us * 1e3);
  }
};

TEST(KernelTimeline, LayersAndMediansFromBlockRecords) {
  Recorder r;
  r.layer(1000.0, 6.0);
  r.layer(1100.0, 8.0);
  r.layer(1200.0, 10.0);
  const KernelTimelineSummary s = summarize_kernel_timeline(r.records);
  EXPECT_EQ(s.records, 3u * 8 * 4);
  EXPECT_EQ(s.launches, 24u);
  EXPECT_EQ(s.layers, 3u);
  EXPECT_EQ(s.shape_layers, 3);
  ASSERT_EQ(s.rows.size(), 8u);
  EXPECT_EQ(s.rows[0].kind, kTlFp8Gemv);
  EXPECT_EQ(s.rows[1].kind, kTlAttention);
  EXPECT_EQ(s.rows[5].kind, kTlStage1);
  EXPECT_EQ(s.rows[7].kind, kTlCombine);
  EXPECT_EQ(s.rows[5].blocks, 4u);
  // Stage 1 starts 25 us into every layer; its first wait returns 1 us later, its last 0.3 us after that.
  EXPECT_NEAR(s.rows[5].start, 25.0, 1e-6);
  EXPECT_NEAR(s.rows[5].first_wait, 26.0, 1e-6);
  EXPECT_NEAR(s.rows[5].last_wait, 26.3, 1e-6);
  EXPECT_NEAR(s.rows[5].span, 8.0, 1e-6);  // the median of 6, 8 and 10
  EXPECT_NEAR(s.layer_us, 41.0, 1e-6);     // the combine starts at 35 and ends 6 us later
}

// Layers whose stage 2 does the combine (one-token calls): a layer runs through stage 2 when the next layer's
// q/k/v GEMV and attention follow it; the last one, with nothing after it, is not counted.
TEST(KernelTimeline, LayersEndAtStageTwoWithoutACombine) {
  Recorder r;
  for (int layer = 0; layer < 4; ++layer) r.layer(1000.0 + 100.0 * layer, 6.0 + 2.0 * layer, false);
  const KernelTimelineSummary s = summarize_kernel_timeline(r.records);
  EXPECT_EQ(s.launches, 28u);
  EXPECT_EQ(s.layers, 3u);
  ASSERT_EQ(s.rows.size(), 7u);
  EXPECT_EQ(s.rows[6].kind, kTlStage2);
  EXPECT_NEAR(s.rows[5].span, 8.0, 1e-6);  // the median of 6, 8 and 10
  EXPECT_NEAR(s.layer_us, 36.0, 1e-6);     // stage 2 starts at 30 and ends 6 us later
}

// Marks: per launch the last block to reach each; per position the median over the layers; a mark no block
// reaches, and every mark of a kernel that has none, reads negative.
TEST(KernelTimeline, MarksAreTheLastBlocksArrivalMedianOverLayers) {
  Recorder r;
  for (int layer = 0; layer < 3; ++layer) {
    const double t0 = 1000.0 + 100.0 * layer;
    const size_t first = r.layer(t0, 6.0);
    // Attention's marks 0 and 1 in every block, at t0 + 6 + block us and t0 + 8 + block + layer us; mark 2
    // only in block 3 (the one that combines).
    for (unsigned b = 0; b < 4; ++b) {
      r.mark_attention(first, b, 0, t0 + 6.0 + b);
      r.mark_attention(first, b, 1, t0 + 8.0 + b + layer);
    }
    r.mark_attention(first, 3, 2, t0 + 9.5);
  }
  const KernelTimelineSummary s = summarize_kernel_timeline(r.records);
  ASSERT_EQ(s.rows.size(), 8u);
  EXPECT_NEAR(s.rows[1].marks[0], 9.0, 1e-6);   // block 3's, 6 + 3, every layer
  EXPECT_NEAR(s.rows[1].marks[1], 12.0, 1e-6);  // 11, 12, 13: the median
  EXPECT_NEAR(s.rows[1].marks[2], 9.5, 1e-6);
  EXPECT_LT(s.rows[1].marks[3], 0.0);
  for (int i = 0; i < kKernelTimelineMarks; ++i) EXPECT_LT(s.rows[0].marks[i], 0.0);
}

// The report's text: the table's rows, and for a marked launch each mark with the time since the previous one
// (the first since the launch's last wait) and the end's since the last mark; none for unmarked launches.
TEST(KernelTimeline, ReportListsMarksWithTheirPhases) {
  Recorder r;
  for (int layer = 0; layer < 3; ++layer) {
    const double t0 = 1000.0 + 100.0 * layer;
    const size_t first = r.layer(t0, 6.0);
    for (unsigned b = 0; b < 4; ++b) {  // attention: waits at t0 + 6.3 (last block), ends at t0 + 11
      r.mark_attention(first, b, 0, t0 + 7.5);
      r.mark_attention(first, b, 1, t0 + 9.0);
    }
  }
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  write_kernel_timeline_report(f, summarize_kernel_timeline(r.records));
  std::rewind(f);
  std::string text;
  char buf[512];
  while (std::fgets(buf, sizeof buf, f)) text += buf;
  std::fclose(f);
  EXPECT_NE(text.find("96 block records, 24 whole launches, 3 decode layers"), std::string::npos) << text;
  EXPECT_NE(text.find("  stage 1            4     25.00     26.00     26.30    31.00     6.00"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  attention    marks (last block to reach each):    7.50 (+1.20)    9.00 (+1.50), end "
                      "(+2.00)"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("fp8 GEMV     marks"), std::string::npos) << text;
}

TEST(KernelTimeline, IncompleteLaunchesAndStrayKernelsAreLeftOut) {
  Recorder r;
  r.launch(kTlCombine, 2, 900.0, 901.0, 905.0);  // a previous layer's tail: no layer starts with it
  r.layer(1000.0, 6.0);
  r.layer(1100.0, 6.0);
  r.records.pop_back();  // the second layer's combine lost a block to the record cap
  const KernelTimelineSummary s = summarize_kernel_timeline(r.records);
  EXPECT_EQ(s.launches, 1u + 8 + 7);
  EXPECT_EQ(s.layers, 1u);  // the second layer never reaches a whole combine
  ASSERT_EQ(s.rows.size(), 8u);
  EXPECT_NEAR(s.rows[0].start, 0.0, 1e-6);
}

// A batch past the GEMV's (64 tokens): the projections run on cuBLAS, unrecorded, so a layer starts at its
// attention and runs through the grouped GEMM's stages to the combine.
TEST(KernelTimeline, LayersStartAtAttentionWithoutAGemvBeforeIt) {
  Recorder r;
  r.repeats({kTlAttention, kTlPrologue, kTlAlign, kTlGemm1, kTlGemm2, kTlCombine}, kTlGemm1, 9.0);
  const KernelTimelineSummary s = summarize_kernel_timeline(r.records);
  EXPECT_EQ(s.layers, 3u);
  ASSERT_EQ(s.rows.size(), 6u);
  EXPECT_EQ(s.rows[0].kind, kTlAttention);
  EXPECT_EQ(s.rows[3].kind, kTlGemm1);
  EXPECT_NEAR(s.rows[3].span, 10.0, 1e-6);  // the median of 9, 10 and 11
  EXPECT_EQ(s.rows[5].kind, kTlCombine);
  EXPECT_NEAR(s.layer_us, 31.0, 1e-6);
}

// The MoE op's benchmark records no attention: each call, from its routing prologue through its combine, is
// a "layer" (what the op's time outside the two GEMMs is made of).
TEST(KernelTimeline, OpCallsStartAtThePrologueWhereNoAttentionIsRecorded) {
  Recorder r;
  r.repeats({kTlPrologue, kTlAlign, kTlGemm1, kTlGemm2, kTlCombine}, kTlGemm2, 7.0);
  const KernelTimelineSummary s = summarize_kernel_timeline(r.records);
  EXPECT_EQ(s.layers, 3u);
  ASSERT_EQ(s.rows.size(), 5u);
  EXPECT_EQ(s.rows[0].kind, kTlPrologue);
  EXPECT_EQ(s.rows[3].kind, kTlGemm2);
  EXPECT_NEAR(s.rows[3].span, 8.0, 1e-6);  // the median of 7, 8 and 9
  EXPECT_NEAR(s.layer_us, 26.0, 1e-6);
  // With attention recorded, a prologue starts no layer of its own.
  Recorder d;
  d.layer(1000.0, 6.0);
  EXPECT_EQ(summarize_kernel_timeline(d.records).rows.size(), 8u);
}

TEST(KernelTimeline, NoLayersWithoutTheirFirstTwoKernels) {
  Recorder r;
  r.launch(kTlStage1, 8, 10.0, 11.0, 20.0);
  r.launch(kTlStage2, 8, 15.0, 21.0, 25.0);
  const KernelTimelineSummary s = summarize_kernel_timeline(r.records);
  EXPECT_EQ(s.launches, 2u);
  EXPECT_EQ(s.layers, 0u);
  EXPECT_TRUE(s.rows.empty());
  EXPECT_STREQ(kernel_timeline_kind_name(kTlStage2), "stage 2");
}

}  // namespace
}  // namespace moe::cuda
