// FP8 block-scale weights (FORMATS.md section 2): scale per 128x128 block incl. partial edge blocks, and
// dequantisation within half an e4m3 step of the original.
#include "quant/fp8_block.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/codecs.h"

namespace moe {
namespace {

std::vector<float> random_matrix(int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 0.05f);
  std::vector<float> w(static_cast<size_t>(rows * cols));
  for (auto& v : w) v = dist(rng);
  return w;
}

TEST(Fp8Block, PartialEdgeBlocksGetTheirOwnScale) {
  const int64_t rows = 200,
                cols = 320;  // 2 x 3 blocks; the last row block has 72 rows, the last column block 64
  std::vector<float> w = random_matrix(rows, cols, 1);
  w[199 * cols + 319] = 3.0f;  // only block (1, 2) sees this
  std::vector<uint8_t> q(static_cast<size_t>(rows * cols), 0xff);
  std::vector<float> s(6, std::nanf(""));
  quantize_fp8_block(w.data(), rows, cols, q.data(), s.data());

  for (int64_t br = 0; br < 2; ++br) {
    for (int64_t bc = 0; bc < 3; ++bc) {
      double amax = 0;
      for (int64_t r = br * 128; r < std::min<int64_t>(rows, br * 128 + 128); ++r)
        for (int64_t c = bc * 128; c < std::min<int64_t>(cols, bc * 128 + 128); ++c)
          amax = std::max(amax, std::fabs(static_cast<double>(w[r * cols + c])));
      EXPECT_FLOAT_EQ(s[br * 3 + bc], static_cast<float>(amax / 448.0)) << "block " << br << "," << bc;
    }
  }
  EXPECT_FLOAT_EQ(s[5], 3.0f / 448.0f);
  EXPECT_LT(s[4], 0.5f / 448.0f);  // its neighbour did not see the outlier
  EXPECT_EQ(q[199 * cols + 319], 0x7e) << "the block's largest magnitude maps to 448";
}

TEST(Fp8Block, DequantisesWithinHalfAStep) {
  const int64_t rows = 200, cols = 320;
  const std::vector<float> w = random_matrix(rows, cols, 2);
  std::vector<uint8_t> q(static_cast<size_t>(rows * cols));
  std::vector<float> s(6);
  quantize_fp8_block(w.data(), rows, cols, q.data(), s.data());
  std::vector<float> out(static_cast<size_t>(rows * cols), std::nanf(""));
  dequantize_fp8_block_rows(q.data(), s.data(), cols, 0, rows, out.data());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      const float scale = s[(r / 128) * 3 + c / 128];
      const float x = w[r * cols + c], y = out[r * cols + c];
      // e4m3 keeps 3 mantissa bits: half a step is 2^-4 relative for normals, 2^-10 * scale below 2^-6.
      const float bound = std::max(std::fabs(x) * 0.0625f, scale * 0.0009765625f) * 1.0001f;
      ASSERT_LE(std::fabs(x - y), bound) << r << "," << c;
      ASSERT_EQ(y, fp8e4m3_to_f32(q[r * cols + c]) * scale);
    }
  }
  // A row range in the second block row, starting mid-block, reads the same values.
  std::vector<float> part(static_cast<size_t>(70 * cols), std::nanf(""));
  dequantize_fp8_block_rows(q.data(), s.data(), cols, 130, 200, part.data());
  for (int64_t i = 0; i < 70 * cols; ++i) ASSERT_EQ(part[i], out[130 * cols + i]);
}

TEST(Fp8Block, AllZeroBlockStaysZero) {
  std::vector<float> w(128 * 256, 0.0f);
  for (int64_t r = 0; r < 128; ++r)
    for (int64_t c = 128; c < 256; ++c) w[r * 256 + c] = 0.01f * static_cast<float>((r + c) % 7 - 3);
  std::vector<uint8_t> q(w.size(), 0xff);
  std::vector<float> s(2), out(w.size(), std::nanf(""));
  quantize_fp8_block(w.data(), 128, 256, q.data(), s.data());
  EXPECT_GT(s[0], 0.0f);  // amax 0 uses the 1e-10 floor, never a zero scale
  EXPECT_FLOAT_EQ(s[0], 1e-10f / 448.0f);
  dequantize_fp8_block_rows(q.data(), s.data(), 256, 0, 128, out.data());
  for (int64_t r = 0; r < 128; ++r)
    for (int64_t c = 0; c < 128; ++c) ASSERT_EQ(out[r * 256 + c], 0.0f);
}

}  // namespace
}  // namespace moe
