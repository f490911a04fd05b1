// llama.cpp's DRY in the fused sampler (runner/sampler/dry.h): llama.cpp's own test vectors
// (test-sampling.cpp's test_dry: probabilities in, probabilities out), and a reference
// written from DRY's definition (a quadratic scan, no Z-algorithm) over random histories,
// breakers with tails, windows and allowed lengths; then the sampler around it: greedy and
// seeded draws follow the penalized logits, log-probabilities stay the raw ones, and the
// history's split between prompt and output does not matter.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <vector>

#include "protocol/dry_breakers.h"
#include "runner/sampler/dry.h"
#include "runner/sampler/sampler.h"
#include "tests/runner/sampler/sampler_test_support.h"

namespace tandem::TANDEM_UNITY_ID {
namespace {

using Sequences = std::vector<std::vector<int32_t>>;

// Breakers given as whole token sequences, as llama.cpp's test gives them.
std::shared_ptr<const DryBreakers> breakers_of(const Sequences& sequences) {
  auto out = std::make_shared<DryBreakers>();
  for (const auto& seq : sequences) out->add(seq.front(), {seq.begin() + 1, seq.end()});
  return out;
}

SamplingParams dry(float multiplier, float base, int32_t allowed, int32_t last_n,
                   const Sequences& breakers) {
  SamplingParams p;
  p.dry_multiplier = multiplier;
  p.dry_base = base;
  p.dry_allowed_length = allowed;
  p.dry_last_n = last_n;
  p.dry_breakers = breakers_of(breakers);
  return p;
}

std::vector<double> softmax(const std::vector<float>& logits) {
  double max = -INFINITY, sum = 0;
  for (float x : logits) max = std::max(max, double(x));
  std::vector<double> p;
  for (float x : logits) p.push_back(std::exp(double(x) - max));
  for (double v : p) sum += v;
  for (double& v : p) v /= sum;
  return p;
}

// DRY as its definition reads, in the plainest code.
std::vector<float> reference_dry(std::vector<float> logits, const SamplingParams& p,
                                 const std::vector<int32_t>& history, const Sequences& breakers) {
  const size_t keep = std::min(history.size(), static_cast<size_t>(p.dry_last_n));
  const std::vector<int32_t> h(history.end() - static_cast<std::ptrdiff_t>(keep), history.end());
  const int L = static_cast<int>(h.size());
  const int A = p.dry_allowed_length;
  if (L <= A) return logits;
  // The breaker that starts last (the longest of those starting there) ends the repeats
  // that can count: only the tokens after it.
  int limit = L;
  for (int start = L - 1; start >= 0 && limit == L; --start) {
    int longest = 0;
    for (const auto& b : breakers) {
      const int len = static_cast<int>(b.size());
      if (start + len <= L && std::equal(b.begin(), b.end(), h.begin() + start)) {
        longest = std::max(longest, len);
      }
    }
    if (longest > 0) limit = L - (start + longest);
  }
  if (limit < A) return logits;
  std::map<int32_t, int> longest_repeat;
  for (int e = 0; e + 1 < L; ++e) {
    int n = 0;
    while (n <= e && h[e - n] == h[L - 1 - n]) ++n;
    n = std::min(n, limit);
    if (n >= A) longest_repeat[h[e + 1]] = std::max(longest_repeat[h[e + 1]], n);
  }
  for (const auto& [id, n] : longest_repeat) {
    const bool single =
        std::find(breakers.begin(), breakers.end(), std::vector<int32_t>{id}) != breakers.end();
    if (single) continue;
    logits[id] -= static_cast<float>(p.dry_multiplier * std::pow(double(p.dry_base), n - A));
  }
  return logits;
}

struct LlamaCase {
  std::vector<float> probs;
  std::vector<int32_t> history;
  std::vector<float> expected;
  float multiplier, base;
  int32_t allowed, last_n;
  Sequences breakers;
};

// llama.cpp's tests/test-sampling.cpp, test_dry's five cases.
// The heads' bit map answers for every id: heads, ids between and beyond them, negatives.
TEST(SamplerDry, BreakersAnswerTailsOfHeadsOnly) {
  DryBreakers b;
  b.add(0, {});
  b.add(63, {7});
  b.add(64, {7, 8});
  b.add(64, {7, 8});  // kept once
  b.add(200000, {});
  b.add(-1, {});  // not a vocabulary id: ignored
  for (int32_t id : {0, 63, 64, 200000}) EXPECT_NE(b.tails_of(id), nullptr) << id;
  for (int32_t id : {-1, 1, 62, 65, 127, 128, 199999, 200001, 1 << 30}) {
    EXPECT_EQ(b.tails_of(id), nullptr) << id;
  }
  EXPECT_EQ(b.tails_of(64)->size(), 1u);
  EXPECT_TRUE(b.single_token(0));
  EXPECT_FALSE(b.single_token(63));
  EXPECT_FALSE(b.single_token(5));
  EXPECT_EQ(b.tails().size(), 4u);
}

TEST(SamplerDry, MatchesLlamaCppsTestVectors) {
  const std::vector<LlamaCase> cases = {
      {{0.25f, 0.25f, 0.25f, 0.25f}, {0, 1}, {0.25f, 0.25f, 0.25f, 0.25f}, 1.0f, 1.1f, 2, 4, {}},
      {{0.25f, 0.25f, 0.25f, 0.25f},
       {0, 1, 2, 0, 1},
       {0.296923f, 0.296923f, 0.109232f, 0.296923f},
       1.0f,
       1.1f,
       2,
       5,
       {}},
      {{0.2f, 0.2f, 0.2f, 0.2f, 0.2f},
       {0, 1, 3, 4, 0, 1},
       {0.2f, 0.2f, 0.2f, 0.2f, 0.2f},
       1.0f,
       1.1f,
       2,
       6,
       {{3}}},
      {{0.2f, 0.2f, 0.2f, 0.2f, 0.2f},
       {0, 1, 2, 0, 1},
       {0.241818f, 0.241818f, 0.032727f, 0.241818f, 0.241818f},
       2.0f,
       1.1f,
       2,
       5,
       {}},
      {{0.2f, 0.2f, 0.2f, 0.2f, 0.2f},
       {0, 1, 2, 3, 4, 0, 1},
       {0.2f, 0.2f, 0.2f, 0.2f, 0.2f},
       1.0f,
       1.1f,
       4,
       7,
       {}},
  };
  sampler_dry::Scratch scratch;
  for (size_t c = 0; c < cases.size(); ++c) {
    const LlamaCase& t = cases[c];
    std::vector<float> logits;
    for (float p : t.probs) logits.push_back(std::log(p));
    const SamplingParams p = dry(t.multiplier, t.base, t.allowed, t.last_n, t.breakers);
    sampler_dry::apply(logits, p, {}, t.history, scratch);
    const std::vector<double> got = softmax(logits);
    for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], t.expected[i], 1e-5) << c;
  }
}

