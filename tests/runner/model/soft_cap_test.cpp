// Gemma 2's soft-capping without libm's scalar tanhf (runner/model/soft_cap.h): within a few
// float ulp of tanh in double across the range, exact at the edges, the same bits with the
// AVX-512 and the AVX2 exp (TANDEM_ISA), and the pre-scale applied as the attention's was.
#include <cmath>
#include <cstdlib>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "runner/model/soft_cap.h"

namespace tandem::TANDEM_UNITY_ID {
namespace {

std::vector<float> sample_values() {
  std::vector<float> x;
  std::mt19937 rng(7);
  std::normal_distribution<float> wide(0.0f, 40.0f);
  for (int i = 0; i < 20000; ++i) x.push_back(wide(rng));
  // Around the branch point (|t| = 0.625 at cap 30 is |x| = 18.75), near 0 and far out.
  for (float v = -20.0f; v <= 20.0f; v += 0.001953125f) x.push_back(v);
  for (float v : {0.0f, -0.0f, 1e-30f, -1e-7f, 1e-3f, 18.75f, -18.75f, 1e4f, -1e30f})
    x.push_back(v);
  return x;
}

TEST(SoftCap, IsWithinAFewUlpOfTanhInDouble) {
  const float cap = 30.0f;
  std::vector<float> x = sample_values();
  const std::vector<float> in = x;
  soft_cap(x.data(), static_cast<int64_t>(x.size()), cap);
  for (size_t i = 0; i < x.size(); ++i) {
    const double want = cap * std::tanh(static_cast<double>(in[i]) / cap);
    // 4 ulp of the result, and a floor for results near 0 (the division's rounding).
    const double bound = 4 * std::abs(want) * std::numeric_limits<float>::epsilon() + 1e-37;
    ASSERT_LE(std::abs(x[i] - want), bound) << "x = " << in[i] << ": " << x[i] << " vs " << want;
    ASSERT_EQ(std::signbit(x[i]), std::signbit(in[i])) << in[i];
  }
  float edges[] = {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity()};
  soft_cap(edges, 2, cap);
  EXPECT_EQ(edges[0], cap);
  EXPECT_EQ(edges[1], -cap);
}

TEST(SoftCap, AppliesThePreScaleFirst) {
  std::vector<float> a = sample_values(), b = a;
  soft_cap(a.data(), static_cast<int64_t>(a.size()), 50.0f, 0.125f);
  for (float& v : b) v *= 0.125f;  // a power of two: the product is exact either way
  soft_cap(b.data(), static_cast<int64_t>(b.size()), 50.0f);
  EXPECT_EQ(a, b);
  std::vector<float> c = {1.0f, 2.0f};
  soft_cap(c.data(), 2, 0.0f);  // no cap: untouched
  EXPECT_EQ(c, (std::vector<float>{1.0f, 2.0f}));
}

TEST(SoftCap, GivesTheSameBitsOnEveryIsa) {
  std::vector<float> wide = sample_values(), narrow = wide;
  soft_cap(wide.data(), static_cast<int64_t>(wide.size()), 30.0f);
  ::setenv("TANDEM_ISA", "avx2", 1);
  soft_cap(narrow.data(), static_cast<int64_t>(narrow.size()), 30.0f);
  ::unsetenv("TANDEM_ISA");
  EXPECT_EQ(wide, narrow);
}

}  // namespace
}  // namespace tandem::TANDEM_UNITY_ID
