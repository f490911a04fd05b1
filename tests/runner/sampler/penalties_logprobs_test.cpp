// Penalties, min_tokens bans and log-probabilities in the fused sampler, against references
// written for clarity (a map of counts, double-precision log-softmax), and the AVX-512 path
// against the portable one, bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <string>

#include "runner/sampler/kernels.h"
#include "runner/sampler/sampler.h"
#include "tests/runner/sampler/reference.h"
#include "tests/runner/sampler/sampler_test_support.h"

namespace tandem::TANDEM_UNITY_ID {
namespace {

using testing::normal_logits;
constexpr float kInf = std::numeric_limits<float>::infinity();

// vLLM's definition, literally: repetition over the set of prompt and output ids, then
// frequency * count and presence over the output's ids.
std::vector<float> reference_penalized(std::vector<float> logits, const SamplingParams& p,
                                       const std::vector<int32_t>& prompt,
                                       const std::vector<int32_t>& output) {
  std::set<int32_t> seen(prompt.begin(), prompt.end());
  seen.insert(output.begin(), output.end());
  for (int32_t id : seen) {
    float& x = logits[id];
    x = x > 0.0f ? x / p.repetition_penalty : x * p.repetition_penalty;
  }
  std::map<int32_t, int> counts;
  for (int32_t id : output) ++counts[id];
  for (const auto& [id, count] : counts) {
    logits[id] -= p.frequency_penalty * static_cast<float>(count);
    logits[id] -= p.presence_penalty;
  }
  return logits;
}

SamplingParams penalties(float repetition, float frequency, float presence) {
  SamplingParams p;
  p.repetition_penalty = repetition;
  p.frequency_penalty = frequency;
  p.presence_penalty = presence;
  return p;
}

const std::vector<int32_t> kPrompt = {1, 2, 3, 3, 9};
const std::vector<int32_t> kOutput = {3, 4, 4, 4, 7, 0};

TEST(SamplerPenalties, GreedyPicksTheArgmaxOfThePenalizedLogits) {
  const int32_t n = 64;
  Sampler sampler({n, {}});
  int differs_from_unpenalized = 0;
  for (uint32_t seed = 0; seed < 200; ++seed) {
    std::vector<float> logits = normal_logits(n, 2.0f, seed);
    // Make the history's ids the likely ones, so the penalties decide.
    for (int32_t id : {0, 1, 2, 3, 4, 7, 9}) logits[id] += 3.0f;
    for (const SamplingParams& base :
         {penalties(1.8f, 0, 0), penalties(1, 0.7f, 0), penalties(1, 0, 1.5f),
          penalties(1.3f, -0.5f, 2.0f), penalties(0.6f, 0.4f, -1.0f)}) {
      SamplingParams p = base;
      p.temperature = 0.0f;
      const std::vector<float> want = reference_penalized(logits, p, kPrompt, kOutput);
      const auto expected =
          static_cast<int32_t>(std::max_element(want.begin(), want.end()) - want.begin());
      std::vector<float> row = logits;
      RowHistory history{false, kPrompt, kOutput};
      ASSERT_EQ(sampler.sample(row, p, 5, history), expected) << seed;
      differs_from_unpenalized +=
          expected != std::max_element(logits.begin(), logits.end()) - logits.begin();
    }
  }
  EXPECT_GT(differs_from_unpenalized, 100);  // the penalties did change tokens
}

TEST(SamplerPenalties, TheHistorysOrderDoesNotMatter) {
  const int32_t n = 128;
  Sampler sampler({n, {}});
  std::vector<int32_t> shuffled = kOutput;
  std::reverse(shuffled.begin(), shuffled.end());
  SamplingParams p = penalties(1.4f, 0.3f, 0.6f);
  for (uint64_t seed = 0; seed < 300; ++seed) {
    p.seed = seed;
    const std::vector<float> logits = normal_logits(n, 3.0f, static_cast<uint32_t>(seed));
    std::vector<float> a = logits, b = logits;
    ASSERT_EQ(sampler.sample(a, p, 9, {false, kPrompt, kOutput}),
              sampler.sample(b, p, 9, {false, kPrompt, shuffled}));
  }
}

TEST(SamplerPenalties, RepetitionCoversThePromptFrequencyAndPresenceOnlyTheOutput) {
  const int32_t n = 16;
  Sampler sampler({n, {}});
  // Token 9 is only in the prompt and leads by 1: presence and frequency leave it alone,
  // repetition 2 halves it below the runner-up.
  std::vector<float> logits(n, 0.0f);
  logits[9] = 4.0f;
  logits[5] = 3.0f;
  SamplingParams greedy = penalties(1, 2.0f, 2.0f);
  greedy.temperature = 0.0f;
  std::vector<float> row = logits;
  EXPECT_EQ(sampler.sample(row, greedy, 1, {false, kPrompt, kOutput}), 9);
  greedy = penalties(2.0f, 0, 0);
  greedy.temperature = 0.0f;
  row = logits;
  EXPECT_EQ(sampler.sample(row, greedy, 1, {false, kPrompt, kOutput}), 5);
}

// The empirical distribution with penalties matches softmax of the reference's penalized
// logits, within a total variation of 0.01 over 100,000 seeds.
TEST(SamplerPenalties, SamplingFollowsThePenalizedDistribution) {
  const int32_t n = 32;
  const std::vector<float> logits = normal_logits(n, 1.5f, 3);
  for (SamplingParams p : {penalties(1.5f, 0.5f, 0.5f), penalties(0.8f, -0.4f, 1.0f)}) {
    p.temperature = 0.9f;
    p.top_k = 20;
    const std::vector<float> penalized = reference_penalized(logits, p, kPrompt, kOutput);
    const std::vector<double> expected = testing::reference_probs(penalized, p);
    Sampler sampler({n, {}});
    EXPECT_LE(
        testing::drawn_total_variation(sampler, logits, p, 3, {false, kPrompt, kOutput}, expected),
        0.01);
  }
}

TEST(SamplerBans, MinTokensBansEndOfGenerationAndStopIds) {
  const int32_t n = 8;
  Sampler sampler({n, {2, 6}});
  SamplingParams p;
  p.temperature = 0.0f;
  p.stop_token_ids = {5};
  // 2 (EOG) leads, then 5 (a stop id), then 6 (EOG), then 1.
  const std::vector<float> logits = {0, 1, 9, 0, 0, 8, 7, 0};
  std::vector<float> row = logits;
  EXPECT_EQ(sampler.sample(row, p, 1, {}), 2);
  row = logits;
  EXPECT_EQ(sampler.sample(row, p, 1, {true, {}, {}}), 1);
  p.ignore_eos = true;  // bans EOG, not stop ids
  row = logits;
  EXPECT_EQ(sampler.sample(row, p, 1, {}), 5);
  // ...nor an EOG id that stop_token_ids names: it still ends the output, as vLLM's
  // "ignore EOS, stop at <|eot_id|>" asks. min_tokens bans it all the same.
  p.stop_token_ids = {2};
  row = logits;
  EXPECT_EQ(sampler.sample(row, p, 1, {}), 2);
  row = logits;
  EXPECT_EQ(sampler.sample(row, p, 1, {true, {}, {}}), 5);
}

// log-softmax in double, as the reference forward's outputs would be scored.
std::vector<double> reference_log_softmax(const std::vector<float>& logits) {
  const double top = *std::max_element(logits.begin(), logits.end());
  double sum = 0.0;
  for (float x : logits) sum += std::exp(double(x) - top);
  std::vector<double> out;
  for (float x : logits) out.push_back(double(x) - top - std::log(sum));
  return out;
}

TEST(SamplerLogprobs, AreTheRawLogSoftmaxWhateverTheSamplingParameters) {
  const int32_t n = 3000;
  Sampler sampler({n, {1}});
  const std::vector<float> logits = normal_logits(n, 3.0f, 21);
  const std::vector<double> want = reference_log_softmax(logits);
  std::vector<int32_t> order(n);
  for (int32_t i = 0; i < n; ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  });
  SamplingParams plain;
  plain.logprobs = 5;
  SamplingParams shaped = penalties(1.3f, 0.5f, 0.5f);
  shaped.logprobs = 5;
  shaped.temperature = 0.3f;
  shaped.top_p = 0.5f;
  shaped.logit_bias = {{order[7], 20.0f}};
  shaped.ignore_eos = true;
  for (const SamplingParams& base : {plain, shaped}) {
    for (uint64_t seed = 0; seed < 20; ++seed) {
      SamplingParams p = base;
      p.seed = seed;
      std::vector<float> row = logits;
      RowLogprobs lp;
      const int32_t token = sampler.sample(row, p, 4, {false, kPrompt, kOutput}, &lp);
      EXPECT_EQ(lp.chosen.id, token);
      // Bound: the float log-sum-exp's error is a few ulps of log Z (~8): 1e-5 absolute.
      EXPECT_NEAR(lp.chosen.logprob, want[token], 1e-5);
      ASSERT_EQ(lp.top.size(), 5u);
      for (size_t i = 0; i < 5; ++i) {
        EXPECT_EQ(lp.top[i].id, order[i]);  // most likely first
        EXPECT_NEAR(lp.top[i].logprob, want[order[i]], 1e-5);
      }
    }
  }
}

// Z is summed panel by panel below each panel's own max (sampler.cpp, log_normalizer):
// panels with nothing finite, or far below the row's max, and a max far above everything
// else all give the log-softmax, on the best path the CPU has and on "avx2".
TEST(SamplerLogprobs, HoldWhereverTheRowsMaxLiesAgainstItsFirstEntries) {
  const int32_t n = 5000;
  const std::vector<float> base = normal_logits(n, 3.0f, 8);
  std::vector<std::vector<float>> rows;
  auto first = [&](float value) {  // the first 64 entries set to value
    std::vector<float> row = base;
    std::fill(row.begin(), row.begin() + 64, value);
    return row;
  };
  rows.push_back(first(-kInf));          // no guess at all
  rows.push_back(first(std::nanf("")));  // NaN, ignored: no guess either
  rows.push_back(first(-200.0f));        // max 200 above the guess's base
  rows.push_back(first(40.0f));          // the max among them
  rows.push_back(first(-50.0f));         // max 50 above them: within the slack
  std::vector<float> far = base;
  far[4000] = 150.0f;  // one entry far above everything
  rows.push_back(far);
  for (const char* isa : {static_cast<const char*>(nullptr), "avx2"}) {
    const auto sampler = testing::sampler_with_isa(isa, {n, {1}});
    for (size_t r = 0; r < rows.size(); ++r) {
      std::vector<float> clean = rows[r];
      for (float& x : clean) x = std::isnan(x) ? -kInf : x;  // NaN scores as -inf
      const std::vector<double> want = reference_log_softmax(clean);
      SamplingParams p;
      p.temperature = 0.0f;
      p.logprobs = 3;
      std::vector<float> row = rows[r];
      RowLogprobs lp;
      const int32_t token = sampler->sample(row, p, 0, {}, &lp);
      ASSERT_EQ(lp.top.size(), 3u) << r;
      EXPECT_NEAR(lp.chosen.logprob, want[token], 1e-5) << "row " << r << " " << (isa ? isa : "");
      for (const auto& t : lp.top) EXPECT_NEAR(t.logprob, want[t.id], 1e-5) << "row " << r;
    }
  }
}

// Asking for logprobs never changes the token: an untouched row hands the scan's argmax to
// greedy and to T = 1's Gumbel pass, a touched one is copied first. Rows with ties, -inf,
// NaN and a +inf; greedy, T = 1 with and without filters, T = 0.8, bias, penalties, bans.
// The k best come from the panels with the largest maxima (sampler.cpp, log_normalizer):
// the list is the whole row's, in rank order with ties to the lower id, over rows of few
// distinct values (ties across panels), panels of -inf and NaN and fewer finite entries than
// k (and a +inf, which lists nothing). Partials handed in (as the forward pass computes them) give
// the bits of those the sampler computes itself.
TEST(SamplerLogprobs, TheTopListIsTheWholeRowsAndHandedPartialsChangeNoBit) {
  const int32_t n = 1000;
  const auto& kernels = sampler_kernels::detected();
  const int32_t panels = sampler_kernels::logit_panels(n);
  Sampler sampler({n, {}});
  for (uint32_t seed = 0; seed < 60; ++seed) {
    std::mt19937 rng(seed);
    std::vector<float> logits(n);
    for (float& x : logits) x = static_cast<float>(rng() % (2 + seed % 5));
    if (seed % 3 == 0) std::fill(logits.begin() + 64, logits.begin() + 192, -kInf);
    if (seed % 4 == 1) logits[rng() % n] = std::nanf("");
    if (seed % 7 == 2) std::fill(logits.begin(), logits.end() - 3, -kInf);  // 3 finite
    if (seed % 11 == 3) logits[rng() % n] = kInf;
    std::vector<int32_t> order;
    for (int32_t i = 0; i < n; ++i) {
      if (logits[i] > -kInf) order.push_back(i);  // NaN and -inf never listed
    }
    std::stable_sort(order.begin(), order.end(),
                     [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
    std::vector<float> max(panels), sum(panels);
    kernels.panel_partials(logits.data(), n, max.data(), sum.data());
    for (int32_t k : {1, 3, 5, 20}) {
      SamplingParams p;
      p.temperature = 0.0f;
      p.logprobs = k;
      std::vector<float> a = logits, b = logits;
      RowLogprobs own, handed;
      const int32_t token = sampler.sample(a, p, 0, {}, &own);
      RowHistory history;
      history.partials = {max, sum};
      ASSERT_EQ(sampler.sample(b, p, 0, history, &handed), token);
      // A +inf logit takes all the probability: log Z is +inf, and nothing is listed
      // (log_normalizer's early return, as before the panels).
      const bool infinite = !order.empty() && logits[order[0]] == kInf;
      const size_t want = infinite ? 0 : std::min<size_t>(k, order.size());
      ASSERT_EQ(own.top.size(), want) << seed << " k " << k;
      ASSERT_EQ(handed.top.size(), want);
      for (size_t i = 0; i < want; ++i) {
        EXPECT_EQ(own.top[i].id, order[i]) << seed << " k " << k << " rank " << i;
        EXPECT_EQ(handed.top[i].id, order[i]);
        EXPECT_EQ(std::bit_cast<uint32_t>(own.top[i].logprob),
                  std::bit_cast<uint32_t>(handed.top[i].logprob));
      }
      EXPECT_EQ(std::bit_cast<uint32_t>(own.chosen.logprob),
                std::bit_cast<uint32_t>(handed.chosen.logprob));
      RowLogprobs scored;
      sampler.logprobs_of(logits, token, k, scored, {max, sum});
      EXPECT_EQ(std::bit_cast<uint32_t>(scored.chosen.logprob),
                std::bit_cast<uint32_t>(own.chosen.logprob));
    }
  }
}

// A row that sampling changes in place reads the chosen token's raw logit from the copy the
// forward pass kept (RowHistory::raw) where there is one, else from its own: the same bits.
TEST(SamplerLogprobs, AKeptRawRowGivesTheBitsOfTheSamplersOwnCopy) {
  const int32_t n = 3000;
  Sampler sampler({n, {1}});
  const std::vector<float> logits = normal_logits(n, 3.0f, 31);
  SamplingParams p = penalties(1.3f, 0.5f, 0.5f);
  p.logprobs = 4;
  p.temperature = 0.7f;
  p.top_k = 40;
  p.logit_bias = {{17, 9.0f}};
  ASSERT_TRUE(Sampler::may_touch_row(p));
  for (uint64_t seed = 0; seed < 20; ++seed) {
    p.seed = seed;
    std::vector<float> a = logits, b = logits;
    RowLogprobs own, kept;
    RowHistory history{false, kPrompt, kOutput};
    const int32_t token = sampler.sample(a, p, 5, history, &own);
    history.raw = logits;
    ASSERT_EQ(sampler.sample(b, p, 5, history, &kept), token);
    EXPECT_EQ(std::bit_cast<uint32_t>(own.chosen.logprob),
              std::bit_cast<uint32_t>(kept.chosen.logprob));
  }
  SamplingParams plain;
  EXPECT_FALSE(Sampler::may_touch_row(plain));  // T = 1, nothing else
  plain.temperature = 0.0f;
  EXPECT_FALSE(Sampler::may_touch_row(plain));
}

TEST(SamplerLogprobs, AskingForThemNeverChangesTheToken) {
  const int32_t n = 2000;
  Sampler with({n, {1}}), without({n, {1}});
  for (uint64_t seed = 0; seed < 80; ++seed) {
    std::vector<float> logits = normal_logits(n, 3.0f, static_cast<uint32_t>(seed));
    logits[5] = logits[900];  // a tie
    logits[6] = -std::numeric_limits<float>::infinity();
    logits[7] = std::numeric_limits<float>::quiet_NaN();
    if (seed % 17 == 0) logits[1500] = std::numeric_limits<float>::infinity();
    SamplingParams p;
    p.seed = seed;
    p.temperature = seed % 4 == 0 ? 0.0f : (seed % 4 == 3 ? 0.8f : 1.0f);
    p.top_k = seed % 5 == 1 ? 40 : 0;
    if (seed % 7 == 2) p.logit_bias = {{3, 5.0f}};
    if (seed % 9 == 4) p.repetition_penalty = 1.3f;
    p.ignore_eos = seed % 11 == 5;
    std::vector<float> a = logits, b = logits;
    RowLogprobs lp;
    const int32_t plain = without.sample(a, p, 3, {false, kPrompt, kOutput});
    p.logprobs = static_cast<int32_t>(seed % 6);
    ASSERT_EQ(with.sample(b, p, 3, {false, kPrompt, kOutput}, &lp), plain) << seed;
    EXPECT_EQ(lp.chosen.id, plain);
  }
}

TEST(SamplerLogprobs, ZeroTopGivesOnlyTheChosenAndTiesGoToTheLowerId) {
  Sampler sampler({6, {}});
  SamplingParams p;
  p.temperature = 0.0f;
  p.logprobs = 0;
  std::vector<float> row = {1, 3, 0, 3, 2, -std::numeric_limits<float>::infinity()};
  RowLogprobs lp;
  EXPECT_EQ(sampler.sample(row, p, 0, {}, &lp), 1);
  EXPECT_TRUE(lp.top.empty());
  row = {1, 3, 0, 3, 2, -std::numeric_limits<float>::infinity()};
  p.logprobs = 6;
  sampler.sample(row, p, 0, {}, &lp);
  ASSERT_EQ(lp.top.size(), 5u);  // the -inf token is never listed
  EXPECT_EQ(lp.top[0].id, 1);
  EXPECT_EQ(lp.top[1].id, 3);
  EXPECT_EQ(lp.top[0].logprob, lp.top[1].logprob);
  EXPECT_EQ(lp.top[2].id, 4);
}

TEST(SamplerLogprobs, LogprobsOfScoresATargetAndLeavesTheRowAlone) {
  const int32_t n = 500;
  Sampler sampler({n, {}});
  const std::vector<float> logits = normal_logits(n, 2.0f, 5);
  const std::vector<double> want = reference_log_softmax(logits);
  RowLogprobs lp;
  sampler.logprobs_of(logits, 77, 3, lp);
  EXPECT_EQ(lp.chosen.id, 77);
  EXPECT_NEAR(lp.chosen.logprob, want[77], 1e-5);
  EXPECT_EQ(lp.top.size(), 3u);
  // The same values that sample() reports for the same row.
  SamplingParams p;
  p.logprobs = 3;
  p.temperature = 0.0f;
  std::vector<float> row = logits;
  RowLogprobs sampled;
  const int32_t token = sampler.sample(row, p, 2, {}, &sampled);
  RowLogprobs scored;
  sampler.logprobs_of(logits, token, 3, scored);
  EXPECT_EQ(sampled.chosen.logprob, scored.chosen.logprob);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(sampled.top[i].logprob, scored.top[i].logprob);
}

// The vector path gives the same tokens and the same logprob bits as the portable one.
TEST(SamplerPenaltiesAndLogprobs, PortableAndVectorPathsAgreeBitForBit) {
  if (sampler_kernels::avx512() == nullptr) GTEST_SKIP() << "this CPU has no AVX-512";
  const int32_t n = 32000;
  const auto vector_owned = testing::sampler_with_isa(nullptr, {n, {2}});
  const auto portable_owned = testing::sampler_with_isa("avx2", {n, {2}});
  Sampler& vector_sampler = *vector_owned;
  Sampler& portable_sampler = *portable_owned;
  ASSERT_TRUE(vector_sampler.uses_avx512());
  ASSERT_FALSE(portable_sampler.uses_avx512());
  std::vector<int32_t> prompt, output;
  for (int32_t i = 0; i < 300; ++i) prompt.push_back((i * 7919) % n);
  for (int32_t i = 0; i < 200; ++i) output.push_back((i * 104729) % 500);
  for (uint64_t seed = 0; seed < 60; ++seed) {
    SamplingParams p = penalties(1.0f + float(seed % 3) * 0.2f, float(seed % 5) * 0.3f - 0.6f,
                                 float(seed % 4) * 0.5f - 1.0f);
    p.temperature = seed % 6 == 0 ? 0.0f : 0.8f;
    p.top_p = seed % 2 == 0 ? 0.9f : 1.0f;
    p.logprobs = static_cast<int32_t>(seed % 21);
    p.seed = seed * 0x9e3779b9ull;
    const std::vector<float> logits = normal_logits(n, 3.0f, static_cast<uint32_t>(seed));
    std::vector<float> a = logits, b = logits;
    RowLogprobs la, lb;
    const RowHistory history{seed % 7 == 0, prompt, output};
    ASSERT_EQ(vector_sampler.sample(a, p, int64_t(seed) + 50, history, &la),
              portable_sampler.sample(b, p, int64_t(seed) + 50, history, &lb))
        << seed;
    ASSERT_EQ(la.chosen.logprob, lb.chosen.logprob) << seed;
    ASSERT_EQ(la.top.size(), lb.top.size());
    for (size_t i = 0; i < la.top.size(); ++i) {
      ASSERT_EQ(la.top[i].id, lb.top[i].id);
      ASSERT_EQ(la.top[i].logprob, lb.top[i].logprob);
    }
  }
}

}  // namespace
}  // namespace tandem::TANDEM_UNITY_ID
