// Philox4x32-10 against the Random123 known-answer vectors (tests/kat_vectors in
// github.com/DEShawResearch/random123, the three "philox4x32 10" lines), and the open-interval
// mapping's ends.
#include "runner/sampler/philox.h"

#include <gtest/gtest.h>

namespace tandem::TANDEM_UNITY_ID {
namespace {

using Words = std::array<uint32_t, 4>;

TEST(Philox, MatchesRandom123ForAllZeroCounterAndKey) {
  EXPECT_EQ(philox4x32_10({0, 0, 0, 0}, {0, 0}),
            (Words{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
}

TEST(Philox, MatchesRandom123ForAllOnesCounterAndKey) {
  EXPECT_EQ(
      philox4x32_10({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}),
      (Words{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
}

TEST(Philox, MatchesRandom123ForPiDigitsCounterAndKey) {
  EXPECT_EQ(
      philox4x32_10({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}),
      (Words{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(Philox, IsUsableAtCompileTime) {
  static_assert(philox4x32_10({0, 0, 0, 0}, {0, 0})[0] == 0x6627e8d5u);
}

TEST(Philox, UniformNeverReachesZeroOrOne) {
  EXPECT_EQ(uniform_open01(0u), 0x1p-24f);
  EXPECT_EQ(uniform_open01(0x1ffu), 0x1p-24f);  // the low 9 bits are dropped
  EXPECT_EQ(uniform_open01(0xffffffffu), 1.0f - 0x1p-24f);
  EXPECT_LT(uniform_open01(0xffffffffu), 1.0f);
  EXPECT_GT(uniform_open01(0u), 0.0f);
}

TEST(Philox, UniformIsEvenlySpacedOnTheOddMultiplesOf2ToTheMinus24) {
  for (uint32_t k : {1u, 2u, 12345u, (1u << 22), (1u << 23) - 1}) {
    EXPECT_EQ(uniform_open01(k << 9), static_cast<float>(2 * k + 1) * 0x1p-24f) << k;
  }
}

}  // namespace
}  // namespace tandem::TANDEM_UNITY_ID
