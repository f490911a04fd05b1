// The scalar F16/BF16 conversions (runner/util/float16.h): exact widening, round to
// nearest even when narrowing, infinities, subnormals, and the NaN rule (sign kept,
// always quiet, payload kept as far as it fits).
#include "runner/util/float16.h"

#include <bit>
#include <cmath>
#include <limits>

#include <gtest/gtest.h>

namespace tandem::TANDEM_UNITY_ID {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

uint32_t bits_of(float f) { return std::bit_cast<uint32_t>(f); }
float from_bits(uint32_t b) { return std::bit_cast<float>(b); }
bool half_is_nan(uint32_t h) { return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0; }
bool bfloat_is_nan(uint32_t b) { return (b & 0x7f80u) == 0x7f80u && (b & 0x7fu) != 0; }

TEST(Float16, EveryHalfWidensExactlyAndRoundTrips) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = float_from_half(static_cast<uint16_t>(h));
    if (half_is_nan(h)) {
      // Quiet, same sign, the 10-bit payload in the top of the float's, quiet bit set.
      ASSERT_EQ(bits_of(f), ((h & 0x8000u) << 16) | 0x7fc00000u | ((h & 0x3ffu) << 13))
          << std::hex << h;
      ASSERT_EQ(half_from_float(f), h | 0x200u) << std::hex << h;  // quiet NaNs: unchanged
      continue;
    }
    ASSERT_EQ(half_from_float(f), h) << std::hex << h;
  }
}

TEST(Float16, KnownHalvesDecode) {
  EXPECT_EQ(float_from_half(0x3c00), 1.0f);
  EXPECT_EQ(float_from_half(0xc000), -2.0f);
  EXPECT_EQ(float_from_half(0x7bff), 65504.0f);
  EXPECT_EQ(float_from_half(0x0001), 0x1p-24f);    // smallest subnormal
  EXPECT_EQ(float_from_half(0x03ff), 0x3ffp-24f);  // largest subnormal
  EXPECT_EQ(float_from_half(0x8001), -0x1p-24f);
  EXPECT_EQ(float_from_half(0x0400), 0x1p-14f);  // smallest normal
  EXPECT_EQ(float_from_half(0x7c00), kInf);
  EXPECT_EQ(float_from_half(0xfc00), -kInf);
  EXPECT_EQ(bits_of(float_from_half(0x8000)), 0x80000000u);  // -0 keeps its sign
  EXPECT_EQ(bits_of(float_from_half(0x0000)), 0u);
}

// For every pair of neighbouring finite halves: the midpoint rounds to the even one,
// and anything a hair off the midpoint rounds to the nearer one (subnormals included).
TEST(Float16, FloatToHalfRoundsToNearestEven) {
  for (uint32_t h = 0; h < 0x7c00; ++h) {
    const float lo = float_from_half(static_cast<uint16_t>(h));
    const float hi = float_from_half(static_cast<uint16_t>(h + 1));  // 0x7c00 is +inf
    const float mid = h + 1 == 0x7c00 ? 65520.f : (lo + hi) / 2;     // exact in F32
    const uint32_t even = (h & 1) == 0 ? h : h + 1;
    ASSERT_EQ(half_from_float(mid), even) << std::hex << h;
    ASSERT_EQ(half_from_float(-mid), even | 0x8000u) << std::hex << h;
    ASSERT_EQ(half_from_float(std::nextafter(mid, 0.f)), h) << std::hex << h;
    ASSERT_EQ(half_from_float(std::nextafter(mid, 1e30f)), h + 1) << std::hex << h;
  }
}

TEST(Float16, FloatToHalfEdges) {
  EXPECT_EQ(half_from_float(1.0f + 0x1p-11f), 0x3c00);      // tie: even (down)
  EXPECT_EQ(half_from_float(1.0f + 3 * 0x1p-11f), 0x3c02);  // tie: even (up)
  EXPECT_EQ(half_from_float(65519.0f), 0x7bff);
  EXPECT_EQ(half_from_float(65520.0f), 0x7c00);  // rounds to infinity
  EXPECT_EQ(half_from_float(1e10f), 0x7c00);
  EXPECT_EQ(half_from_float(kInf), 0x7c00);
  EXPECT_EQ(half_from_float(-kInf), 0xfc00);
  EXPECT_EQ(half_from_float(0x1p-25f), 0x0000);  // halfway to the smallest subnormal: even
  EXPECT_EQ(half_from_float(0x1p-25f * 1.5f), 0x0001);
  EXPECT_EQ(half_from_float(3 * 0x1p-25f), 0x0002);         // subnormal tie, odd below: up
  EXPECT_EQ(half_from_float(0x1p-14f - 0x1p-26f), 0x0400);  // carries into the exponent
  EXPECT_EQ(half_from_float(-0.0f), 0x8000);
  EXPECT_EQ(half_from_float(1e-10f), 0x0000);  // below half the smallest subnormal
  EXPECT_EQ(half_from_float(-1e-10f), 0x8000);
  EXPECT_EQ(half_from_float(std::numeric_limits<float>::denorm_min()), 0x0000);
}

