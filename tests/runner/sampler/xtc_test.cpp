// XTC (runner/sampler/xtc.h) in the fused sampler against a reference written from
// llama.cpp's description: the draw from philox with the documented counter, the kept set's
// probabilities in double, the top choices dropped in rank order but the last of them, then
// the Gumbel draw over what is left; and the distribution over many seeds against the
// mixture of the two outcomes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "runner/sampler/philox.h"
#include "runner/sampler/sampler.h"
#include "runner/sampler/xtc.h"
#include "tests/runner/sampler/reference.h"
#include "tests/runner/sampler/sampler_test_support.h"

namespace tandem::TANDEM_UNITY_ID {
namespace {

using testing::normal_logits;

bool reference_fires(float probability, uint64_t seed, int64_t position) {
  const auto pos = static_cast<uint64_t>(position);
  const auto words = philox4x32_10({0u, 1u, uint32_t(pos), uint32_t(pos >> 32)},
                                   {uint32_t(seed), uint32_t(seed >> 32)});
  return (double(words[0] >> 9) + 0.5) / double(1 << 23) <= probability;
}

// What XTC leaves of a kept set (rank order) when it fires, and how close a probability
// came to the threshold (cases within float rounding of it are not compared exactly).
std::vector<int32_t> reference_after(const std::vector<float>& z, const std::vector<int32_t>& kept,
                                     float threshold, double* margin) {
  double sum = 0.0;
  for (int32_t id : kept) sum += std::exp(double(z[id]) - double(z[kept.front()]));
  size_t reaching = 0;
  *margin = 1.0;
  for (int32_t id : kept) {
    const double p = std::exp(double(z[id]) - double(z[kept.front()])) / sum;
    *margin = std::min(*margin, std::abs(p - threshold));
    reaching += p >= threshold;
  }
  if (reaching < 2) return kept;
  return {kept.begin() + static_cast<std::ptrdiff_t>(reaching - 1), kept.end()};
}

SamplingParams xtc(float probability, float threshold) {
  SamplingParams p;
  p.temperature = 0.9f;
  p.xtc_probability = probability;
  p.xtc_threshold = threshold;
  return p;
}

TEST(SamplerXtc, TokensAreTheReferencesOverSeedsAndFilters) {
  const int32_t n = 96;
  Sampler sampler({n, {}});
  int compared = 0, fired = 0, changed = 0;
  for (uint32_t round = 0; round < 3000; ++round) {
    const std::vector<float> logits = normal_logits(n, 2.5f, round);
    SamplingParams p = xtc(std::vector<float>{0.3f, 0.7f, 1.0f}[round % 3],
                           std::vector<float>{0.05f, 0.1f, 0.2f}[round / 3 % 3]);
    if (round % 4 == 1) p.top_k = 10;
    if (round % 4 == 2) p.min_p = 0.05f;
    if (round % 4 == 3) p.top_p = 0.9f;
    p.seed = 77 + round;
    const int64_t position = round * 13;
    const std::vector<float> z = testing::tempered(logits, p.temperature);
    const std::vector<int32_t> kept = testing::reference_kept(logits, p);
    std::vector<int32_t> left = kept;
    double margin = 1.0;
    if (reference_fires(p.xtc_probability, p.seed, position)) {
      left = reference_after(z, kept, p.xtc_threshold, &margin);
      ++fired;
    }
    if (margin < 1e-5) continue;  // within float rounding of the threshold
    const int32_t want = testing::gumbel_token(z, left, p.seed, position);
    std::vector<float> row = logits;
    ASSERT_EQ(sampler.sample(row, p, position), want) << "round " << round;
    ++compared;
    changed += want != testing::gumbel_token(z, kept, p.seed, position);
  }
  EXPECT_GT(compared, 2900);
  EXPECT_GT(fired, 1500);
  EXPECT_GT(changed, 300);  // the exclusion did change tokens
}

// Greedy with XTC: the best token of what the filters and XTC leave of the raw logits (as
// llama.cpp's greedy keeps the best its chain leaves), without XTC the plain argmax.
TEST(SamplerXtc, GreedyTakesTheBestTokenXtcLeaves) {
  const int32_t n = 64;
  Sampler sampler({n, {}});
  int second = 0;
  for (uint32_t round = 0; round < 600; ++round) {
    const std::vector<float> logits = normal_logits(n, 2.0f, round);
    SamplingParams p = xtc(round % 2 == 0 ? 1.0f : 0.5f, 0.05f);
    if (round % 3 == 1) p.top_k = 5;
    p.seed = round;
    const int64_t position = round;
    SamplingParams raw = p;
    raw.temperature = 1.0f;  // the reference's kept set, of the raw logits
    const std::vector<int32_t> kept = testing::reference_kept(logits, raw);
    std::vector<int32_t> left = kept;
    double margin = 1.0;
    if (reference_fires(p.xtc_probability, p.seed, position)) {
      left = reference_after(logits, kept, p.xtc_threshold, &margin);
    }
    if (margin < 1e-5) continue;
    p.temperature = 0.0f;
    std::vector<float> row = logits;
    ASSERT_EQ(sampler.sample(row, p, position), left.front()) << "round " << round;
    second += left.front() != kept.front();
  }
  EXPECT_GT(second, 100);  // XTC did move greedy off the top token
}

// XTC draws fire at its probability, keyed by seed and position only.
TEST(SamplerXtc, FiresAtItsProbability) {
  int fired = 0;
  for (int64_t position = 0; position < 100000; ++position) {
    const bool f = sampler_xtc::fires(0.3f, 5, position);
    ASSERT_EQ(f, reference_fires(0.3f, 5, position));
    fired += f;
  }
  EXPECT_NEAR(fired / 100000.0, 0.3, 0.01);
  EXPECT_TRUE(sampler_xtc::fires(1.0f, 9, 3));
}

TEST(SamplerXtc, KeepsTheLeastLikelyOfTheTopChoicesAndNeedsTwo) {
  std::vector<uint8_t> drop;
  const auto mark = [&](std::vector<float> z, std::vector<int32_t> ids, float threshold) {
    return sampler_xtc::mark_top_choices(z, ids, threshold, drop);
  };
  // p ~ {0.50, 0.03, 0.46, 0.02}: the first and third reach 0.1, the third stays.
  EXPECT_TRUE(mark({3.0f, 0.0f, 2.9f, -0.5f}, {4, 7, 9, 1}, 0.1f));
  EXPECT_EQ(drop, (std::vector<uint8_t>{1, 0, 0, 0}));
  // Tied top choices: the highest id stays.
  EXPECT_TRUE(mark({1.0f, 1.0f, 1.0f}, {5, 2, 8}, 0.2f));
  EXPECT_EQ(drop, (std::vector<uint8_t>{1, 1, 0}));
  // One token reaching the threshold: nothing is dropped.
  EXPECT_FALSE(mark({5.0f, 0.0f, 0.0f}, {0, 1, 2}, 0.1f));
  EXPECT_EQ(drop, (std::vector<uint8_t>{0, 0, 0}));
  EXPECT_FALSE(xtc(0.5f, 0.6f).xtc_on());  // two tokens cannot both reach 0.6
  EXPECT_FALSE(xtc(0.0f, 0.1f).xtc_on());
}

// The empirical distribution over 100,000 seeds is the mixture: with the probability, the
// kept set without its top choices; otherwise the kept set.
TEST(SamplerXtc, SamplingFollowsTheMixture) {
  const int32_t n = 24;
  const std::vector<float> logits = normal_logits(n, 1.2f, 11);
  SamplingParams p = xtc(0.4f, 0.08f);
  p.top_k = 12;
  const std::vector<float> z = testing::tempered(logits, p.temperature);
  const std::vector<int32_t> kept = testing::reference_kept(logits, p);
  double margin = 1.0;
  const std::vector<int32_t> left = reference_after(z, kept, p.xtc_threshold, &margin);
  ASSERT_LT(left.size(), kept.size());  // the case excludes something
  auto softmax_over = [&](const std::vector<int32_t>& ids) {
    std::vector<double> q(n, 0.0);
    double sum = 0.0;
    for (int32_t id : ids) sum += q[id] = std::exp(double(z[id]));
    for (double& v : q) v /= sum;
    return q;
  };
  const std::vector<double> base = softmax_over(kept), excluded = softmax_over(left);
  std::vector<double> mixture(n);
  for (int32_t i = 0; i < n; ++i) {
    mixture[i] = p.xtc_probability * excluded[i] + (1.0 - p.xtc_probability) * base[i];
  }
  Sampler sampler({n, {}});
  EXPECT_LE(testing::drawn_total_variation(sampler, logits, p, 3, {}, mixture), 0.01);
}

}  // namespace
}  // namespace tandem::TANDEM_UNITY_ID
