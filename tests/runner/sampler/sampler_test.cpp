// The fused sampler's contract (runner/sampler.h): exact keep sets of top-k, top-p and min-p,
// greedy ties, logit_bias and ignore_eos, determinism in (seed, position), independence from
// the other rows, and agreement with a full-sort reference on real-sized vocabularies.
#include "runner/sampler/sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <set>

#include "tests/runner/sampler/reference.h"
#include "tests/runner/sampler/sampler_test_support.h"

namespace tandem::TANDEM_UNITY_ID {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

using testing::sampling_with;

// Logits whose softmax at T = 1 is exactly proportional to `probs`.
std::vector<float> from_probs(std::initializer_list<float> probs) {
  std::vector<float> logits;
  for (float p : probs) logits.push_back(p > 0 ? std::log(p) : -kInf);
  return logits;
}

int32_t draw(Sampler& sampler, std::vector<float> logits, const SamplingParams& params,
             int64_t position = 7) {
  return sampler.sample(logits, params, position);
}

// Every token drawn over `seeds` seeds: for crafted rows whose kept tokens all have a
// sizable probability, this is the keep set.
std::set<int32_t> drawn(const std::vector<float>& logits, SamplingParams params, int seeds = 3000) {
  Sampler sampler({static_cast<int32_t>(logits.size()), {}});
  std::set<int32_t> seen;
  for (int s = 0; s < seeds; ++s) {
    params.seed = 0x9e3779b97f4a7c15ull * static_cast<uint64_t>(s + 1);
    seen.insert(draw(sampler, logits, params));
  }
  return seen;
}

using testing::normal_logits;

TEST(Sampler, TopKKeepsExactlyKTokens) {
  const std::vector<float> logits = {0.1f, 2.0f, 0.5f, 1.9f, -1.0f, 1.8f, 0.0f};
  EXPECT_EQ(drawn(logits, sampling_with(1.0f, 3)), (std::set<int32_t>{1, 3, 5}));
  EXPECT_EQ(drawn(logits, sampling_with(5.0f, 1)), (std::set<int32_t>{1}));
}

TEST(Sampler, TopKTiesAtTheKthPlaceGoToTheLowestIds) {
  const std::vector<float> logits = {1.0f, 5.0f, 3.0f, 3.0f, 3.0f, 0.0f};
  EXPECT_EQ(drawn(logits, sampling_with(1.0f, 2)), (std::set<int32_t>{1, 2}));
  EXPECT_EQ(drawn(logits, sampling_with(1.0f, 3)), (std::set<int32_t>{1, 2, 3}));
  EXPECT_EQ(drawn(logits, sampling_with(1.0f, 4)), (std::set<int32_t>{1, 2, 3, 4}));
}

TEST(Sampler, TopKAtOrAboveTheVocabularyIsOff) {
  const std::vector<float> logits = {0.0f, 0.3f, -0.2f, 0.1f};
  const std::set<int32_t> all = {0, 1, 2, 3};
  EXPECT_EQ(drawn(logits, sampling_with(1.0f, 4)), all);
  EXPECT_EQ(drawn(logits, sampling_with(1.0f, 1000)), all);
  EXPECT_EQ(drawn(logits, sampling_with(1.0f, 0)), all);
}

TEST(Sampler, MinusInfinityTokensAreNeverKept) {
  const std::vector<float> logits = {-kInf, 0.0f, -kInf, 0.2f, -kInf};
  EXPECT_EQ(drawn(logits, sampling_with(1.0f, 4)), (std::set<int32_t>{1, 3}));
  EXPECT_EQ(drawn(logits, sampling_with(1.0f)), (std::set<int32_t>{1, 3}));
  EXPECT_EQ(drawn(logits, sampling_with(1.0f, 0, 0.99f)), (std::set<int32_t>{1, 3}));
  EXPECT_EQ(drawn(logits, sampling_with(1.0f, 0, 1.0f, 0.01f)), (std::set<int32_t>{1, 3}));
}

TEST(Sampler, NaNLogitsAreNeverSampled) {
  const std::vector<float> logits = {kNaN, 0.0f, kNaN, 0.1f};
  EXPECT_EQ(drawn(logits, sampling_with(1.0f)), (std::set<int32_t>{1, 3}));
  EXPECT_EQ(drawn(logits, sampling_with(1.0f, 3, 0.99f, 0.01f)), (std::set<int32_t>{1, 3}));
  Sampler sampler({4, {}});
  EXPECT_EQ(draw(sampler, logits, sampling_with(0.0f)), 3);
}

TEST(Sampler, TopPKeepsTheShortestPrefixReachingP) {
  // Probabilities 0.1, 0.5, 0.15, 0.25 by id; rank order 1, 3, 2, 0.
  const std::vector<float> logits = from_probs({0.1f, 0.5f, 0.15f, 0.25f});
  EXPECT_EQ(drawn(logits, sampling_with(1.0f, 0, 0.4f)), (std::set<int32_t>{1}));
  EXPECT_EQ(drawn(logits, sampling_with(1.0f, 0, 0.7f)), (std::set<int32_t>{1, 3}));
  EXPECT_EQ(drawn(logits, sampling_with(1.0f, 0, 0.8f)), (std::set<int32_t>{1, 3, 2}));
  EXPECT_EQ(drawn(logits, sampling_with(1.0f, 0, 0.95f)), (std::set<int32_t>{0, 1, 2, 3}));
}

TEST(Sampler, TopPTiesBeyondTheCutGoToTheLowestIds) {
  const std::vector<float> logits = from_probs({0.2f, 0.2f, 0.4f, 0.2f});
  EXPECT_EQ(drawn(logits, sampling_with(1.0f, 0, 0.5f)), (std::set<int32_t>{0, 2}));
  EXPECT_EQ(drawn(logits, sampling_with(1.0f, 0, 0.7f)), (std::set<int32_t>{0, 1, 2}));
}

TEST(Sampler, TopPIsComputedOnTheTemperedDistribution) {
  // At T = 1 the top token holds 0.5 of the mass; at T = 0.5 it holds 0.25/(0.25+0.0625*2).
  const std::vector<float> logits = from_probs({0.5f, 0.25f, 0.25f});
  EXPECT_EQ(drawn(logits, sampling_with(1.0f, 0, 0.6f)), (std::set<int32_t>{0, 1}));
  EXPECT_EQ(drawn(logits, sampling_with(0.5f, 0, 0.6f)), (std::set<int32_t>{0}));
}

TEST(Sampler, MinPKeepsTokensAboveTheFractionOfTheTopOne) {
  const std::vector<float> logits = from_probs({0.1f, 0.5f, 0.15f, 0.25f});
  EXPECT_EQ(drawn(logits, sampling_with(1.0f, 0, 1.0f, 0.31f)), (std::set<int32_t>{1, 3}));
  EXPECT_EQ(drawn(logits, sampling_with(1.0f, 0, 1.0f, 0.29f)), (std::set<int32_t>{1, 2, 3}));
  EXPECT_EQ(drawn(logits, sampling_with(1.0f, 0, 1.0f, 0.9f)), (std::set<int32_t>{1}));
}

TEST(Sampler, MinPKeepsOrDropsTiedTokensTogether) {
  const std::vector<float> logits = from_probs({0.2f, 0.2f, 0.4f, 0.2f});
  EXPECT_EQ(drawn(logits, sampling_with(1.0f, 0, 1.0f, 0.45f)), (std::set<int32_t>{0, 1, 2, 3}));
  EXPECT_EQ(drawn(logits, sampling_with(1.0f, 0, 1.0f, 0.55f)), (std::set<int32_t>{2}));
}

// vLLM's order: min_p, then top_k, then top_p over what they left, renormalized. They had
// composed as an intersection, top_p taking p of the whole vocabulary's mass, which kept
// more than vLLM and llama-server keep (the first two cases).
TEST(Sampler, TopPWeighsWhatMinPAndTopKLeft) {
  const std::vector<float> logits = from_probs({0.1f, 0.5f, 0.15f, 0.25f});
  // top_k 2 leaves {1, 3}: 0.5 of their 0.75 is 0.67, past 0.6. (Of the whole: 0.5 < 0.6.)
  EXPECT_EQ(drawn(logits, sampling_with(1.0f, 2, 0.6f)), (std::set<int32_t>{1}));
  // min_p 0.29 leaves {1, 3, 2}, 0.9: 0.75 reaches 0.8 of it. (Of the whole it takes three.)
  EXPECT_EQ(drawn(logits, sampling_with(1.0f, 0, 0.8f, 0.29f)), (std::set<int32_t>{1, 3}));
  // Both: min_p 0.29 then top_k 3 leave {1, 3, 2}; top_p 0.5 of 0.9 is reached by 1 alone.
  EXPECT_EQ(drawn(logits, sampling_with(1.0f, 3, 0.5f, 0.29f)), (std::set<int32_t>{1}));
  // A large vocabulary whose tail holds most of the mass: top_k 2 with top_p 0.5 keeps the
  // nucleus of the two (the first alone), never the tail, whatever the seed.
  std::vector<float> tail(1000, -2.0f);
  tail[7] = 0.0f;
  tail[3] = -0.1f;
  EXPECT_EQ(drawn(tail, sampling_with(1.0f, 2, 0.5f), 500), (std::set<int32_t>{7}));
  EXPECT_EQ(drawn(tail, sampling_with(1.0f, 0, 0.5f, 0.5f), 500), (std::set<int32_t>{7}));
  EXPECT_EQ(drawn(tail, sampling_with(1.0f, 2, 0.99f), 500), (std::set<int32_t>{3, 7}));
}

TEST(Sampler, FiltersKeepWhatEachWouldAlone) {
  const std::vector<float> logits = from_probs({0.1f, 0.5f, 0.15f, 0.25f});
  // top_p 0.8 keeps {1, 3, 2}; top_k 2 keeps {1, 3}; min_p 0.29 keeps {1, 3, 2}.
  EXPECT_EQ(drawn(logits, sampling_with(1.0f, 2, 0.8f, 0.29f)), (std::set<int32_t>{1, 3}));
  // top_k 3 keeps {1, 3, 2}; top_p 0.7 keeps {1, 3}.
  EXPECT_EQ(drawn(logits, sampling_with(1.0f, 3, 0.7f)), (std::set<int32_t>{1, 3}));
  // top_k 3 and top_p 0.95 keep three and four; min_p 0.4 keeps {1, 3}.
  EXPECT_EQ(drawn(logits, sampling_with(1.0f, 3, 0.95f, 0.4f)), (std::set<int32_t>{1, 3}));
}

TEST(Sampler, GreedyTiesGoToTheLowestIdWhateverTheSeed) {
  const std::vector<float> logits = {0.0f, 3.0f, -1.0f, 3.0f, 3.0f};
  EXPECT_EQ(drawn(logits, sampling_with(0.0f), 200), (std::set<int32_t>{1}));
}

TEST(Sampler, GreedyIgnoresTheFilters) {
  const std::vector<float> logits = {0.0f, 3.0f, -1.0f, 2.0f};
  Sampler sampler({4, {}});
  EXPECT_EQ(draw(sampler, logits, sampling_with(0.0f, 2, 0.1f, 0.5f)), 1);
}

TEST(Sampler, TopKOfOneIsGreedyWithTheSameTieRule) {
  const std::vector<float> logits = {0.0f, 3.0f, -1.0f, 3.0f};
  EXPECT_EQ(drawn(logits, sampling_with(1.5f, 1), 200), (std::set<int32_t>{1}));
}

TEST(Sampler, LogitBiasIsAddedBeforeEverythingElse) {
  const std::vector<float> logits = {0.0f, 3.0f, -1.0f, 2.0f};
  SamplingParams params = sampling_with(0.0f);
  params.logit_bias = {{2, 10.0f}};
  Sampler sampler({4, {}});
  EXPECT_EQ(draw(sampler, logits, params), 2);
  params = sampling_with(1.0f, 1);  // top_k sees the biased logits
  params.logit_bias = {{0, 3.5f}};
  EXPECT_EQ(drawn(logits, params), (std::set<int32_t>{0}));
}

TEST(Sampler, LogitBiasOfMinus100BansTheToken) {
  const std::vector<float> logits = {0.0f, 30.0f, -1.0f, 2.0f};
  SamplingParams params = sampling_with(1.0f);
  params.logit_bias = {{1, -100.0f}, {0, -150.0f}};
  EXPECT_EQ(drawn(logits, params), (std::set<int32_t>{2, 3}));
  params.temperature = 0.0f;
  Sampler sampler({4, {}});
  EXPECT_EQ(draw(sampler, logits, params), 3);
  // -99.5 only lowers the logit: 30 - 99.5 is still finite, so the token stays possible.
  params = sampling_with(100.0f);
  params.logit_bias = {{1, -99.5f}};
  EXPECT_TRUE(drawn(logits, params).contains(1));
}

TEST(Sampler, LogitBiasOutsideTheVocabularyIsIgnored) {
  SamplingParams params = sampling_with(0.0f);
  params.logit_bias = {{-1, 50.0f}, {4, 50.0f}, {1 << 30, -100.0f}};
  Sampler sampler({4, {}});
  EXPECT_EQ(draw(sampler, {0.0f, 3.0f, -1.0f, 2.0f}, params), 1);
}

TEST(Sampler, IgnoreEosBansEveryEndOfGenerationId) {
  const std::vector<float> logits = {0.0f, 5.0f, 1.0f, 4.0f, 0.5f};
  Sampler sampler({5, {1, 3}});
  SamplingParams params = sampling_with(0.0f);
  EXPECT_EQ(draw(sampler, logits, params), 1);
  params.ignore_eos = true;
  EXPECT_EQ(draw(sampler, logits, params), 2);
  params.temperature = 1.0f;
  std::set<int32_t> seen;
  for (uint64_t s = 0; s < 2000; ++s) {
    params.seed = s;
    seen.insert(draw(sampler, logits, params));
  }
  EXPECT_EQ(seen, (std::set<int32_t>{0, 2, 4}));
}

TEST(Sampler, EverythingBannedFallsBackToTheRawArgmax) {
  const std::vector<float> logits = {0.0f, 5.0f, 1.0f};
  Sampler sampler({3, {1}});
  SamplingParams params = sampling_with(1.0f, 2, 0.9f);
  params.logit_bias = {{0, -100.0f}, {2, -100.0f}};
  params.ignore_eos = true;
  EXPECT_EQ(draw(sampler, logits, params), 1);
  params.temperature = 0.0f;
  EXPECT_EQ(draw(sampler, logits, params), 1);
  EXPECT_EQ(draw(sampler, {-kInf, kNaN, -kInf}, sampling_with(1.0f)), 0);
}

TEST(Sampler, InfiniteLogitWinsOutright) {
  EXPECT_EQ(drawn({0.0f, kInf, 1.0f, kInf}, sampling_with(1.0f, 0, 0.5f), 100),
            (std::set<int32_t>{1}));
}

TEST(Sampler, SameSeedAndPositionGiveTheSameToken) {
  const std::vector<float> logits = normal_logits(1000, 2.0f, 1);
  Sampler a({1000, {}}), b({1000, {}});
  for (uint64_t s = 0; s < 200; ++s) {
    SamplingParams params = sampling_with(1.0f, 0, 0.95f);
    params.seed = s * 7919;
    const int32_t first = draw(a, logits, params, 42);
    EXPECT_EQ(draw(a, logits, params, 42), first);
    EXPECT_EQ(draw(b, logits, params, 42), first);
  }
}

// The share of (x, y) draw pairs that agree, against the chance two independent draws agree.
void expect_independent_draws(uint64_t seed_a, uint64_t seed_b, int64_t pos_a, int64_t pos_b) {
  const std::vector<float> logits = normal_logits(16, 1.0f, 2);
  SamplingParams params = sampling_with(1.0f);
  const std::vector<double> p = testing::reference_probs(logits, params);
  double collide = 0.0;
  for (double v : p) collide += v * v;
  Sampler sampler({16, {}});
  constexpr int kTrials = 20000;
  int same = 0;
  for (int t = 0; t < kTrials; ++t) {
    params.seed = seed_a + static_cast<uint64_t>(t) * 0x10001;
    const int32_t x = draw(sampler, logits, params, pos_a + t);
    params.seed = seed_b + static_cast<uint64_t>(t) * 0x10001;
    const int32_t y = draw(sampler, logits, params, pos_b + t);
    same += x == y;
  }
  EXPECT_NEAR(double(same) / kTrials, collide, 0.02)
      << "seeds " << seed_a << "/" << seed_b << " positions " << pos_a << "/" << pos_b;
}

TEST(Sampler, DifferentSeedsAgreeOnlyAtTheRateOfIndependentDraws) {
  expect_independent_draws(1, 2, 0, 0);
  expect_independent_draws(5, 5 + (uint64_t{1} << 32), 0, 0);  // the key's high word counts
}

TEST(Sampler, ThePositionChangesTheDraw) {
  expect_independent_draws(9, 9, 0, 1);
  expect_independent_draws(9, 9, 3, 3 + (int64_t{1} << 32));  // the position's high word counts
}

TEST(Sampler, ARowsTokenDoesNotDependOnOtherRows) {
  const int32_t n = 4096;
  std::vector<std::vector<float>> rows;
  std::vector<SamplingParams> params;
  for (int r = 0; r < 6; ++r) {
    rows.push_back(normal_logits(n, 3.0f, 100 + r));
    params.push_back(sampling_with(0.6f + 0.2f * r, r % 2 == 0 ? 0 : 40, r < 3 ? 0.9f : 1.0f,
                                   r == 5 ? 0.05f : 0.0f));
    params.back().seed = 1000 + r;
  }
  // Each row alone, in a fresh sampler.
  std::vector<int32_t> alone;
  for (int r = 0; r < 6; ++r) {
    Sampler fresh({n, {}});
    alone.push_back(draw(fresh, rows[r], params[r], 50 + r));
  }
  // All rows through one sampler, forwards and backwards, and a row repeated between others.
  Sampler shared({n, {}});
  for (int r = 0; r < 6; ++r) EXPECT_EQ(draw(shared, rows[r], params[r], 50 + r), alone[r]);
  for (int r = 5; r >= 0; --r) EXPECT_EQ(draw(shared, rows[r], params[r], 50 + r), alone[r]);
  for (int r = 0; r < 6; ++r) {
    EXPECT_EQ(draw(shared, rows[3], params[3], 53), alone[3]);
    draw(shared, rows[r], params[r], 50 + r);
  }
}

TEST(Sampler, RejectsARowOfTheWrongLength) {
  Sampler sampler({8, {}});
  std::vector<float> row(7, 0.0f);
  EXPECT_THROW(sampler.sample(row, sampling_with(1.0f), 0), std::invalid_argument);
}

// The fast paths (ladder rungs, quickselect, vector kernels) against the full-sort reference
// on real vocabulary sizes and logit spreads.
TEST(Sampler, MatchesTheFullSortReferenceOnLargeVocabularies) {
  const std::vector<SamplingParams> settings = {
      sampling_with(1.0f), sampling_with(0.8f, 40), sampling_with(1.0f, 0, 0.9f),
      sampling_with(1.2f, 0, 0.5f), sampling_with(0.7f, 0, 1.0f, 0.05f),
      sampling_with(1.0f, 50, 0.95f, 0.02f), sampling_with(1.0f, 2000),
      sampling_with(1.5f, 0, 0.999f),
      // top_p over min_p's many survivors, over
      // top_k's 40, and over a large k
      sampling_with(1.0f, 0, 0.9f, 0.001f), sampling_with(0.8f, 40, 0.9f),
      sampling_with(1.0f, 2000, 0.9f)};
  for (int32_t n : {1000, 32000, 128256}) {
    for (float sd : {1.0f, 3.0f, 8.0f}) {
      const std::vector<float> logits = normal_logits(n, sd, static_cast<uint32_t>(n) + 3);
      Sampler sampler({n, {}});
      for (size_t s = 0; s < settings.size(); ++s) {
        SamplingParams params = settings[s];
        const std::vector<float> z = testing::tempered(logits, params.temperature);
        const std::vector<int32_t> kept = testing::reference_kept(logits, params);
        for (uint64_t seed = 0; seed < 10; ++seed) {
          params.seed = seed * 0x51ed270b27ull + s;
          const int64_t position = static_cast<int64_t>(seed) * 13 + 1;
          ASSERT_EQ(draw(sampler, logits, params, position),
                    testing::gumbel_token(z, kept, params.seed, position))
              << "n " << n << " sd " << sd << " setting " << s << " seed " << params.seed;
        }
      }
    }
  }
}

}  // namespace
}  // namespace tandem::TANDEM_UNITY_ID
