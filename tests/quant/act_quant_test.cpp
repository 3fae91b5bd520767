// Dynamic activation quantisation (FORMATS.md section 3): fp8 1x128 with a short last group, mxfp4 per 32,
// amax 0.
#include "quant/act_quant.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/codecs.h"

namespace moe {
namespace {

std::vector<float> random_bf16_values(int64_t n, uint32_t seed, float stddev) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, stddev);
  std::vector<float> x(static_cast<size_t>(n));
  for (auto& v : x) v = round_bf16(dist(rng));
  return x;
}

TEST(ActQuantFp8, ShortLastGroupHasItsOwnScale) {
  const int64_t n = 300;  // groups of 128, 128 and 44
  std::vector<float> x = random_bf16_values(n, 1, 1.0f);
  x[290] = 40.0f;  // only the last group sees it
  std::vector<uint8_t> codes(n, 0xff);
  std::vector<float> scales(3, std::nanf("")), out(n, std::nanf(""));
  quantize_fp8_1x128(x.data(), n, codes.data(), scales.data());
  fake_quantize(ActQuant::Fp8_1x128, x.data(), n, out.data());
  const int64_t starts[4] = {0, 128, 256, 300};
  for (int g = 0; g < 3; ++g) {
    float amax = 0;
    for (int64_t i = starts[g]; i < starts[g + 1]; ++i) amax = std::max(amax, std::fabs(x[i]));
    EXPECT_EQ(scales[g], amax / 448.0f) << "group " << g;
    for (int64_t i = starts[g]; i < starts[g + 1]; ++i) {
      const float s = scales[g];
      ASSERT_EQ(codes[i], f32_to_fp8e4m3(x[i] / s)) << i;  // fp32 division
      ASSERT_EQ(out[i], fp8e4m3_to_f32(codes[i]) * s) << i;
      ASSERT_LE(std::fabs(out[i] - x[i]), std::max(std::fabs(x[i]) * 0.0625f, s * 0.001f) * 1.0001f) << i;
    }
  }
  EXPECT_EQ(scales[2], 40.0f / 448.0f);
  EXPECT_LT(scales[1], 10.0f / 448.0f);
}

TEST(ActQuantFp8, HandWorkedValues) {
  // amax 2 -> s = 2/448; 1 -> 224 and 0.25 -> 56 are e4m3 values, so they come back exactly.
  // 0.30078125 (bf16 of 0.3) -> 67.375 -> nearest e4m3 is 64 (steps of 8 in [64, 128)) -> 64 * s.
  std::vector<float> x(128, 0.25f);
  x[0] = 2.0f;
  x[1] = 1.0f;
  x[2] = -0.5f;
  x[3] = 0.30078125f;
  std::vector<float> out(128, std::nanf(""));
  fake_quantize(ActQuant::Fp8_1x128, x.data(), 128, out.data());
  const float s = 2.0f / 448.0f;
  EXPECT_FLOAT_EQ(out[0], 2.0f);
  EXPECT_FLOAT_EQ(out[1], 1.0f);
  EXPECT_FLOAT_EQ(out[2], -0.5f);
  EXPECT_FLOAT_EQ(out[3], 64.0f * s);
  EXPECT_FLOAT_EQ(out[4], 0.25f);
}

TEST(ActQuantFp8, AmaxZeroGivesZeros) {
  std::vector<float> x(200, 0.0f);
  for (int i = 128; i < 200; ++i) x[i] = 0.125f * static_cast<float>(i % 5 - 2);
  std::vector<float> out(200, std::nanf(""));
  fake_quantize(ActQuant::Fp8_1x128, x.data(), 200, out.data());
  for (int i = 0; i < 128; ++i) ASSERT_EQ(out[i], 0.0f) << i;
  for (int i = 128; i < 200; ++i) ASSERT_EQ(out[i], x[i]) << i;  // multiples of 1/8 up to 1/4: exact in e4m3
}

TEST(ActQuantMxfp4, PerGroupPowerOfTwoScale) {
  const int64_t n = 96;
  std::vector<float> x = random_bf16_values(n, 2, 3.0f);
  for (int i = 64; i < 96; ++i) x[i] = 0.0f;  // amax 0 group
  std::vector<float> out(n, std::nanf(""));
  fake_quantize(ActQuant::Mxfp4, x.data(), n, out.data());
  const float grid[8] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
  for (int64_t g = 0; g < 2; ++g) {
    float amax = 0;
    for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[g * 32 + i]));
    const float X = std::ldexp(1.0f, static_cast<int>(std::floor(std::log2(amax))) - 2);
    for (int i = 0; i < 32; ++i) {
      const float v = std::clamp(x[g * 32 + i] / X, -6.0f, 6.0f);
      // Nearest of the 8 magnitudes, ties to the even index: written out independently of the codec.
      int best = 0;
      for (int c = 1; c < 8; ++c) {
        const float d = std::fabs(std::fabs(v) - grid[c]), db = std::fabs(std::fabs(v) - grid[best]);
        if (d < db || (d == db && c % 2 == 0)) best = c;
      }
      const float want = std::copysign(grid[best], v) * X;
      ASSERT_EQ(out[g * 32 + i], want) << g << "," << i << " x=" << x[g * 32 + i];
    }
  }
  for (int i = 64; i < 96; ++i) ASSERT_EQ(out[i], 0.0f);
}

TEST(ActQuantMxfp4, RefusesLengthNotMultipleOf32) {
  std::vector<float> x(40, 1.0f), out(40);
  EXPECT_ANY_THROW(fake_quantize(ActQuant::Mxfp4, x.data(), 40, out.data()));
}

TEST(ActQuant, NoneCopies) {
  std::vector<float> x = random_bf16_values(77, 4, 1.0f), out(77, std::nanf(""));
  fake_quantize(ActQuant::None, x.data(), 77, out.data());
  EXPECT_EQ(x, out);
}

}  // namespace
}  // namespace moe
