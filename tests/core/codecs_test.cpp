// Exhaustive checks of the scalar codecs against FORMATS.md section 1.
#include "core/codecs.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

namespace moe {
namespace {

// Slow, obviously-correct fp8 e4m3fn value of a code, straight from the definition.
double fp8_value_by_definition(int code) {
  const int sign = code & 0x80 ? -1 : 1;
  const int exp = (code >> 3) & 0xf, man = code & 7;
  if (exp == 0xf && man == 7) return std::nan("");
  if (exp == 0) return sign * std::ldexp(man / 8.0, -6);
  return sign * std::ldexp(1.0 + man / 8.0, exp - 7);
}

TEST(Fp8E4m3, DecodesEveryCode) {
  for (int c = 0; c < 256; ++c) {
    const double want = fp8_value_by_definition(c);
    const float got = fp8e4m3_to_f32(static_cast<uint8_t>(c));
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << c;
    } else {
      EXPECT_EQ(static_cast<double>(got), want) << "code " << c;
      EXPECT_EQ(std::signbit(got), (c & 0x80) != 0) << "code " << c;
    }
  }
  EXPECT_EQ(fp8e4m3_to_f32(0x7e), 448.0f);
  EXPECT_EQ(fp8e4m3_to_f32(0xfe), -448.0f);
  EXPECT_EQ(fp8e4m3_to_f32(0x01), std::ldexp(1.0f, -9));
}

TEST(Fp8E4m3, EveryFiniteCodeRoundTrips) {
  for (int c = 0; c < 256; ++c) {
    if ((c & 0x7f) == 0x7f) continue;
    EXPECT_EQ(f32_to_fp8e4m3(fp8e4m3_to_f32(static_cast<uint8_t>(c))), c) << "code " << c;
  }
}

TEST(Fp8E4m3, TiesRoundToEvenAndNeighboursToNearest) {
  // For every pair of adjacent positive codes, the midpoint goes to the even code and points just beside it
  // go to the nearer one.
  for (int c = 0; c < 0x7e; ++c) {
    const float lo = fp8e4m3_to_f32(static_cast<uint8_t>(c));
    const float hi = fp8e4m3_to_f32(static_cast<uint8_t>(c + 1));
    const float mid = (lo + hi) / 2;  // exact in fp32
    const int even = (c % 2 == 0) ? c : c + 1;
    EXPECT_EQ(f32_to_fp8e4m3(mid), even) << "tie between " << c << " and " << c + 1;
    EXPECT_EQ(f32_to_fp8e4m3(-mid), even | 0x80);
    EXPECT_EQ(f32_to_fp8e4m3(std::nextafter(mid, 0.0f)), c);
    EXPECT_EQ(f32_to_fp8e4m3(std::nextafter(mid, 1e9f)), c + 1);
  }
}

TEST(Fp8E4m3, SaturatesAndKeepsNaN) {
  EXPECT_EQ(f32_to_fp8e4m3(448.0f), 0x7e);
  EXPECT_EQ(f32_to_fp8e4m3(463.9f), 0x7e);
  EXPECT_EQ(f32_to_fp8e4m3(1e30f), 0x7e);
  EXPECT_EQ(f32_to_fp8e4m3(std::numeric_limits<float>::infinity()), 0x7e);
  EXPECT_EQ(f32_to_fp8e4m3(-std::numeric_limits<float>::infinity()), 0xfe);
  EXPECT_EQ(f32_to_fp8e4m3(std::nanf("")) & 0x7f, 0x7f);
  EXPECT_EQ(f32_to_fp8e4m3(1e-30f), 0x00);
  EXPECT_EQ(f32_to_fp8e4m3(-1e-30f), 0x80);
}

TEST(Fp8E4m3, RandomValuesMatchSlowNearestSearch) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> exponent(-12, 9.5);
  for (int i = 0; i < 200000; ++i) {
    const float x = std::exp2(exponent(rng)) * ((rng() & 1) ? 1.f : -1.f);
    const uint8_t code = f32_to_fp8e4m3(x);
    const double v = fp8e4m3_to_f32(code);
    const double clamped = std::max(-448.0, std::min(448.0, static_cast<double>(x)));
    // No other finite code is strictly nearer.
    for (int c = 0; c < 256; ++c) {
      if ((c & 0x7f) == 0x7f) continue;
      EXPECT_LE(std::fabs(v - clamped), std::fabs(fp8_value_by_definition(c) - clamped)) << x;
    }
    if (HasFailure()) break;
  }
}

TEST(Bf16, RoundsToNearestEven) {
  // Exhaustive over every bf16 code: decode, and the tie just above each value rounds to even.
  for (uint32_t b = 0; b < 0x10000; ++b) {
    const uint16_t code = static_cast<uint16_t>(b);
    const float v = bf16_to_f32(code);
    if (std::isnan(v)) {
      EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(v))));
      continue;
    }
    EXPECT_EQ(f32_to_bf16(v), code);
    if (std::isinf(v) || (code & 0x7fff) == 0x7f7f) continue;
    const uint32_t tie =
        (static_cast<uint32_t>(code) << 16) | 0x8000u;  // halfway to the next code up in magnitude
    const uint16_t want = (code & 1) ? static_cast<uint16_t>(code + 1) : code;
    EXPECT_EQ(f32_to_bf16(bits_float(tie)), want) << std::hex << code;
    EXPECT_EQ(f32_to_bf16(bits_float(tie + 1)), static_cast<uint16_t>(code + 1));
    EXPECT_EQ(f32_to_bf16(bits_float(tie - 1)), code);
  }
}

TEST(E8m0, DecodesEveryCode) {
  for (int c = 0; c < 255; ++c)
    EXPECT_EQ(static_cast<double>(e8m0_to_f32(static_cast<uint8_t>(c))), std::ldexp(1.0, c - 127)) << c;
  EXPECT_TRUE(std::isnan(e8m0_to_f32(0xff)));
}

TEST(E2m1, DecodesEveryCode) {
  const float table[8] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
  for (int c = 0; c < 16; ++c) {
    EXPECT_EQ(e2m1_to_f32(static_cast<uint8_t>(c)), (c & 8 ? -1 : 1) * table[c & 7]) << c;
    EXPECT_EQ(f32_to_e2m1(e2m1_to_f32(static_cast<uint8_t>(c))) & 7, c & 7);
  }
}

TEST(E2m1, TiesGoToEvenCodeAndValuesSaturate) {
  struct Case {
    float x;
    int code;
  } cases[] = {{0.25f, 0}, {0.26f, 1}, {0.75f, 2}, {0.74f, 1}, {1.25f, 2}, {1.26f, 3},
               {1.75f, 4}, {2.5f, 4},  {2.51f, 5}, {3.5f, 6},  {3.49f, 5}, {5.0f, 6},
               {5.01f, 7}, {6.0f, 7},  {100.f, 7}, {1e-9f, 0}};
  for (auto [x, code] : cases) {
    EXPECT_EQ(f32_to_e2m1(x), code) << x;
    EXPECT_EQ(f32_to_e2m1(-x), code | 8) << -x;
  }
}

}  // namespace
}  // namespace moe
