// Post-sampling probabilities (llama-server's post_sampling_probs, sampler.h): the draw's own
// distribution, against reference.h's kept set and a double-precision softmax over it; the
// token drawn is the one drawn without them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "runner/sampler/sampler.h"
#include "tests/runner/sampler/reference.h"
#include "tests/runner/sampler/sampler_test_support.h"

namespace tandem::TANDEM_UNITY_ID {
namespace {

using testing::normal_logits;
using testing::sampling_with;

// Float log-probabilities over sets of up to thousands: a few ulps of the log of a sum.
constexpr double kTolerance = 2e-5;

struct Drawn {
  int32_t token = -1;
  RowLogprobs probs;
};

Drawn draw(Sampler& sampler, std::vector<float> row, SamplingParams params, int64_t position,
           const RowHistory& history = {}) {
  params.post_sampling_probs = true;
  Drawn out;
  out.token = sampler.sample(row, params, position, history, &out.probs);
  return out;
}

// What the reference says: the kept ids in rank order and their probabilities (double).
void expect_matches_reference(const Drawn& d, const std::vector<float>& logits,
                              const SamplingParams& params, int32_t k) {
  const std::vector<int32_t> kept = testing::reference_kept(logits, params);
  const std::vector<double> p = testing::reference_probs(logits, params);
  ASSERT_FALSE(kept.empty());
  EXPECT_EQ(d.probs.chosen.id, d.token);
  EXPECT_NEAR(d.probs.chosen.logprob, std::log(p[d.token]), kTolerance);
  size_t listed = std::min(kept.size(), static_cast<size_t>(k));
  ASSERT_EQ(d.probs.top.size(), listed) << "kept " << kept.size();
  for (size_t i = 0; i < listed; ++i) {
    EXPECT_EQ(d.probs.top[i].id, kept[i]) << "rank " << i;
    EXPECT_NEAR(d.probs.top[i].logprob, std::log(p[kept[i]]), kTolerance) << "rank " << i;
  }
}

TEST(SamplerPostSampling, WeighTheKeptSetAsTheDrawDoes) {
  const int32_t n = 2000;
  Sampler sampler({n, {}});
  struct Case {
    float temperature;
    int32_t top_k;
    float top_p, min_p;
  };
  const Case cases[] = {{1.0f, 0, 1.0f, 0.0f},  {0.7f, 0, 1.0f, 0.0f}, {1.0f, 40, 1.0f, 0.0f},
                        {0.8f, 40, 0.9f, 0.0f}, {1.0f, 0, 0.9f, 0.0f}, {1.3f, 0, 1.0f, 0.05f},
                        {1.0f, 0, 0.5f, 0.02f}, {0.9f, 5, 1.0f, 0.0f}, {1.0f, 1, 1.0f, 0.0f}};
  for (const Case& c : cases) {
    for (uint32_t seed = 0; seed < 6; ++seed) {
      const std::vector<float> logits = normal_logits(n, 2.5f, 100 + seed);
      SamplingParams params = sampling_with(c.temperature, c.top_k, c.top_p, c.min_p);
      params.seed = seed;
      for (int32_t k : {0, 5, 50}) {
        params.logprobs = k;
        SCOPED_TRACE(::testing::Message()
                     << "T " << c.temperature << " top_k " << c.top_k << " top_p " << c.top_p
                     << " min_p " << c.min_p << " seed " << seed << " k " << k);
        const Drawn d = draw(sampler, logits, params, 7);
        // The draw is the one made without them (and the reference's).
        std::vector<float> row = logits;
        EXPECT_EQ(d.token, sampler.sample(row, params, 7));
        EXPECT_EQ(d.token, testing::reference_token(logits, params, 7));
        expect_matches_reference(d, logits, params, k);
      }
    }
  }
}

// Where every token stays, the listed ones' probabilities are the row's softmax at the
// temperature; with k at least the set's size they add up to 1.
TEST(SamplerPostSampling, ListedProbabilitiesOfASmallSetAddUpToOne) {
  const int32_t n = 64;
  Sampler sampler({n, {}});
  SamplingParams params = sampling_with(1.0f, 10);
  params.logprobs = 20;  // more than the 10 kept
  const Drawn d = draw(sampler, normal_logits(n, 1.0f, 3), params, 0);
  ASSERT_EQ(d.probs.top.size(), 10u);
  double sum = 0;
  for (const TokenLogprob& t : d.probs.top) sum += std::exp(double(t.logprob));
  EXPECT_NEAR(sum, 1.0, 1e-5);
}

// A temperature after the filters tempers the draw, not the set: the kept set is top_k's of
// the raw logits, weighed at 1/T.
TEST(SamplerPostSampling, ALateTemperatureWeighsWhatTheFiltersKept) {
  const int32_t n = 500;
  Sampler sampler({n, {}});
  const std::vector<float> logits = normal_logits(n, 2.0f, 9);
  SamplingParams params = sampling_with(0.5f, 8);
  params.temperature_last = true;
  params.logprobs = 8;
  params.seed = 4;
  const Drawn d = draw(sampler, logits, params, 3);
  const std::vector<int32_t> kept = testing::reference_kept(logits, sampling_with(1.0f, 8));
  double sum = 0;
  for (int32_t id : kept)
    sum += std::exp(double(logits[id] * 2.0f) - double(logits[kept[0]] * 2.0f));
  ASSERT_EQ(d.probs.top.size(), kept.size());
  for (size_t i = 0; i < kept.size(); ++i) {
    EXPECT_EQ(d.probs.top[i].id, kept[i]);
    const double expected = double(logits[kept[i]] * 2.0f) - double(logits[kept[0]] * 2.0f);
    EXPECT_NEAR(d.probs.top[i].logprob, expected - std::log(sum), kTolerance);
  }
}

// The model's view differs: the same row without post_sampling_probs reports the raw
// log-softmax over the whole vocabulary, so top_k's renormalization raises every value.
TEST(SamplerPostSampling, DiffersFromTheModelsLogprobsWhereTheFiltersCut) {
  const int32_t n = 300;
  Sampler sampler({n, {}});
  const std::vector<float> logits = normal_logits(n, 1.5f, 21);
  SamplingParams params = sampling_with(1.0f, 3);
  params.logprobs = 3;
  RowLogprobs model;
  std::vector<float> row = logits;
  const int32_t token = sampler.sample(row, params, 0, {}, &model);
  const Drawn d = draw(sampler, logits, params, 0);
  ASSERT_EQ(d.token, token);
  ASSERT_EQ(model.top.size(), 3u);
  ASSERT_EQ(d.probs.top.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(d.probs.top[i].id, model.top[i].id);
    EXPECT_GT(d.probs.top[i].logprob, model.top[i].logprob + 0.01f);
  }
}

TEST(SamplerPostSampling, AGreedyTokenIsCertainAndListedAlone) {
  const int32_t n = 100;
  Sampler sampler({n, {}});
  const std::vector<float> logits = normal_logits(n, 1.0f, 5);
  const auto argmax =
      static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  for (int32_t k : {0, 1, 7}) {
    SamplingParams params = sampling_with(0.0f);
    params.logprobs = k;
    const Drawn d = draw(sampler, logits, params, 0);
    EXPECT_EQ(d.token, argmax);
    EXPECT_EQ(d.probs.chosen.id, argmax);
    EXPECT_EQ(d.probs.chosen.logprob, 0.0f);
    if (k == 0) {
      EXPECT_TRUE(d.probs.top.empty());
    } else {
      ASSERT_EQ(d.probs.top.size(), 1u);
      EXPECT_EQ(d.probs.top[0].id, argmax);
      EXPECT_EQ(d.probs.top[0].logprob, 0.0f);
    }
  }
}

// A grammar's mask (and a ban) leave the draw among the allowed tokens: the probabilities
// are renormalized over them, as a classifier reading labels' probabilities wants.
TEST(SamplerPostSampling, AMaskRenormalizesOverTheAllowedTokens) {
  const int32_t n = 256;
  Sampler sampler({n, {}});
  const std::vector<float> logits = normal_logits(n, 3.0f, 77);
  const std::vector<int32_t> allowed_ids = {17, 64, 200, 201};
  std::vector<uint32_t> mask((n + 31) / 32, 0u);
  for (int32_t id : allowed_ids) mask[id / 32] |= 1u << (id % 32);
  SamplingParams params = sampling_with(1.0f);
  params.logprobs = 10;
  params.logit_bias = {{201, -100.0f}};  // banned: never listed
  RowHistory history;
  history.allowed = mask;
  const Drawn d = draw(sampler, logits, params, 0, history);
  double max_logit = -1e30;
  for (int32_t id : {17, 64, 200}) max_logit = std::max(max_logit, double(logits[id]));
  double sum = 0;
  for (int32_t id : {17, 64, 200}) sum += std::exp(double(logits[id]) - max_logit);
  ASSERT_EQ(d.probs.top.size(), 3u);
  double listed = 0;
  for (const TokenLogprob& t : d.probs.top) {
    EXPECT_TRUE(t.id == 17 || t.id == 64 || t.id == 200) << t.id;
    EXPECT_NEAR(t.logprob, double(logits[t.id]) - max_logit - std::log(sum), kTolerance);
    listed += std::exp(double(t.logprob));
  }
  EXPECT_NEAR(listed, 1.0, 1e-5);
  EXPECT_TRUE(d.token == 17 || d.token == 64 || d.token == 200);
  EXPECT_GE(d.probs.top[0].logprob, d.probs.top[1].logprob);
}

// Penalties change the distribution the draw sees, and so the values.
TEST(SamplerPostSampling, PenaltiesAreInTheWeights) {
  const int32_t n = 50;
  Sampler sampler({n, {}});
  std::vector<float> logits(n, 0.0f);
  logits[3] = 2.0f;
  logits[4] = 2.0f;
  SamplingParams params = sampling_with(1.0f);
  params.presence_penalty = 1.0f;
  params.logprobs = 2;
  const std::vector<int32_t> output = {3};
  RowHistory history;
  history.output = output;
  const Drawn d = draw(sampler, logits, params, 0, history);
  ASSERT_EQ(d.probs.top.size(), 2u);
  EXPECT_EQ(d.probs.top[0].id, 4);
  EXPECT_EQ(d.probs.top[1].id, 3);
  // Token 3's logit went from 2 to 1: Z = e^2 + e^1 + 48.
  const double z = std::exp(2.0) + std::exp(1.0) + 48.0;
  EXPECT_NEAR(d.probs.top[0].logprob, 2.0 - std::log(z), kTolerance);
  EXPECT_NEAR(d.probs.top[1].logprob, 1.0 - std::log(z), kTolerance);
}

// The portable kernels weigh the row as the AVX-512 ones do, bit for bit.
TEST(SamplerPostSampling, TheSameOnEveryInstructionSet) {
  const int32_t n = 5000;
  auto fast = testing::sampler_with_isa(nullptr, {n, {}});
  auto portable = testing::sampler_with_isa("avx2", {n, {}});
  for (uint32_t seed = 0; seed < 4; ++seed) {
    const std::vector<float> logits = normal_logits(n, 2.0f, seed);
    for (int32_t top_k : {0, 30}) {
      SamplingParams params = sampling_with(0.9f, top_k);
      params.logprobs = 6;
      params.seed = seed;
      const Drawn a = draw(*fast, logits, params, 11);
      const Drawn b = draw(*portable, logits, params, 11);
      ASSERT_EQ(a.token, b.token);
      EXPECT_EQ(a.probs.chosen.logprob, b.probs.chosen.logprob);
      ASSERT_EQ(a.probs.top.size(), b.probs.top.size());
      for (size_t i = 0; i < a.probs.top.size(); ++i) {
        EXPECT_EQ(a.probs.top[i].id, b.probs.top[i].id);
        EXPECT_EQ(a.probs.top[i].logprob, b.probs.top[i].logprob);
      }
    }
  }
}

}  // namespace
}  // namespace tandem::TANDEM_UNITY_ID
