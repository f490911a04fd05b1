// llama.cpp's top-n-sigma in the fused sampler (runner/sampler/top_n_sigma.h): its cut against
// a plain two-pass computation, llama.cpp's own test vectors (test-sampling.cpp's
// test_top_n_sigma), and the token for token reference with the other filters in vLLM's
// order (llama.cpp's orders: chain_order_test.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "runner/sampler/sampler.h"
#include "runner/sampler/top_n_sigma.h"
#include "tests/runner/sampler/reference.h"
#include "tests/runner/sampler/sampler_test_support.h"

namespace tandem::TANDEM_UNITY_ID {
namespace {

TEST(SamplerTopNSigma, TheCutIsNSigmasOfTheFiniteLogits) {
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(-2.0f, 3.0f);
  for (int round = 0; round < 50; ++round) {
    std::vector<float> z(1 + rng() % 5000);
    for (float& v : z) v = normal(rng);
    for (size_t i = 0; i < z.size(); i += 7) z[i] = -INFINITY;  // banned
    if (z.size() > 3) z[3] = NAN;
    double sum = 0, count = 0, squares = 0;
    for (float v : z) {
      if (!std::isfinite(v)) continue;
      sum += v;
      count += 1;
    }
    const double mean = count > 0 ? sum / count : 0.0;
    for (float v : z) {
      if (std::isfinite(v)) squares += (v - mean) * (v - mean);
    }
    const double sigma = count > 0 ? std::sqrt(squares / count) : 0.0;
    const float n = 0.5f + static_cast<float>(round % 4);
    EXPECT_NEAR(sampler_sigma::cut(z, n), -n * sigma, 1e-5 * std::max(1.0, n * sigma))
        << "round " << round;
  }
  EXPECT_EQ(sampler_sigma::cut(std::vector<float>{-INFINITY, -INFINITY}, 1.0f), 0.0f);
}

// test_top_n_sigma's cases: probabilities in, the kept set's renormalized probabilities out.
TEST(SamplerTopNSigma, MatchesLlamaCppsTestVectors) {
  const std::vector<float> probs = {0.1f, 0.2f, 0.3f, 0.4f};
  std::vector<float> logits;
  for (float p : probs) logits.push_back(std::log(p));
  struct Case {
    float n;
    std::vector<double> expected;
  };
  const std::vector<Case> cases = {{1.0f, {0.0, 0.0, 0.428571, 0.571429}},
                                   {0.0f, {0.1, 0.2, 0.3, 0.4}},  // 0: off
                                   {3.0f, {0.1, 0.2, 0.3, 0.4}}};
  Sampler sampler({4, {}});
  for (const Case& c : cases) {
    SamplingParams p;
    p.top_n_sigma = c.n;
    EXPECT_LT(testing::drawn_total_variation(sampler, logits, p, 5, {}, c.expected), 0.01)
        << "n " << c.n;
  }
}

TEST(SamplerTopNSigma, TokensAreTheReferencesBesideTheOtherFilters) {
  std::mt19937 rng(9);
  for (const char* isa : {static_cast<const char*>(nullptr), "portable"}) {
    auto sampler = testing::sampler_with_isa(isa, {3000, {}});
    int cut_something = 0;
    for (int r = 0; r < 40; ++r) {
      std::vector<float> logits = testing::normal_logits(3000, 2.0f + float(r % 3), 100 + r);
      for (size_t i = 0; i < logits.size(); i += 11) logits[i] = -INFINITY;
      SamplingParams p =
          testing::sampling_with(std::vector<float>{0.6f, 1.0f, 1.7f}[r % 3], r % 4 == 1 ? 50 : 0,
                                 r % 5 == 2 ? 0.9f : 1.0f, r % 6 == 3 ? 0.01f : 0.0f);
      p.top_n_sigma = std::vector<float>{0.5f, 1.0f, 2.0f, 3.0f}[r % 4];
      p.seed = 40 + static_cast<uint64_t>(r);
      cut_something += testing::reference_kept(logits, p).size() < 2700;
      for (int64_t position = 0; position < 6; ++position) {
        std::vector<float> row = logits;
        ASSERT_EQ(sampler->sample(row, p, position), testing::reference_token(logits, p, position))
            << "row " << r << " position " << position << " isa " << (isa ? isa : "default");
      }
    }
    EXPECT_GT(cut_something, 30);
  }
}

// A small n keeps the top token alone: every seed draws it.
TEST(SamplerTopNSigma, ASmallNKeepsTheTopTokenAlone) {
  Sampler sampler({8, {}});
  std::vector<float> logits = {0, 0, 0, 0, 0, 0, 0, 5};
  SamplingParams p;
  p.top_n_sigma = 0.1f;
  for (uint64_t seed = 0; seed < 50; ++seed) {
    p.seed = seed;
    std::vector<float> row = logits;
    EXPECT_EQ(sampler.sample(row, p, 1), 7);
  }
}

}  // namespace
}  // namespace tandem::TANDEM_UNITY_ID
