// The plan's shapes are exactly what BACKGROUND.md's table implies: Qwen3.5-397B-A17B-MXFP4 at TP 1/4/8/16
// (weights and scales from one padded dim) and Qwen3-235B-A22B-FP8 at TP 8 (192 rows per rank, scale blocks
// straddling ranks).
#include "layout/plan.h"

#include <gtest/gtest.h>

#include <set>

#include "core/error.h"

namespace moe::layout {
namespace {

MoeLayerSpec qwen35_397b() {
  MoeLayerSpec s;
  s.hidden = 4096, s.inter = 1024, s.num_experts = 512, s.top_k = 10, s.format = WeightFormat::Mxfp4;
  return s;
}

MoeLayerPlan plan_at(const MoeLayerSpec& s, int rank, int tp,
                     std::optional<int64_t> alignment = std::nullopt) {
  Parallelism par;
  par.tp_rank = rank;
  par.tp_size = tp;
  return plan_moe_layer(s, par, alignment);
}

// Weights and scales sized from the same padded dim, and the kernel keyed on it (the bug of BACKGROUND.md 2).
void expect_consistent_mxfp4(const MoeLayerPlan& p) {
  const int64_t E = p.experts_local, H = p.spec.hidden, P = p.inter.padded;
  EXPECT_EQ(p.experts.w13, (Shape{E, 2 * P, H / 2}));
  EXPECT_EQ(p.experts.w13_scale, (Shape{E, 2 * P, H / 32}));
  EXPECT_EQ(p.experts.w2, (Shape{E, H, P / 2}));
  EXPECT_EQ(p.experts.w2_scale, (Shape{E, H, P / 32}));
  EXPECT_EQ(p.kernel_inter_dim, P);
  EXPECT_NE(p.tuned_config_key.find(str("N=", P, ",")), std::string::npos) << p.tuned_config_key;
}

TEST(PlanShapes, Qwen35_397B_Mxfp4) {
  struct Row {
    int tp;
    int64_t raw, padded;
  };
  // Default alignment (128 elements, a 64-byte packed w2 row).
  for (const Row r : {Row{1, 1024, 1024}, Row{4, 256, 256}, Row{8, 128, 128}, Row{16, 64, 128}}) {
    for (int rank : {0, r.tp - 1}) {
      const MoeLayerPlan p = plan_at(qwen35_397b(), rank, r.tp);
      EXPECT_EQ(p.inter.raw, r.raw) << "TP " << r.tp;
      EXPECT_EQ(p.inter.padded, r.padded) << "TP " << r.tp;
      EXPECT_EQ(p.inter.src_offset, rank * r.raw);
      expect_consistent_mxfp4(p);
    }
  }
  EXPECT_EQ(plan_at(qwen35_397b(), 0, 8).experts.w13, (Shape{512, 256, 2048}));
  EXPECT_EQ(plan_at(qwen35_397b(), 0, 8).experts.w2_scale, (Shape{512, 4096, 4}));
  EXPECT_EQ(plan_at(qwen35_397b(), 0, 16).experts.w2, (Shape{512, 4096, 64}));

  // With the other library's alignment (a 128-byte packed w2 row = 256 elements) the table's padded column
  // comes out: w13 rows / w2 packed cols 2048/512, 512/128, 512/128, 512/128, and the kernel inter_dim is the
  // padded 256 at TP 8 and 16, never the raw 128 / 64, with the scales on the same dims.
  struct Padded {
    int tp;
    int64_t w13_rows, w2_cols, inter_dim;
  };
  for (const Padded r : {Padded{1, 2048, 512, 1024}, Padded{4, 512, 128, 256}, Padded{8, 512, 128, 256},
                         Padded{16, 512, 128, 256}}) {
    const MoeLayerPlan p = plan_at(qwen35_397b(), 0, r.tp, 256);
    EXPECT_EQ(p.experts.w13[1], r.w13_rows) << "TP " << r.tp;
    EXPECT_EQ(p.experts.w2[2], r.w2_cols) << "TP " << r.tp;
    EXPECT_EQ(p.kernel_inter_dim, r.inter_dim) << "TP " << r.tp;
    expect_consistent_mxfp4(p);
  }
}

TEST(PlanShapes, Qwen3_235B_Fp8AtTp8) {
  MoeLayerSpec s;
  s.hidden = 4096, s.inter = 1536, s.num_experts = 128, s.top_k = 8, s.format = WeightFormat::Fp8Block;
  std::set<int64_t> blocks_read;
  std::vector<std::pair<int64_t, int64_t>> ranges;
  for (int rank = 0; rank < 8; ++rank) {
    const MoeLayerPlan p = plan_at(s, rank, 8);
    EXPECT_EQ(p.inter.raw, 192);
    EXPECT_EQ(p.inter.padded, 192);  // a multiple of the 64-row tile: no padding
    EXPECT_EQ(p.inter.src_offset, 192 * rank);
    EXPECT_EQ(p.inter.first_block, 192 * rank / 128);
    EXPECT_EQ(p.inter.block_phase, rank % 2 ? 64 : 0);
    EXPECT_EQ(p.inter.ckpt_blocks, 2);
    EXPECT_EQ(p.experts.w13, (Shape{128, 384, 4096}));
    EXPECT_EQ(p.experts.w13_scale, (Shape{128, 4, 32}));
    EXPECT_EQ(p.experts.w2, (Shape{128, 4096, 192}));
    EXPECT_EQ(p.experts.w2_scale, (Shape{128, 32, 2}));
    EXPECT_EQ(p.kernel_inter_dim, 192);
    for (int64_t b = 0; b < p.inter.ckpt_blocks; ++b) blocks_read.insert(p.inter.first_block + b);
    ranges.emplace_back(p.inter.first_block, p.inter.first_block + p.inter.ckpt_blocks);
    EXPECT_NE(p.describe().find("phase"), std::string::npos) << p.describe();
  }
  EXPECT_EQ(blocks_read.size(), 12u) << "all 1536 / 128 checkpoint blocks are read";
  // Block 1 holds rows 128..255: the second half of rank 0's rows and the first half of rank 1's.
  EXPECT_EQ(ranges[0], std::make_pair(int64_t{0}, int64_t{2}));
  EXPECT_EQ(ranges[1], std::make_pair(int64_t{1}, int64_t{3}));
}

TEST(PlanShapes, SharedExpertHasItsOwnShard) {
  MoeLayerSpec s;
  s.hidden = 2048, s.inter = 512, s.num_experts = 512, s.top_k = 10, s.shared_inter = 512,
  s.format = WeightFormat::Bf16;
  const MoeLayerPlan p = plan_at(s, 3, 4);
  ASSERT_TRUE(p.shared.has_value());
  EXPECT_EQ(p.shared_inter->raw, 128);
  EXPECT_EQ(p.shared_inter->src_offset, 384);
  EXPECT_EQ(p.shared->w13, (Shape{256, 2048}));
  EXPECT_EQ(p.shared->w2, (Shape{2048, 128}));
}

TEST(PlanShapes, RefusalsSayWhy) {
  MoeLayerSpec s;
  s.hidden = 4096, s.inter = 1536, s.num_experts = 128, s.top_k = 8, s.format = WeightFormat::Fp8Block;
  try {
    plan_at(s, 0, 5);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("1536 is not divisible by TP 5"), std::string::npos) << e.what();
  }
  try {
    plan_at(qwen35_397b(), 0, 64);  // 16 per rank: an MX group of 32 would span two ranks
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("(16) to be a multiple of 32"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(plan_at(qwen35_397b(), 31, 32));
  EXPECT_THROW(plan_at(s, 8, 8), InputError) << "rank outside TP";
}

}  // namespace
}  // namespace moe::layout
