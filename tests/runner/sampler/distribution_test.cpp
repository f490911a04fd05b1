// The sampler draws from the right distribution: over 100,000 seeds, the empirical token
// frequencies match softmax(logits / T) restricted to the kept set and renormalized, within
// a total variation distance of 0.01, for plain sampling and each filter alone and combined.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "runner/sampler/sampler.h"
#include "tests/runner/sampler/reference.h"
#include "tests/runner/sampler/sampler_test_support.h"

namespace tandem {
namespace {

struct Setting {
  float temperature;
  int32_t top_k;
  float top_p;
  float min_p;
};

using testing::normal_logits;

// Total variation between the empirical frequencies over 100,000 seeds and the reference.
double total_variation(const std::vector<float>& logits, const Setting& s) {
  SamplingParams params;
  params.temperature = s.temperature;
  params.top_k = s.top_k;
  params.top_p = s.top_p;
  params.min_p = s.min_p;
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
  double tv = 0.0;
  for (int32_t i = 0; i < n; ++i) tv += std::abs(double(hits[i]) / kDraws - expected[i]);
  return tv / 2.0;
}

class SamplerDistribution : public ::testing::TestWithParam<Setting> {};

TEST_P(SamplerDistribution, MatchesTheRenormalizedSoftmaxOfTheKeptSet) {
  const std::vector<float> logits = normal_logits(32, 1.5f, 7);
  EXPECT_LE(total_variation(logits, GetParam()), 0.01);
}

INSTANTIATE_TEST_SUITE_P(
    Settings, SamplerDistribution,
    ::testing::Values(Setting{1.0f, 0, 1.0f, 0.0f},     // plain: the dense Gumbel pass
                      Setting{0.5f, 0, 1.0f, 0.0f},     // sharper
                      Setting{2.0f, 0, 1.0f, 0.0f},     // flatter
                      Setting{0.7f, 5, 1.0f, 0.0f},     // top_k (5 kept)
                      Setting{1.3f, 0, 0.8f, 0.0f},     // top_p (8 kept)
                      Setting{1.5f, 0, 1.0f, 0.05f},    // min_p (8 kept)
                      Setting{1.5f, 12, 0.95f, 0.02f},  // all three; top_k binds (12 kept)
                      Setting{1.5f, 20, 0.7f, 0.01f},   // all three; top_p binds
                      Setting{1.2f, 6, 1.0f, 0.05f},    // top_k and min_p; min_p binds (4)
                      Setting{2.0f, 8, 0.95f, 0.0f}),   // top_k and top_p
    [](const auto& info) { return "Setting" + std::to_string(info.index); });

// A vocabulary past one 64-id block of the vector path, with a ragged tail.
TEST(SamplerDistributionLargerVocabulary, MatchesTheSoftmaxWithAndWithoutTopP) {
  const std::vector<float> logits = normal_logits(203, 2.5f, 9);
  EXPECT_LE(total_variation(logits, {1.0f, 0, 1.0f, 0.0f}), 0.01);
  EXPECT_LE(total_variation(logits, {1.0f, 0, 0.9f, 0.0f}), 0.01);
}

}  // namespace
}  // namespace tandem
