// slice_fp8_block against the checkpoint it cuts: every weight of a shard, dequantised from the shard's codes
// and scales, equals the checkpoint weight at the shard's origin, for row and column shards on and off the
// 128 grid.
#include "model/fp8_shard.h"

#include <gtest/gtest.h>

#include <random>

#include "core/codecs.h"
#include "core/error.h"
#include "model/linear.h"

namespace moe::model {
namespace {

struct Checkpoint {
  int64_t R = 0, C = 0;
  std::vector<uint8_t> codes;
  std::vector<float> scales;
  float weight(int64_t r, int64_t c) const {
    return fp8e4m3_to_f32(codes[static_cast<size_t>(r * C + c)]) *
           scales[static_cast<size_t>((r / 128) * ((C + 127) / 128) + c / 128)];
  }
};

Checkpoint random_checkpoint(int64_t R, int64_t C) {
  Checkpoint k{R, C, {}, {}};
  std::mt19937 rng(3);
  k.codes.resize(static_cast<size_t>(R * C));
  for (auto& b : k.codes)
    b = static_cast<uint8_t>(rng() % 256 & 0xfe);  // even codes: never a NaN (0x7f, 0xff)
  k.scales.resize(static_cast<size_t>(((R + 127) / 128) * ((C + 127) / 128)));
  for (size_t i = 0; i < k.scales.size(); ++i) k.scales[i] = 0.001f * static_cast<float>(i + 1);
  return k;
}

void expect_shard_matches(const Checkpoint& k, int64_t r0, int64_t rows, int64_t c0, int64_t cols,
                          bool per_row) {
  const Fp8Shard s =
      slice_fp8_block("w", k.codes.data(), k.scales.data(), k.R, k.C, r0, rows, c0, cols, per_row);
  ASSERT_EQ(s.codes.size(), static_cast<size_t>(rows * cols));
  ASSERT_EQ(s.scale_cols, (cols + 127) / 128);
  ASSERT_EQ(s.scales.size(), static_cast<size_t>((per_row ? rows : (rows + 127) / 128) * s.scale_cols));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      const float scale = s.scales[static_cast<size_t>((per_row ? r : r / 128) * s.scale_cols + c / 128)];
      const float got = fp8e4m3_to_f32(s.codes[static_cast<size_t>(r * cols + c)]) * scale;
      ASSERT_EQ(got, k.weight(r0 + r, c0 + c))
          << "rows from " << r0 << ", columns from " << c0 << ": (" << r << ", " << c << ")";
    }
}

TEST(Fp8Shard, RowAndColumnShardsDequantiseToTheCheckpoint) {
  const Checkpoint k = random_checkpoint(448, 640);  // partial last blocks both ways
  expect_shard_matches(k, 0, 448, 0, 640, false);    // the whole tensor
  expect_shard_matches(k, 128, 256, 0, 640, false);  // column-parallel on the grid (TP 2 of 512-row q_proj)
  expect_shard_matches(k, 192, 192, 0, 640, true);   // off the grid: 192 rows per rank (Qwen3-235B TP 8)
  expect_shard_matches(k, 0, 448, 256, 384, false);  // row-parallel on the grid, reaching the partial block
  expect_shard_matches(k, 64, 100, 128, 130, true);  // both, odd sizes
}

// What the GPU backend cuts by: a shard of a shard still knows where it sits in the checkpoint tensor.
TEST(Fp8Shard, LinearShardsRecordTheirOrigin) {
  Linear w;
  w.name = "q_proj";
  w.rows = 512, w.cols = 384;
  w.weight.assign(static_cast<size_t>(w.rows * w.cols), 1.0f);
  const Linear rows = w.slice_rows(128, 256).slice_rows(64, 128);
  EXPECT_EQ(rows.row_origin, 192);
  EXPECT_EQ(rows.col_origin, 0);
  EXPECT_EQ(rows.full_rows, 512);
  EXPECT_EQ(rows.full_cols, 384);
  const Linear cols = w.slice_cols(128, 256);
  EXPECT_EQ(cols.row_origin, 0);
  EXPECT_EQ(cols.col_origin, 128);
  EXPECT_EQ(cols.full_rows, 512);
  EXPECT_EQ(cols.full_cols, 384);
  EXPECT_EQ(w.full_rows, 0);  // unsharded
}

TEST(Fp8Shard, RefusesShardsOffTheScaleGrid) {
  const Checkpoint k = random_checkpoint(256, 256);
  const auto cut = [&](int64_t r0, int64_t rows, int64_t c0, int64_t cols, bool per_row) {
    return slice_fp8_block("layers.0.o_proj", k.codes.data(), k.scales.data(), 256, 256, r0, rows, c0, cols,
                           per_row);
  };
  try {
    cut(0, 256, 64, 128, false);
    FAIL() << "a column cut inside a scale block was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("layers.0.o_proj"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("column 64"), std::string::npos) << e.what();
  }
  EXPECT_THROW(cut(96, 64, 0, 256, false), InputError);  // off-grid rows need per-row scales
  EXPECT_NO_THROW(cut(96, 64, 0, 256, true));
  EXPECT_THROW(cut(200, 100, 0, 256, true), InputError);  // outside the tensor
}

}  // namespace
}  // namespace moe::model