std::vector<int32_t> random_history(std::mt19937& rng, int alphabet, int max_len) {
  std::vector<int32_t> out(std::uniform_int_distribution<int>(0, max_len)(rng));
  for (int32_t& t : out) t = std::uniform_int_distribution<int32_t>(0, alphabet - 1)(rng);
  // Copy a stretch to the end now and then: long repeats, not only chance ones.
  if (out.size() > 8 && rng() % 2 == 0) {
    const size_t from = rng() % (out.size() / 2), len = 2 + rng() % 6;
    for (size_t i = 0; i < len && from + i < out.size(); ++i) out.push_back(out[from + i]);
  }
  return out;
}

TEST(SamplerDry, EqualsTheDefinitionOverRandomHistoriesAndBreakers) {
  std::mt19937 rng(11);
  sampler_dry::Scratch scratch;
  int penalized = 0, limited = 0;
  for (int round = 0; round < 3000; ++round) {
    const int alphabet = 2 + static_cast<int>(rng() % 6);
    const std::vector<int32_t> history = random_history(rng, alphabet, 60);
    Sequences breakers;
    for (int b = static_cast<int>(rng() % 3); b > 0; --b) {
      std::vector<int32_t> seq(1 + rng() % 3);
      for (int32_t& t : seq) t = static_cast<int32_t>(rng() % alphabet);
      breakers.push_back(seq);
    }
    const int32_t last_n = std::vector<int32_t>{3, 9, 30, SamplingParams::kWholeHistory}[rng() % 4];
    const SamplingParams p = dry(std::vector<float>{0.8f, 2.0f}[rng() % 2],
                                 std::vector<float>{1.0f, 1.75f, 3.0f}[rng() % 3],
                                 static_cast<int32_t>(rng() % 4), last_n, breakers);
    const std::vector<float> logits = testing::normal_logits(8, 1.5f, static_cast<uint32_t>(round));
    const std::vector<float> want = reference_dry(logits, p, history, breakers);
    // The history split anywhere between prompt and output reads the same.
    const size_t split = history.empty() ? 0 : rng() % (history.size() + 1);
    const std::vector<int32_t> prompt(history.begin(), history.begin() + split);
    const std::vector<int32_t> output(history.begin() + split, history.end());
    std::vector<float> got = logits;
    sampler_dry::apply(got, p, prompt, output, scratch);
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_NEAR(got[i], want[i], 1e-6f * std::max(1.0f, std::abs(want[i])))
          << "round " << round << " id " << i;
    }
    penalized += got != logits;
    limited += sampler_dry::repeat_limit(history, p.dry_breakers.get()) <
               static_cast<int32_t>(history.size());
  }
  // The cases exercised what they claim to.
  EXPECT_GT(penalized, 1000);
  EXPECT_GT(limited, 500);
}

