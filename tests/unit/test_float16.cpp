#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "tensor/float16.h"

using namespace mpa;

TEST(Float16, IeeeCornerCasesRoundToNearestEven) {
  EXPECT_EQ(float_to_half(1.0f), 0x3C00);
  EXPECT_EQ(float_to_half(65504.f), 0x7BFF);
  EXPECT_EQ(float_to_half(65519.f), 0x7BFF);  // below the halfway point to 2^16
  EXPECT_EQ(float_to_half(65520.f), 0x7C00);  // ties to even: rounds to Inf
  EXPECT_EQ(float_to_half(-0.0f), 0x8000);
  EXPECT_EQ(float_to_half(std::ldexp(1.f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(float_to_half(std::ldexp(1.f, -25)), 0x0000);  // tie rounds to even zero
  EXPECT_EQ(float_to_half(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(float_to_half(std::ldexp(1.f, -14)), 0x0400);  // smallest normal
  EXPECT_EQ(float_to_half(1.0f + std::ldexp(1.f, -11)), 0x3C00);  // tie to even (down)
  EXPECT_EQ(float_to_half(1.0f + 3 * std::ldexp(1.f, -11)), 0x3C02);  // tie to even (up)
  EXPECT_EQ(float_to_half(std::numeric_limits<float>::infinity()), 0x7C00);
  EXPECT_TRUE(std::isnan(half_to_float(float_to_half(std::nanf("")))));
}

TEST(Float16, EveryHalfRoundTripsThroughFloat) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = half_to_float(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    EXPECT_EQ(float_to_half(f), h) << std::hex << h;
  }
}

TEST(BFloat16, RoundsToNearestEvenAndKeepsNaN) {
  EXPECT_EQ(float_to_bfloat16(1.0f), 0x3F80);
  EXPECT_EQ(float_to_bfloat16(bits_float(0x3F808000u)), 0x3F80);  // tie, even stays
  EXPECT_EQ(float_to_bfloat16(bits_float(0x3F818000u)), 0x3F82);  // tie, odd rounds up
  EXPECT_EQ(float_to_bfloat16(bits_float(0x7F7FFFFFu)), 0x7F80);  // FLT_MAX -> Inf
  EXPECT_TRUE(std::isnan(bfloat16_to_float(float_to_bfloat16(std::nanf("")))));
}
