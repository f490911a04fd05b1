// The grammar mask in the fused sampler: a masked token is never drawn, the mask is exactly
// a ban (the same token as banning every disallowed id with logit_bias -100, whatever the
// filters), rows without a mask are untouched, and the fallback keeps to the mask.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <random>
#include <vector>

#include "tests/runner/sampler/sampler_test_support.h"

namespace tandem::testing::TANDEM_UNITY_ID {
namespace {

constexpr int32_t kVocab = 1000;

std::vector<uint32_t> random_mask(std::mt19937& rng, double density) {
  std::vector<uint32_t> mask((kVocab + 31) / 32, 0);
  std::bernoulli_distribution keep(density);
  for (int32_t id = 0; id < kVocab; ++id) {
    if (keep(rng)) mask[id / 32] |= 1u << (id % 32);
  }
  return mask;
}

bool allowed(const std::vector<uint32_t>& mask, int32_t id) {
  return ((mask[id / 32] >> (id % 32)) & 1u) != 0;
}

SamplingParams random_params(std::mt19937& rng, uint64_t seed) {
  SamplingParams p;
  p.seed = seed;
  const int kind = static_cast<int>(rng() % 5);
  p.temperature = kind == 0 ? 0.0f : 0.7f;
  if (kind == 2) p.top_k = 20;
  if (kind == 3) p.top_p = 0.9f;
  if (kind == 4) p.min_p = 0.05f;
  return p;
}

TEST(SamplerGrammarMask, TheMaskIsExactlyABanOfEveryDisallowedToken) {
  for (const char* isa : {"avx2", static_cast<const char*>(nullptr)}) {
    auto sampler = sampler_with_isa(isa, SamplerConfig{kVocab, {kVocab - 1}});
    std::mt19937 rng(7);
    for (uint32_t trial = 0; trial < 300; ++trial) {
      const std::vector<uint32_t> mask = random_mask(rng, trial % 3 == 0 ? 0.01 : 0.4);
      const SamplingParams params = random_params(rng, trial);
      const std::vector<float> logits = normal_logits(kVocab, 3.0f, trial);
      std::vector<float> row = logits;
      RowHistory history;
      history.allowed = mask;
      const int32_t masked = sampler->sample(row, params, 100 + trial, history);

      SamplingParams banned = params;
      for (int32_t id = 0; id < kVocab; ++id) {
        if (!allowed(mask, id)) banned.logit_bias.emplace_back(id, -100.0f);
      }
      row = logits;
      const int32_t reference = sampler->sample(row, banned, 100 + trial);
      if (std::none_of(mask.begin(), mask.end(), [](uint32_t w) { return w != 0; })) continue;
      EXPECT_TRUE(allowed(mask, masked)) << "trial " << trial;
      EXPECT_EQ(masked, reference) << "trial " << trial;
    }
  }
}

TEST(SamplerGrammarMask, IdsPastTheMasksEndAreNotAllowed) {
  Sampler sampler(SamplerConfig{kVocab, {}});
  std::vector<float> logits(kVocab, 0.0f);
  logits[kVocab - 1] = 50.0f;  // the model's favourite lies past a 1-word mask
  const std::vector<uint32_t> mask = {1u << 5};
  RowHistory history;
  history.allowed = mask;
  SamplingParams greedy;
  greedy.temperature = 0.0f;
  EXPECT_EQ(sampler.sample(logits, greedy, 0, history), 5);
}

TEST(SamplerGrammarMask, TheFallbackKeepsToTheMask) {
  Sampler sampler(SamplerConfig{kVocab, {}});
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<uint32_t> mask((kVocab + 31) / 32, 0);
  mask[3] = 1u << 4 | 1u << 9;  // ids 100 and 105
  RowHistory history;
  history.allowed = mask;
  SamplingParams params;
  params.seed = 1;
  // Every allowed token banned by logit_bias: the best allowed raw logit.
  std::vector<float> logits = normal_logits(kVocab, 1.0f, 3);
  logits[100] = 2.0f;
  logits[105] = 1.0f;
  logits[7] = 30.0f;
  SamplingParams bans = params;
  bans.logit_bias = {{100, -100.0f}, {105, -100.0f}};
  std::vector<float> row = logits;
  EXPECT_EQ(sampler.sample(row, bans, 0, history), 100);
  // Every allowed logit -inf: the lowest allowed id.
  row.assign(kVocab, 0.0f);
  row[100] = row[105] = -inf;
  EXPECT_EQ(sampler.sample(row, params, 0, history), 100);
}

}  // namespace
}  // namespace tandem::testing::TANDEM_UNITY_ID