TEST(SamplerDry, ABreakerInTheRepeatCutsItShortAndASingleTokenBreakerIsNeverPenalized) {
  // 7 8 9 5 7 8: "7 8" repeats, and 9 would extend it.
  const std::vector<int32_t> history = {7, 8, 9, 5, 7, 8};
  sampler_dry::Scratch scratch;
  std::vector<float> logits(10, 0.0f);
  sampler_dry::apply(logits, dry(1.0f, 2.0f, 2, 64, {}), {}, history, scratch);
  EXPECT_FLOAT_EQ(logits[9], -1.0f);  // 1 * 2^(2 - 2)
  // A breaker 8 right at the end leaves nothing to repeat.
  std::vector<float> cut(10, 0.0f);
  sampler_dry::apply(cut, dry(1.0f, 2.0f, 2, 64, {{8}}), {}, history, scratch);
  EXPECT_EQ(cut, std::vector<float>(10, 0.0f));
  // A two-token breaker "5 7" ends one token before the end: repeats of one token only.
  std::vector<float> two(10, 0.0f);
  sampler_dry::apply(two, dry(1.0f, 2.0f, 1, 64, {{5, 7}}), {}, history, scratch);
  EXPECT_FLOAT_EQ(two[9], -1.0f);  // "8" repeated, capped at the limit 1: 2^(1 - 1)
  // 9 as a single-token breaker is never penalized itself.
  std::vector<float> single(10, 0.0f);
  sampler_dry::apply(single, dry(1.0f, 2.0f, 2, 64, {{9}}), {}, history, scratch);
  EXPECT_FLOAT_EQ(single[9], 0.0f);
}

TEST(SamplerDry, LongRepeatsGetACappedFinitePenalty) {
  // A phrase of 4 repeated 60 times: a repeat of 236 tokens.
  std::vector<int32_t> history;
  for (int r = 0; r < 60; ++r) history.insert(history.end(), {1, 2, 3, 4});
  sampler_dry::Scratch scratch;
  std::vector<float> logits(6, 0.0f);
  sampler_dry::apply(logits, dry(1.0f, 1.75f, 2, SamplingParams::kWholeHistory, {}), {}, history,
                     scratch);
  // The repeat of 236 would be 1.75^234; the cap is floor(88.72 / ln 1.75) = 158.
  EXPECT_TRUE(std::isfinite(logits[1]));
  EXPECT_FLOAT_EQ(logits[1], -sampler_dry::penalty(1.0f, 1.75f, 158));
  EXPECT_GT(-logits[1], 1e38f);
  EXPECT_FLOAT_EQ(sampler_dry::penalty(1.0f, 2.0f, 127), std::ldexp(1.0f, 127));
  EXPECT_FLOAT_EQ(sampler_dry::penalty(0.5f, 1.75f, 3), 0.5f * 1.75f * 1.75f * 1.75f);
  // Base 1: every repeat costs the multiplier alone.
  std::vector<float> flat(6, 0.0f);
  sampler_dry::apply(flat, dry(0.7f, 1.0f, 2, SamplingParams::kWholeHistory, {}), {}, history,
                     scratch);
  EXPECT_FLOAT_EQ(flat[1], -0.7f);
}

TEST(SamplerDry, TheSamplerDrawsFromThePenalizedLogitsAndReportsTheRawOnes) {
  const int32_t n = 16;
  Sampler sampler({n, {}});
  // The history ends "3 4", which came before followed by 5; 5 is the model's favourite.
  const std::vector<int32_t> prompt = {3, 4, 5, 9};
  const std::vector<int32_t> output = {3, 4};
  std::vector<float> logits(n, 0.0f);
  logits[5] = 2.0f;
  logits[6] = 1.5f;
  SamplingParams p = dry(1.0f, 1.75f, 2, SamplingParams::kWholeHistory, {});
  p.temperature = 0.0f;
  p.logprobs = 1;
  RowHistory history;
  history.prompt = prompt;
  history.output = output;
  std::vector<float> row = logits;
  RowLogprobs lp;
  EXPECT_EQ(sampler.sample(row, p, 10, history, &lp), 6);
  // The raw log-softmax: 6's logprob, and 5 still listed first.
  const std::vector<double> raw = softmax(logits);
  EXPECT_NEAR(lp.chosen.logprob, std::log(raw[6]), 1e-5);
  ASSERT_EQ(lp.top.size(), 1u);
  EXPECT_EQ(lp.top[0].id, 5);
  // A window of 2 sees no earlier "3 4": the favourite stays.
  p.dry_last_n = 2;
  row = logits;
  EXPECT_EQ(sampler.sample(row, p, 10, history), 5);
  // Seeded draws follow the softmax of the reference's logits.
  p.dry_last_n = SamplingParams::kWholeHistory;
  p.temperature = 1.0f;
  p.logprobs = -1;
  std::vector<int32_t> whole = prompt;
  whole.insert(whole.end(), output.begin(), output.end());
  const std::vector<double> expected = softmax(reference_dry(logits, p, whole, {}));
  EXPECT_LT(testing::drawn_total_variation(sampler, logits, p, 10, history, expected), 0.01);
}

}  // namespace
}  // namespace tandem::TANDEM_UNITY_ID
