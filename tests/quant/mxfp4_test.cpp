// MXFP4 (FORMATS.md sections 1-2): pack order (element 2i in the low nibble), e8m0 scale choice, round trip.
#include "quant/mxfp4.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/codecs.h"

namespace moe {
namespace {

TEST(Mxfp4, ScaleIsFloorLog2AmaxMinusTwo) {
  EXPECT_EQ(mxfp4_scale_code(0.0f), 0) << "amax 0 gives code 0";
  EXPECT_EQ(mxfp4_scale_code(1.0f), 125);  // 2^(0-2)
  EXPECT_EQ(mxfp4_scale_code(1.999f), 125);
  EXPECT_EQ(mxfp4_scale_code(2.0f), 126);
  EXPECT_EQ(mxfp4_scale_code(6.0f), 127);   // 6 / 2^0 = 6: the largest e2m1 value, exact
  EXPECT_EQ(mxfp4_scale_code(7.99f), 127);  // 7.99 / 1 clamps to 6
  EXPECT_EQ(mxfp4_scale_code(8.0f), 128);
  EXPECT_EQ(mxfp4_scale_code(0.75f), 124);                 // floor(log2 0.75) = -1
  EXPECT_EQ(mxfp4_scale_code(std::ldexp(1.0f, -130)), 0);  // clamped to the e8m0 range
  EXPECT_EQ(mxfp4_scale_code(std::ldexp(1.0f, 127)), 252);
  EXPECT_EQ(mxfp4_scale_code(3.0e38f), 252) << "the largest fp32 amax stays below 255, which is NaN";
  for (float a = 1e-3f; a < 1e3f; a *= 1.37f) {
    const float x = e8m0_to_f32(mxfp4_scale_code(a));
    EXPECT_GE(a / x, 4.0f) << a;
    EXPECT_LT(a / x, 8.0f) << a;
  }
}

TEST(Mxfp4, ElementTwoIIsTheLowNibble) {
  // amax 6 -> scale 2^0, so every value below is its own code.
  const float vals[8] = {0.5f, 6.0f, -1.0f, 0.0f, 1.5f, -3.0f, 4.0f, 2.0f};
  const uint8_t codes[8] = {0x1, 0x7, 0xa, 0x0, 0x3, 0xd, 0x6, 0x4};
  std::vector<float> row(32, 0.0f);
  for (int i = 0; i < 32; ++i) row[i] = vals[i % 8];
  std::vector<uint8_t> packed(16, 0xaa), scale(1, 0xaa);
  quantize_mxfp4(row.data(), 1, 32, packed.data(), scale.data());
  EXPECT_EQ(scale[0], 127);
  for (int i = 0; i < 16; ++i) {
    const uint8_t want = static_cast<uint8_t>(codes[(2 * i) % 8] | (codes[(2 * i + 1) % 8] << 4));
    EXPECT_EQ(packed[i], want) << "byte " << i;
  }
  EXPECT_EQ(packed[0], 0x71);
  std::vector<float> out(32, std::nanf(""));
  dequantize_mxfp4_rows(packed.data(), scale.data(), 32, 0, 1, out.data());
  for (int i = 0; i < 32; ++i) EXPECT_EQ(out[i], row[i]) << i;
}

TEST(Mxfp4, RoundTripOnRandomRows) {
  const int64_t rows = 5, cols = 96;
  std::mt19937 rng(3);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> w(rows * cols);
  for (auto& v : w) v = dist(rng);
  for (int i = 0; i < 32; ++i) w[2 * cols + 32 + i] = 0.0f;  // one all-zero group
  std::vector<uint8_t> packed(rows * cols / 2), scales(rows * cols / 32);
  quantize_mxfp4(w.data(), rows, cols, packed.data(), scales.data());
  std::vector<float> out(rows * cols, std::nanf(""));
  dequantize_mxfp4_rows(packed.data(), scales.data(), cols, 0, rows, out.data());
  const float grid[8] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t g = 0; g < cols / 32; ++g) {
      float amax = 0;
      for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(w[r * cols + g * 32 + i]));
      const float X = amax == 0 ? std::ldexp(1.0f, -127)
                                : std::ldexp(1.0f, static_cast<int>(std::floor(std::log2(amax))) - 2);
      EXPECT_EQ(e8m0_to_f32(scales[r * cols / 32 + g]), X);
      for (int i = 0; i < 32; ++i) {
        const float v = std::clamp(w[r * cols + g * 32 + i] / X, -6.0f, 6.0f);
        // The nearest grid point, independent of the codec: its distance is at most half the local spacing.
        float best = 1e9f;
        for (float gv : grid) best = std::min(best, std::fabs(std::fabs(v) - gv));
        const float got = out[r * cols + g * 32 + i] / X;
        EXPECT_NEAR(std::fabs(std::fabs(v) - std::fabs(got)), best, 1e-6f) << r << "," << g << "," << i;
        if (got != 0) {
          EXPECT_EQ(std::signbit(got), std::signbit(v));
        }
      }
    }
  }
}

}  // namespace
}  // namespace moe
