// The scalar F16/BF16 conversions used to write and check model files.
#include "runner/util/float16.h"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

namespace tandem {
namespace {

TEST(Float16, EveryFiniteHalfRoundTripsThroughFloat) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const auto half = static_cast<uint16_t>(h);
    const float f = float_from_half(half);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(float_from_half(half_from_float(f)))) << h;
      continue;
    }
    EXPECT_EQ(half_from_float(f), half) << h;
  }
}

TEST(Float16, KnownValuesDecode) {
  EXPECT_EQ(float_from_half(0x3c00), 1.0f);
  EXPECT_EQ(float_from_half(0xc000), -2.0f);
  EXPECT_EQ(float_from_half(0x7bff), 65504.0f);
  EXPECT_EQ(float_from_half(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(float_from_half(0x7c00), std::numeric_limits<float>::infinity());
}

TEST(Float16, RoundsToNearestEven) {
  // 1 + 2^-11 lies halfway between 1 and 1 + 2^-10: ties go to the even mantissa (1).
  EXPECT_EQ(half_from_float(1.0f + 0x1p-11f), 0x3c00);
  EXPECT_EQ(half_from_float(1.0f + 0x1p-11f + 0x1p-20f), 0x3c01);
  EXPECT_EQ(half_from_float(1.0f + 3 * 0x1p-11f), 0x3c02);  // halfway, odd below: up
  EXPECT_EQ(half_from_float(65519.0f), 0x7bff);
  EXPECT_EQ(half_from_float(65520.0f), 0x7c00);  // rounds to infinity
  EXPECT_EQ(half_from_float(0x1p-25f), 0x0000);  // halfway to the smallest subnormal: even
  EXPECT_EQ(half_from_float(0x1p-25f * 1.5f), 0x0001);
  EXPECT_EQ(half_from_float(-0.0f), 0x8000);
  EXPECT_EQ(half_from_float(1e-10f), 0x0000);
  EXPECT_EQ(half_from_float(std::numeric_limits<float>::quiet_NaN()) & 0x7c00, 0x7c00);
}

TEST(Float16, BfloatRoundsToNearestEvenAndKeepsNaN) {
  EXPECT_EQ(bfloat_from_float(1.0f), 0x3f80);
  EXPECT_EQ(float_from_bfloat(0x3f80), 1.0f);
  EXPECT_EQ(bfloat_from_float(1.0f + 0x1p-8f), 0x3f80);             // tie: even
  EXPECT_EQ(bfloat_from_float(1.0f + 3 * 0x1p-8f), 0x3f82);         // tie: even (up)
  EXPECT_EQ(bfloat_from_float(1.0f + 0x1p-8f + 0x1p-20f), 0x3f81);  // above the tie
  EXPECT_TRUE(std::isnan(float_from_bfloat(bfloat_from_float(std::nanf("")))));
}

}  // namespace
}  // namespace tandem
