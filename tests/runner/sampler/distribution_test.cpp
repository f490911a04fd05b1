// The sampler draws from the right distribution: over 100,000 seeds, the empirical token
// frequencies match softmax(logits / T) restricted to the kept set and renormalized, within
// a total variation distance of 0.01, for plain sampling and each filter alone and combined.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "runner/sampler/sampler.h"
#include "tests/runner/sampler/distribution_support.h"
#include "tests/runner/sampler/reference.h"
#include "tests/runner/sampler/sampler_test_support.h"

namespace tandem::TANDEM_UNITY_ID {
namespace {

using Setting = testing::DistributionSetting;
using testing::normal_logits;

// Total variation between the empirical frequencies over 100,000 seeds and the reference.
double total_variation(const std::vector<float>& logits, const Setting& s) {
  SamplingParams params = s.params();
  const std::vector<double> expected = testing::reference_probs(logits, params);
  const auto n = static_cast<int32_t>(logits.size());
  Sampler sampler({n, {}});
  constexpr int kDraws = 100000;
  std::vector<int> hits(logits.size(), 0);
  std::vector<float> row;
  for (int d = 0; d < kDraws; ++d) {
    params.seed = static_cast<uint64_t>(d);
    row = logits;
    hits[sampler.sample(row, params, 11)] += 1;
  }
  return testing::total_variation(hits, kDraws, expected);
}

class SamplerDistribution : public ::testing::TestWithParam<Setting> {};

TEST_P(SamplerDistribution, MatchesTheRenormalizedSoftmaxOfTheKeptSet) {
  const std::vector<float> logits = normal_logits(32, 1.5f, 7);
  EXPECT_LE(total_variation(logits, GetParam()), 0.01);
}

INSTANTIATE_TEST_SUITE_P(Settings, SamplerDistribution,
                         ::testing::ValuesIn(testing::distribution_settings()),
                         [](const auto& info) { return "Setting" + std::to_string(info.index); });

// A vocabulary past one 64-id block of the vector path, with a ragged tail.
TEST(SamplerDistributionLargerVocabulary, MatchesTheSoftmaxWithAndWithoutTopP) {
  const std::vector<float> logits = normal_logits(203, 2.5f, 9);
  EXPECT_LE(total_variation(logits, {1.0f, 0, 1.0f, 0.0f}), 0.01);
  EXPECT_LE(total_variation(logits, {1.0f, 0, 0.9f, 0.0f}), 0.01);
}

}  // namespace
}  // namespace tandem::TANDEM_UNITY_ID
