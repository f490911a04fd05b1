// llama.cpp's Mirostat in the fused sampler (sampler.h, mirostat.h): the kept set, the draw
// and mu's course against llama_sampler_mirostat(_v2)_apply written out in double; the state
// carried by RowHistory::mirostat_mu; the chain Mirostat replaces.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "runner/sampler/mirostat.h"
#include "runner/sampler/sampler.h"
#include "tests/runner/sampler/reference.h"
#include "tests/runner/sampler/sampler_test_support.h"

namespace tandem::TANDEM_UNITY_ID {
namespace {

using testing::normal_logits;

SamplingParams mirostat_params(int32_t version, float temperature, float tau, float eta) {
  SamplingParams p;
  p.temperature = temperature;
  p.mirostat = version;
  p.mirostat_tau = tau;
  p.mirostat_eta = eta;
  p.logprobs = 1024;  // the kept set, by its post-sampling probabilities
  p.post_sampling_probs = true;
  return p;
}

// llama.cpp's softmax over the tempered row, sorted: ids in rank order and their p.
struct Ranked {
  std::vector<int32_t> ids;
  std::vector<double> p;
};
Ranked ranked_softmax(const std::vector<float>& logits, float temperature) {
  const std::vector<float> z = testing::tempered(logits, temperature);
  Ranked r;
  r.ids.resize(z.size());
  std::iota(r.ids.begin(), r.ids.end(), 0);
  std::sort(r.ids.begin(), r.ids.end(),
            [&](int32_t a, int32_t b) { return z[a] > z[b] || (z[a] == z[b] && a < b); });
  double sum = 0;
  for (int32_t id : r.ids) sum += std::exp(double(z[id]) - double(z[r.ids[0]]));
  for (int32_t id : r.ids) r.p.push_back(std::exp(double(z[id]) - double(z[r.ids[0]])) / sum);
  return r;
}

// v2's kept count: the rank prefix with -log2 p <= mu (at least 1); `near` is set when a
// token's surprise is within float rounding of mu, where float and double may disagree.
size_t reference_v2_count(const Ranked& r, double mu, bool& near) {
  size_t count = 0;
  near = false;
  for (double p : r.p) {
    const double surprise = -std::log2(p);
    if (std::fabs(surprise - mu) < 1e-4 * std::max(1.0, mu)) near = true;
    if (surprise > mu) break;
    ++count;
  }
  return std::max<size_t>(count, 1);
}

// v1's k, llama.cpp's formula in double over the 100 best.
double reference_v1_k(const Ranked& r, double mu) {
  double sum_tb = 0, sum_tt = 0;
  for (size_t i = 0; i < 99 && i + 1 < r.p.size(); ++i) {
    const double t = std::log(double(i + 2) / double(i + 1));
    const double b = std::log(r.p[i] / r.p[i + 1]);
    sum_tb += t * b;
    sum_tt += t * t;
  }
  const double s = sum_tb / sum_tt, e = s - 1;
  const double n = double(r.p.size());
  return std::pow(e * std::pow(2.0, mu) / (1 - std::pow(n, -e)), 1 / s);
}

struct Step {
  int32_t token;
  RowLogprobs probs;
};
Step sample(Sampler& sampler, const std::vector<float>& logits, const SamplingParams& params,
            int64_t position, float* mu) {
  std::vector<float> row = logits;
  SamplerState state;
  state.mirostat_mu = *mu;
  RowHistory history;
  history.state = &state;
  Step s;
  s.token = sampler.sample(row, params, position, history, &s.probs);
  *mu = state.mirostat_mu;
  return s;
}

// The kept set is the reference's rank prefix, renormalized; mu moves by the chosen token's
// surprise under it; the token is the Gumbel-max over it.
void expect_mirostat_course(int32_t version, float temperature, float tau, float eta) {
  const int32_t n = 800;
  Sampler sampler({n, {}});
  int exact_steps = 0, cutting_steps = 0;  // and those whose cut keeps more than 1, not all
  for (uint32_t seed = 0; seed < 4; ++seed) {
    SamplingParams params = mirostat_params(version, temperature, tau, eta);
    params.seed = seed;
    float mu = sampler_mirostat::first_mu(tau);
    for (int64_t position = 0; position < 30; ++position) {
      SCOPED_TRACE(::testing::Message() << "v" << version << " seed " << seed << " position "
                                        << position << " mu " << mu);
      const std::vector<float> logits =
          normal_logits(n, 2.0f + 0.1f * float(position % 7), seed * 100 + uint32_t(position));
      const Ranked r = ranked_softmax(logits, temperature);
      bool near = false;
      size_t count;
      if (version == 2) {
        count = reference_v2_count(r, mu, near);
      } else {
        const double k = reference_v1_k(r, mu);
        // k's float computation is within about 1e-5 of it, relatively.
        near = k < n + 1.0 && std::fabs(k - std::round(k)) < 1e-4 * std::max(1.0, k);
        count = static_cast<size_t>(std::clamp(std::floor(k), 1.0, double(n)));
      }
      const float before = mu;
      const Step s = sample(sampler, logits, params, position, &mu);
      if (near) continue;  // the cut is within rounding: float and double may differ
      ++exact_steps;
      if (count > 1 && count < static_cast<size_t>(n)) ++cutting_steps;
      ASSERT_EQ(s.probs.top.size(), std::min<size_t>(count, 1024));
      std::vector<int32_t> kept(r.ids.begin(), r.ids.begin() + static_cast<ptrdiff_t>(count));
      double kept_mass = 0;
      for (size_t i = 0; i < count; ++i) kept_mass += r.p[i];
      for (size_t i = 0; i < s.probs.top.size(); ++i) {
        EXPECT_EQ(s.probs.top[i].id, kept[i]);
        EXPECT_NEAR(s.probs.top[i].logprob, std::log(r.p[i] / kept_mass), 2e-4);
      }
      const std::vector<float> z = testing::tempered(logits, temperature);
      EXPECT_EQ(s.token, testing::gumbel_token(z, kept, seed, position));
      const auto at = std::find(kept.begin(), kept.end(), s.token) - kept.begin();
      const double surprise = -std::log2(r.p[static_cast<size_t>(at)] / kept_mass);
      EXPECT_NEAR(mu, before - eta * (surprise - tau), 2e-4);
    }
  }
  EXPECT_GT(exact_steps, 100);
  EXPECT_GT(cutting_steps, 50);
}

TEST(SamplerMirostat, V2KeepsTheTokensWithinMuAndMovesMuBySurprise) {
  expect_mirostat_course(2, 1.0f, 5.0f, 0.1f);
  expect_mirostat_course(2, 0.7f, 2.0f, 0.3f);
}

TEST(SamplerMirostat, V1KeepsZipfsTopKAndMovesMuBySurprise) {
  expect_mirostat_course(1, 1.0f, 5.0f, 0.1f);
  expect_mirostat_course(1, 1.3f, 3.0f, 0.2f);
}

// Mirostat's purpose: on a steady row the observed surprise settles around tau.
TEST(SamplerMirostat, TheSurpriseSettlesAroundTau) {
  const int32_t n = 2000;
  Sampler sampler({n, {}});
  const std::vector<float> logits = normal_logits(n, 2.5f, 7);
  for (int32_t version : {1, 2}) {
    for (float tau : {2.0f, 4.0f}) {
      SamplingParams params = mirostat_params(version, 1.0f, tau, 0.1f);
      params.seed = 99;
      float mu = sampler_mirostat::first_mu(tau);
      double sum = 0;
      int counted = 0;
      for (int64_t position = 0; position < 600; ++position) {
        const Step s = sample(sampler, logits, params, position, &mu);
        if (position >= 200) {
          sum += -s.probs.chosen.logprob / std::log(2.0);
          ++counted;
        }
      }
      EXPECT_NEAR(sum / counted, tau, 0.5) << "v" << version << " tau " << tau;
    }
  }
}

// Mirostat replaces llama.cpp's chain: the penalties, DRY and the filters do not act.
TEST(SamplerMirostat, ReplacesTheChain) {
  const int32_t n = 500;
  Sampler sampler({n, {}});
  const std::vector<float> logits = normal_logits(n, 2.0f, 3);
  const std::vector<int32_t> output = {1, 2, 3, 4, 5};
  for (int32_t version : {1, 2}) {
    SamplingParams plain = mirostat_params(version, 0.9f, 5.0f, 0.1f);
    SamplingParams filtered = plain;
    filtered.top_k = 1;
    filtered.min_p = 0.5f;
    filtered.presence_penalty = 2.0f;
    filtered.repetition_penalty = 1.5f;
    filtered.dry_multiplier = 1.0f;
    for (uint64_t seed = 0; seed < 20; ++seed) {
      plain.seed = filtered.seed = seed;
      SamplerState state_a, state_b;
      state_a.mirostat_mu = state_b.mirostat_mu = 6.0f;
      RowHistory history;
      history.output = output;
      std::vector<float> a = logits, b = logits;
      history.state = &state_a;
      const int32_t ta = sampler.sample(a, plain, 4, history);
      history.state = &state_b;
      const int32_t tb = sampler.sample(b, filtered, 4, history);
      EXPECT_EQ(ta, tb);
      EXPECT_EQ(state_a.mirostat_mu, state_b.mirostat_mu);
    }
  }
}

// Without a state the row starts from 2 tau and keeps nothing; at temperature 0 the row is
// greedy and mu stays.
TEST(SamplerMirostat, AFreshStateAndGreedy) {
  const int32_t n = 300;
  Sampler sampler({n, {}});
  const std::vector<float> logits = normal_logits(n, 2.0f, 11);
  SamplingParams params = mirostat_params(2, 1.0f, 3.0f, 0.1f);
  params.seed = 5;
  float mu = 6.0f;
  std::vector<float> a = logits, b = logits;
  const int32_t with_state = sample(sampler, logits, params, 2, &mu).token;
  EXPECT_EQ(sampler.sample(a, params, 2), with_state);
  EXPECT_NE(mu, 6.0f);
  params.temperature = 0.0f;
  float kept = 4.5f;
  const auto argmax =
      static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  EXPECT_EQ(sample(sampler, logits, params, 2, &kept).token, argmax);
  EXPECT_EQ(kept, 4.5f);
  (void)b;
}

// A row whose only finite logit is masked in, and bans: the mask holds under Mirostat.
TEST(SamplerMirostat, TheMaskAndBansHold) {
  const int32_t n = 64;
  Sampler sampler({n, {}});
  const std::vector<float> logits = normal_logits(n, 3.0f, 21);
  std::vector<uint32_t> mask(2, 0u);
  for (int32_t id : {5, 40, 41}) mask[id / 32] |= 1u << (id % 32);
  for (int32_t version : {1, 2}) {
    SamplingParams params = mirostat_params(version, 1.0f, 8.0f, 0.1f);
    params.logit_bias = {{41, -100.0f}};
    for (uint64_t seed = 0; seed < 30; ++seed) {
      params.seed = seed;
      SamplerState state;
      state.mirostat_mu = 16.0f;
      std::vector<float> row = logits;
      RowHistory history;
      history.allowed = mask;
      history.state = &state;
      const int32_t token = sampler.sample(row, params, 0, history);
      EXPECT_TRUE(token == 5 || token == 40) << token;
    }
  }
}

TEST(SamplerMirostat, V1KStaysInTheVocabulary) {
  // Flat and steep tops, and mu far out either way.
  const std::vector<float> flat(100, 1.0f);
  std::vector<float> steep(100);
  for (size_t i = 0; i < steep.size(); ++i) steep[i] = -5.0f * float(i);
  for (float mu : {-50.0f, 0.0f, 10.0f, 200.0f}) {
    for (const std::vector<float>* top : {&flat, static_cast<const std::vector<float>*>(&steep)}) {
      const int32_t k = sampler_mirostat::v1_k(*top, mu, 32000);
      EXPECT_GE(k, 1);
      EXPECT_LE(k, 32000);
    }
  }
  EXPECT_EQ(sampler_mirostat::v1_k(std::vector<float>{3.0f}, 10.0f, 32000), 1);
  // An eta near the float range moves mu far, never to inf (QA: v2 then kept nothing).
  EXPECT_EQ(sampler_mirostat::next_mu(10.0f, -1.0f, 5.0f, 3e38f), 1e30f);
  EXPECT_EQ(sampler_mirostat::next_mu(10.0f, -20.0f, 5.0f, 3e38f), -1e30f);
  EXPECT_FLOAT_EQ(sampler_mirostat::next_mu(10.0f, -std::log(2.0f) * 3.0f, 5.0f, 0.5f), 11.0f);
  EXPECT_FLOAT_EQ(sampler_mirostat::exp_any(1.0f), std::exp(1.0f));
  EXPECT_NEAR(sampler_mirostat::exp_any(20.0f) / std::exp(20.0f), 1.0, 1e-6);
  EXPECT_NEAR(sampler_mirostat::exp_any(-30.0f) / std::exp(-30.0f), 1.0, 1e-6);
}

}  // namespace
}  // namespace tandem::TANDEM_UNITY_ID