TEST(Float16, FloatNaNsBecomeQuietHalfNaNs) {
  EXPECT_EQ(half_from_float(std::numeric_limits<float>::quiet_NaN()), 0x7e00);
  EXPECT_EQ(half_from_float(-std::numeric_limits<float>::quiet_NaN()), 0xfe00);
  EXPECT_EQ(half_from_float(from_bits(0x7f800001u)), 0x7e00);  // payload below the half's
  EXPECT_EQ(half_from_float(from_bits(0xff800001u)), 0xfe00);
  EXPECT_EQ(half_from_float(from_bits(0x7fa00000u)), 0x7f00);  // signalling: made quiet
  EXPECT_EQ(half_from_float(from_bits(0x7fffffffu)), 0x7fff);  // the payload's top bits
  EXPECT_EQ(half_from_float(from_bits(0x7fc02000u)), 0x7e01);
}

TEST(Float16, EveryBfloatWidensExactlyAndRoundTrips) {
  for (uint32_t b = 0; b < 0x10000; ++b) {
    const float f = float_from_bfloat(static_cast<uint16_t>(b));
    if (bfloat_is_nan(b)) {
      ASSERT_EQ(bits_of(f), (b << 16) | 0x400000u) << std::hex << b;  // made quiet
      ASSERT_EQ(bfloat_from_float(f), b | 0x40u) << std::hex << b;    // quiet NaNs: unchanged
      continue;
    }
    ASSERT_EQ(bits_of(f), b << 16) << std::hex << b;
    ASSERT_EQ(bfloat_from_float(f), b) << std::hex << b;
  }
}

// For every bfloat below infinity: the midpoint to the next one up in magnitude rounds
// to the even one, a hair either side to the nearer one (subnormals included).
TEST(Float16, FloatToBfloatRoundsToNearestEven) {
  for (uint32_t b = 0; b < 0x10000; ++b) {
    if ((b & 0x7fffu) >= 0x7f80u) continue;  // inf and NaN: no finite neighbour above
    const uint32_t mid = (b << 16) | 0x8000u;
    const uint32_t even = (b & 1) == 0 ? b : b + 1;
    ASSERT_EQ(bfloat_from_float(from_bits(mid)), even) << std::hex << b;
    ASSERT_EQ(bfloat_from_float(from_bits(mid - 1)), b) << std::hex << b;
    ASSERT_EQ(bfloat_from_float(from_bits(mid + 1)), b + 1) << std::hex << b;
  }
}

TEST(Float16, FloatToBfloatEdges) {
  EXPECT_EQ(bfloat_from_float(1.0f), 0x3f80);
  EXPECT_EQ(bfloat_from_float(1.0f + 0x1p-8f), 0x3f80);             // tie: even
  EXPECT_EQ(bfloat_from_float(1.0f + 3 * 0x1p-8f), 0x3f82);         // tie: even (up)
  EXPECT_EQ(bfloat_from_float(1.0f + 0x1p-8f + 0x1p-20f), 0x3f81);  // above the tie
  EXPECT_EQ(bfloat_from_float(from_bits(0x7f7fffffu)), 0x7f80);     // FLT_MAX rounds to inf
  EXPECT_EQ(bfloat_from_float(kInf), 0x7f80);
  EXPECT_EQ(bfloat_from_float(-kInf), 0xff80);
  EXPECT_EQ(bfloat_from_float(-0.0f), 0x8000);
  EXPECT_EQ(bfloat_from_float(std::numeric_limits<float>::denorm_min()), 0x0000);
  EXPECT_EQ(bfloat_from_float(from_bits(0x00018000u)), 0x0002);  // subnormal tie: even
  EXPECT_EQ(float_from_bfloat(0x0001), from_bits(0x00010000u));  // subnormals widen exactly
}

TEST(Float16, FloatNaNsBecomeQuietBfloatNaNs) {
  EXPECT_EQ(bfloat_from_float(std::numeric_limits<float>::quiet_NaN()), 0x7fc0);
  EXPECT_EQ(bfloat_from_float(-std::numeric_limits<float>::quiet_NaN()), 0xffc0);
  EXPECT_EQ(bfloat_from_float(from_bits(0x7f800001u)), 0x7fc0);  // not infinity
  EXPECT_EQ(bfloat_from_float(from_bits(0x7f810000u)), 0x7fc1);  // signalling: made quiet
  EXPECT_EQ(bfloat_from_float(from_bits(0xffffffffu)), 0xffff);  // no rounding carry
}

}  // namespace
}  // namespace tandem::TANDEM_UNITY_ID
