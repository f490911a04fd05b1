// llama.cpp's penalties (SamplingParams::penalty_last_n > 0) in the fused sampler, against a
// reference written as llama.cpp keeps them: a ring of the last N accepted tokens (the
// prompt's first, then the output's), a map of counts, and per counted id the repetition
// on the logit's sign, then logit -= count * frequency + presence.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <random>
#include <vector>

#include "runner/sampler/sampler.h"
#include "tests/runner/sampler/reference.h"
#include "tests/runner/sampler/sampler_test_support.h"

namespace tandem::TANDEM_UNITY_ID {
namespace {

using testing::normal_logits;

std::vector<float> reference_window(std::vector<float> logits, const SamplingParams& p,
                                    const std::vector<int32_t>& prompt,
                                    const std::vector<int32_t>& output) {
  std::deque<int32_t> ring;
  for (const std::vector<int32_t>* part : {&prompt, &output}) {
    for (int32_t id : *part) {
      ring.push_back(id);
      if (ring.size() > static_cast<size_t>(p.penalty_last_n)) ring.pop_front();
    }
  }
  std::map<int32_t, int> counts;
  for (int32_t id : ring) ++counts[id];
  for (const auto& [id, count] : counts) {
    float& x = logits[id];
    x = x <= 0.0f ? x * p.repetition_penalty : x / p.repetition_penalty;
    x -= float(count) * p.frequency_penalty + float(count > 0) * p.presence_penalty;
  }
  return logits;
}

SamplingParams window(int32_t last_n, float repetition, float frequency, float presence) {
  SamplingParams p;
  p.penalty_last_n = last_n;
  p.repetition_penalty = repetition;
  p.frequency_penalty = frequency;
  p.presence_penalty = presence;
  return p;
}

std::vector<int32_t> random_tokens(std::mt19937& rng, int32_t vocab, int max_len) {
  std::vector<int32_t> out(std::uniform_int_distribution<int>(0, max_len)(rng));
  // A small alphabet, so that ids repeat and counts exceed one.
  for (int32_t& t : out) t = std::uniform_int_distribution<int32_t>(0, vocab / 4)(rng);
  return out;
}

TEST(SamplerWindowPenalties, GreedyPicksTheArgmaxOfTheReferencesLogits) {
  const int32_t n = 64;
  Sampler sampler({n, {}});
  std::mt19937 rng(7);
  int differs_from_unpenalized = 0;
  int differs_from_vllm = 0;
  for (uint32_t round = 0; round < 400; ++round) {
    const std::vector<int32_t> prompt = random_tokens(rng, n, 24);
    const std::vector<int32_t> output = random_tokens(rng, n, 24);
    std::vector<float> logits = normal_logits(n, 2.0f, round);
    for (int32_t id = 0; id <= n / 4; ++id) logits[id] += 2.5f;  // the history's ids lead
    const int32_t last_n =
        std::vector<int32_t>{1, 3, 8, 20, 64, SamplingParams::kWholeHistory}[round % 6];
    const std::vector<SamplingParams> cases = {
        window(last_n, 1.8f, 0, 0), window(last_n, 1, 0.7f, 0), window(last_n, 1, 0, 1.5f),
        window(last_n, 1.3f, -0.5f, 2.0f), window(last_n, 0.6f, 0.4f, -1.0f)};
    for (SamplingParams p : cases) {
      p.temperature = 0.0f;
      const std::vector<float> want = reference_window(logits, p, prompt, output);
      const auto expected =
          static_cast<int32_t>(std::max_element(want.begin(), want.end()) - want.begin());
      std::vector<float> row = logits;
      ASSERT_EQ(sampler.sample(row, p, 5, {false, prompt, output}), expected)
          << "round " << round << " last_n " << last_n;
      differs_from_unpenalized +=
          expected != std::max_element(logits.begin(), logits.end()) - logits.begin();
      SamplingParams vllm = p;
      vllm.penalty_last_n = 0;
      row = logits;
      differs_from_vllm += sampler.sample(row, vllm, 5, {false, prompt, output}) != expected;
    }
  }
  EXPECT_GT(differs_from_unpenalized, 500);  // the penalties did change tokens
  EXPECT_GT(differs_from_vllm, 100);         // and the window is not vLLM's definition
}

// A caller may pass only the window's tail of each part (the scheduler does): the same
// token as with the whole history.
TEST(SamplerWindowPenalties, OnlyTheLastNTokensCount) {
  const int32_t n = 16;
  Sampler sampler({n, {}});
  std::vector<float> logits(n, 0.0f);
  logits[9] = 4.0f;
  logits[5] = 3.0f;
  // 9 is the prompt's first token: outside a window of 4, inside one of 6.
  const std::vector<int32_t> prompt = {9, 1, 2};
  const std::vector<int32_t> output = {3, 4, 6};
  SamplingParams p = window(4, 1, 2.0f, 0);
  p.temperature = 0.0f;
  std::vector<float> row = logits;
  EXPECT_EQ(sampler.sample(row, p, 1, {false, prompt, output}), 9);
  p.penalty_last_n = 6;
  row = logits;
  EXPECT_EQ(sampler.sample(row, p, 1, {false, prompt, output}), 5);
  const std::vector<int32_t> tail = {3, 4, 6};  // the output's last 3 suffice for a window of 3
  p.penalty_last_n = 3;
  row = logits;
  const int32_t whole = sampler.sample(row, p, 1, {false, prompt, output});
  row = logits;
  EXPECT_EQ(sampler.sample(row, p, 1, {false, {}, tail}), whole);
  // Frequency and presence count prompt tokens in the window, which vLLM's definition
  // leaves to repetition alone.
  p = window(SamplingParams::kWholeHistory, 1, 0, 1.5f);
  p.temperature = 0.0f;
  row = logits;
  EXPECT_EQ(sampler.sample(row, p, 1, {false, prompt, {}}), 5);
  // Log-probabilities stay the raw ones when only the prompt's tokens are counted.
  p.presence_penalty = 0.5f;
  p.logprobs = 0;
  RowLogprobs lp;
  row = logits;
  ASSERT_EQ(sampler.sample(row, p, 1, {false, prompt, {}}, &lp), 9);
  double z = 0.0;
  for (float x : logits) z += std::exp(double(x));
  EXPECT_NEAR(lp.chosen.logprob, 4.0 - std::log(z), 1e-5);
}

// The empirical distribution matches softmax of the reference's logits, within a total
// variation of 0.01 over 100,000 seeds.
TEST(SamplerWindowPenalties, SamplingFollowsThePenalizedDistribution) {
  const int32_t n = 32;
  const std::vector<float> logits = normal_logits(n, 1.5f, 3);
  const std::vector<int32_t> prompt = {1, 2, 3, 3, 9, 4};
  const std::vector<int32_t> output = {3, 4, 4, 4, 7, 0};
  for (SamplingParams p : {window(5, 1.5f, 0.5f, 0.5f), window(9, 0.8f, -0.4f, 1.0f)}) {
    p.temperature = 0.9f;
    p.top_k = 20;
    const std::vector<double> expected =
        testing::reference_probs(reference_window(logits, p, prompt, output), p);
    Sampler sampler({n, {}});
    EXPECT_LE(
        testing::drawn_total_variation(sampler, logits, p, 3, {false, prompt, output}, expected),
        0.01);
  }
}

}  // namespace
}  // namespace tandem::TANDEM_UNITY_ID
