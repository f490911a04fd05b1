// llama.cpp's adaptive-p in the fused sampler (sampler.h step 4b, adaptive_p.h): the draw's
// distribution and the running average against llama_sampler_adaptive_p_apply/_accept
// written out in double, token by token; the tokens drawn against that distribution.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "runner/sampler/adaptive_p.h"
#include "runner/sampler/sampler.h"
#include "tests/runner/sampler/reference.h"
#include "tests/runner/sampler/sampler_test_support.h"

namespace tandem::TANDEM_UNITY_ID {
namespace {

using testing::normal_logits;

SamplingParams adaptive_params(float temperature, int32_t top_k, float target, float decay) {
  SamplingParams p = testing::sampling_with(temperature, top_k);
  p.adaptive_target = target;
  p.adaptive_decay = decay;
  p.logprobs = 1024;  // the draw's distribution, by its post-sampling probabilities
  p.post_sampling_probs = true;
  return p;
}

// llama.cpp's transform in double over the kept ids: the draw's probabilities by id, and
// each kept token's p before it.
struct Transformed {
  std::vector<double> q, p;
};
Transformed reference_transform(const std::vector<float>& logits, const SamplingParams& params,
                                double sum, double weight) {
  const std::vector<int32_t> kept = testing::reference_kept(logits, params);
  const std::vector<double> p = testing::reference_probs(logits, params);
  const double target = std::clamp(double(params.adaptive_target), 0.0, 1.0);
  const double adapted = std::clamp(2 * target - sum / weight, 0.0, 1.0);
  Transformed t{std::vector<double>(logits.size(), 0.0), p};
  double total = 0;
  for (int32_t id : kept) {
    const double d = std::fabs((p[id] - adapted) / 0.3);
    total += t.q[id] = std::exp(5.0 - 10.0 * d * d / (1 + d));
  }
  for (double& v : t.q) v /= total;
  return t;
}

TEST(SamplerAdaptiveP, TheDrawAndTheAverageFollowLlamaCpp) {
  const int32_t n = 600;
  Sampler sampler({n, {}});
  struct Case {
    float temperature;
    int32_t top_k;
    float target, decay;
  };
  for (const Case& c : {Case{1.0f, 0, 0.3f, 0.9f}, Case{0.8f, 20, 0.5f, 0.5f},
                        Case{1.2f, 8, 0.1f, 0.99f}, Case{1.0f, 40, 0.0f, 0.0f}}) {
    SamplingParams params = adaptive_params(c.temperature, c.top_k, c.target, c.decay);
    for (uint32_t seed = 0; seed < 3; ++seed) {
      params.seed = seed;
      SamplerState state = SamplerState::first(params);
      double sum = c.target / (1.0 - c.decay), weight = 1.0 / (1.0 - c.decay);
      for (int64_t position = 0; position < 25; ++position) {
        SCOPED_TRACE(::testing::Message() << "target " << c.target << " top_k " << c.top_k
                                          << " seed " << seed << " position " << position);
        const std::vector<float> logits = normal_logits(n, 1.5f, seed * 1000 + uint32_t(position));
        const Transformed ref = reference_transform(logits, params, sum, weight);
        std::vector<float> row = logits;
        RowHistory history;
        history.state = &state;
        RowLogprobs probs;
        const int32_t token = sampler.sample(row, params, position, history, &probs);
        ASSERT_GT(ref.q[token], 0.0) << "drawn outside the kept set";
        for (const TokenLogprob& t : probs.top)
          EXPECT_NEAR(std::exp(double(t.logprob)), ref.q[t.id], 2e-5) << t.id;
        // Every token the draw could take is listed (k = 1024 covers the set).
        size_t possible = 0;
        for (double v : ref.q) possible += v > 1e-30 ? 1 : 0;
        EXPECT_EQ(probs.top.size(), possible);
        sum = ref.p[token] + c.decay * sum;
        weight = 1 + c.decay * weight;
        EXPECT_NEAR(state.adaptive_sum / state.adaptive_weight, sum / weight, 1e-5);
      }
    }
  }
}

// Over many seeds at one state the tokens drawn follow the transformed distribution.
TEST(SamplerAdaptiveP, DrawsFollowTheTransformedDistribution) {
  const int32_t n = 50;
  Sampler sampler({n, {}});
  const std::vector<float> logits = normal_logits(n, 1.5f, 4);
  SamplingParams params = adaptive_params(1.0f, 0, 0.2f, 0.9f);
  params.logprobs = -1;
  params.post_sampling_probs = false;
  const SamplerState first = SamplerState::first(params);
  const Transformed ref =
      reference_transform(logits, params, first.adaptive_sum, first.adaptive_weight);
  // No state given: each draw starts from the first state.
  EXPECT_LT(testing::drawn_total_variation(sampler, logits, params, 3, {}, ref.q, 20000), 0.03);
  // The transform favours tokens near the target over the likeliest one.
  const auto top = std::max_element(logits.begin(), logits.end()) - logits.begin();
  EXPECT_LT(ref.q[static_cast<size_t>(top)], ref.p[static_cast<size_t>(top)]);
}

TEST(SamplerAdaptiveP, HelpersMatchLlamaCpp) {
  EXPECT_FLOAT_EQ(sampler_adaptive::logit_of(0.3f, 0.3f), 5.0f);
  const float d = 0.2f / 0.3f;
  EXPECT_NEAR(sampler_adaptive::logit_of(0.5f, 0.3f), 5.0f - 10.0f * d * d / (1 + d), 1e-5);
  EXPECT_FLOAT_EQ(sampler_adaptive::adapted_target(0.3f, 4.0f, 10.0f), 0.2f);
  EXPECT_FLOAT_EQ(sampler_adaptive::adapted_target(0.3f, 9.0f, 10.0f), 0.0f);  // clamped
  EXPECT_FLOAT_EQ(sampler_adaptive::adapted_target(2.0f, 0.0f, 10.0f), 1.0f);
  float sum = 3.0f, weight = 10.0f;
  sampler_adaptive::accept(0.5f, 0.9f, sum, weight);
  EXPECT_FLOAT_EQ(sum, 3.2f);
  EXPECT_FLOAT_EQ(weight, 10.0f);
  SamplingParams params;
  params.adaptive_target = 0.4f;
  params.adaptive_decay = 0.75f;
  const SamplerState s = SamplerState::first(params);
  EXPECT_FLOAT_EQ(s.adaptive_sum / s.adaptive_weight, 0.4f);
  EXPECT_FLOAT_EQ(s.adaptive_weight, 4.0f);
  EXPECT_FALSE(SamplerState::needed(SamplingParams{}));
  EXPECT_TRUE(SamplerState::needed(params));
  params.mirostat = 2;  // Mirostat replaces the chain adaptive-p ends
  EXPECT_FALSE(params.adaptive_on());
}

}  // namespace
}  // namespace tandem::TANDEM_UNITY_ID
