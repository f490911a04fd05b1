// The infill step (sampler.h, step 5; llama.cpp's "infill" sampler): agreement with a literal
// reference (infill_reference.h) on random rows through every filter path, each of its
// outcomes on constructed rows (the end, prefix merging, both thresholds, the EOT answer),
// the draw's distribution, and the same tokens on every instruction set.
#include "runner/sampler/infill.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "runner/sampler/kernels.h"
#include "runner/sampler/sampler.h"
#include "tests/runner/sampler/infill_reference.h"
#include "tests/runner/sampler/reference.h"
#include "tests/runner/sampler/sampler_test_support.h"

namespace tandem::TANDEM_UNITY_ID {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

using testing::InfillSurvivor;
using testing::InfillVocab;
using testing::sampling_with;

SamplingParams infill_with(float temperature, int32_t top_k = 0, float top_p = 1.0f,
                           float min_p = 0.0f) {
  SamplingParams p = sampling_with(temperature, top_k, top_p, min_p);
  p.infill = true;
  return p;
}

// Logits whose softmax at T = 1 is proportional to `probs` (0: -inf, never kept).
std::vector<float> from_probs(const std::vector<float>& probs) {
  std::vector<float> logits;
  for (float p : probs) logits.push_back(p > 0 ? std::log(p) : -kInf);
  return logits;
}

std::unique_ptr<Sampler> sampler_for(const InfillVocab& vocab, int32_t n, const char* isa = nullptr,
                                     int32_t eot = -2) {
  return testing::sampler_with_isa(
      isa, SamplerConfig(n, vocab.eog, std::make_shared<const TokenPieces>(vocab.pieces),
                         eot == -2 ? vocab.eot : eot));
}

// Each token's count over `draws` positions (one seed): the draw is keyed by position.
std::vector<int> histogram(Sampler& sampler, const std::vector<float>& logits,
                           const SamplingParams& params, int draws) {
  std::vector<int> hits(logits.size() + 1, 0);
  std::vector<float> row;
  for (int d = 0; d < draws; ++d) {
    row = logits;
    const int32_t token = sampler.sample(row, params, 1000 + d);
    hits[static_cast<size_t>(token)] += 1;
  }
  return hits;
}

// What infill.cpp's apply() leaves of the reference's kept set.
std::vector<InfillSurvivor> survivors_of(const std::vector<float>& logits,
                                         const SamplingParams& params, const InfillVocab& vocab,
                                         const TokenPieces& pieces) {
  const std::vector<float> z = testing::tempered(logits, params.temperature);
  sampler_infill::Scratch scratch;
  for (int32_t id : testing::reference_kept(logits, params)) {
    sampler_infill::Token t;
    t.id = id;
    t.z = z[id];
    scratch.tokens.push_back(t);
  }
  // The reversed order: apply() must rank the set itself.
  std::reverse(scratch.tokens.begin(), scratch.tokens.end());
  const sampler_infill::Vocab v{&pieces, vocab.eog, vocab.eot};
  std::vector<InfillSurvivor> out;
  for (const sampler_infill::Token& t : sampler_infill::apply(v, scratch))
    out.push_back({t.id, t.p});
  return out;
}

void expect_same(const std::vector<InfillSurvivor>& got, const std::vector<InfillSurvivor>& want,
                 const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].id, want[i].id) << what << " at " << i;
    EXPECT_FLOAT_EQ(got[i].p, want[i].p) << what << " at " << i;
  }
}

// Pieces over a 3-letter alphabet, 0 to 4 bytes: most short ones are prefixes of many.
InfillVocab random_vocab(int32_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  InfillVocab v;
  for (int32_t id = 0; id < n; ++id) {
    std::string piece;
    const int len = static_cast<int>(rng() % 5);
    for (int i = 0; i < len; ++i) piece += "ab "[rng() % 3];
    v.pieces.push_back(piece);
  }
  v.eog = {n - 1, 3};
  v.pieces[static_cast<size_t>(n - 1)] = "";  // a control token, as most EOG are
  v.pieces[3] = "ab";                         // an EOG with text: it can merge too
  v.eot = n - 1;
  return v;
}

// Pieces as a real vocabulary has them, distinct and closed under prefixes: every string of
// 1 to 7 bytes over "ab c" (21844 of them) in a shuffled order, then "" (control tokens).
InfillVocab prefix_closed_vocab(int32_t n, uint32_t seed) {
  std::vector<std::string> all;
  for (size_t begin = 0, len = 1; len <= 7; ++len) {
    const size_t end = all.size();
    for (char c : std::string("ab c")) {
      if (len == 1) all.push_back(std::string(1, c));
      for (size_t i = begin; i < end; ++i) all.push_back(all[i] + c);
    }
    begin = end;
  }
  std::mt19937 rng(seed);
  std::shuffle(all.begin(), all.end(), rng);
  all.resize(std::min(all.size(), static_cast<size_t>(n)), "");
  all.resize(static_cast<size_t>(n), "");
  InfillVocab v;
  v.pieces = std::move(all);
  v.eog = {n - 1, 2};
  v.pieces[static_cast<size_t>(n - 1)] = "";
  v.eot = n - 1;
  return v;
}

TEST(SamplerInfill, MatchesTheReferenceThroughEveryFilterPath) {
  const int32_t n = 300;
  const InfillVocab vocab = random_vocab(n, 5);
  const TokenPieces pieces(vocab.pieces);
  auto sampler = sampler_for(vocab, n);
  const SamplingParams settings[] = {infill_with(1.0f, 40, 0.99f),
                                     infill_with(0.7f, 12),
                                     infill_with(1.0f),
                                     infill_with(1.3f, 0, 0.9f),
                                     infill_with(1.0f, 0, 1.0f, 0.02f),
                                     infill_with(1.1f, 0, 0.95f, 0.01f)};
  std::set<int32_t> tokens;
  int rows = 0;
  for (uint32_t r = 0; r < 40; ++r) {
    std::vector<float> logits = testing::normal_logits(n, 1.0f + 0.25f * float(r % 8), r);
    // Half the rows give the end a fighting chance, half bury it.
    logits[n - 1] = r % 2 == 0 ? logits[0] + 1.0f : -30.0f;
    logits[3] = r % 2 == 0 ? logits[1] : -30.0f;
    for (SamplingParams params : settings) {
      const std::vector<InfillSurvivor> want = testing::reference_infill(logits, params, vocab);
      const std::string what = "row " + std::to_string(r) + " k " + std::to_string(params.top_k);
      expect_same(survivors_of(logits, params, vocab, pieces), want, what);
      for (uint64_t seed = 1; seed <= 3; ++seed) {
        params.seed = seed * 0x9e3779b97f4a7c15ull;
        std::vector<float> row = logits;
        const int32_t token = sampler->sample(row, params, 50 + r);
        ASSERT_EQ(token, testing::reference_infill_token(want, params.seed, 50 + r)) << what;
        tokens.insert(token);
      }
      ++rows;
    }
  }
  EXPECT_EQ(rows, 240);
  EXPECT_GT(tokens.size(), 20u);  // not one outcome everywhere
}

// A row where plain sampling mostly picks text, but the end holds 3 * p_eog * n > p_txt.
TEST(SamplerInfill, EndOfGenerationDominatedRowsEnd) {
  InfillVocab vocab{{"x", "y", "z", "w", ""}, {4}, 4};
  const std::vector<float> logits = from_probs({0.4f, 0.3f, 0.1f, 0.1f, 0.1f});
  auto sampler = sampler_for(vocab, 5);
  // 3 * 0.1 * 5 = 1.5 > 0.9.
  const std::vector<int> with = histogram(*sampler, logits, infill_with(1.0f), 2000);
  EXPECT_EQ(with[4], 2000);
  const std::vector<int> without = histogram(*sampler, logits, sampling_with(1.0f), 2000);
  EXPECT_LT(without[4], 300);  // about 200 draws of 2000

  // Greedy ignores infill, as it ignores every filter.
  std::vector<float> row = logits;
  EXPECT_EQ(sampler->sample(row, infill_with(0.0f), 3), 0);
}

TEST(SamplerInfill, TokensWithACommonPrefixPoolTheirMass) {
  // "re" absorbs "ret" and "return" (0.30 + 0.22 + 0.20 = 0.72); "foo" (0.28) then falls
  // under 1 / 3, so "re" is certain.
  InfillVocab vocab{{"re", "ret", "return", "foo", ""}, {4}, 4};
  const std::vector<float> logits = from_probs({0.30f, 0.22f, 0.20f, 0.28f, 0.0f});
  const std::vector<InfillSurvivor> want =
      testing::reference_infill(logits, infill_with(1.0f), vocab);
  ASSERT_EQ(want.size(), 1u);
  EXPECT_EQ(want[0].id, 0);
  auto sampler = sampler_for(vocab, 5);
  EXPECT_EQ(histogram(*sampler, logits, infill_with(1.0f), 1000)[0], 1000);
  EXPECT_GT(histogram(*sampler, logits, sampling_with(1.0f), 1000)[2], 100);

  // The likelier extension keeps the pair's mass: "ret" (0.4) takes "re" (0.3); "x" (0.3)
  // then falls under 1 / 3.
  InfillVocab swapped{{"re", "ret", "x", ""}, {3}, 3};
  const std::vector<float> row = from_probs({0.3f, 0.4f, 0.3f, 0.0f});
  const TokenPieces pieces(swapped.pieces);
  const std::vector<InfillSurvivor> got = survivors_of(row, infill_with(1.0f), swapped, pieces);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].id, 1);
  EXPECT_EQ(histogram(*sampler_for(swapped, 4), row, infill_with(1.0f), 500)[1], 500);
}

// Frequencies over 20,000 positions against the draw's probabilities (`expected`: each
// survivor's share of the survivors' softmax, as llama.cpp's dist draws after the step),
// the survivors being the reference's: the standard error of a frequency near 0.5 is
// 0.0035, so 0.015 is over 4 of them.
void expect_frequencies(const InfillVocab& vocab, const std::vector<float>& logits,
                        const std::vector<InfillSurvivor>& expected) {
  const std::vector<InfillSurvivor> want =
      testing::reference_infill(logits, infill_with(1.0f), vocab);
  std::vector<InfillSurvivor> drawn;
  for (const InfillSurvivor& s : want)
    if (!s.merged) drawn.push_back(s);
  ASSERT_EQ(drawn.size(), expected.size());
  for (size_t i = 0; i < drawn.size(); ++i) EXPECT_EQ(drawn[i].id, expected[i].id);
  auto sampler = sampler_for(vocab, static_cast<int32_t>(logits.size()));
  constexpr int kDraws = 20000;
  const std::vector<int> hits = histogram(*sampler, logits, infill_with(1.0f), kDraws);
  int total = 0;
  for (const InfillSurvivor& s : expected) {
    EXPECT_NEAR(double(hits[s.id]) / kDraws, s.p, 0.015) << "token " << s.id;
    total += hits[s.id];
  }
  EXPECT_EQ(total, kDraws);  // nothing else is ever drawn
}

TEST(SamplerInfill, TextBelowOneFifthGoes) {
  // c (0.19) and d (0.01) go; a and b renormalize to 0.625 and 0.375, both above 1 / 3.
  InfillVocab vocab{{"a", "b", "c", "d", ""}, {4}, 4};
  expect_frequencies(vocab, from_probs({0.5f, 0.3f, 0.19f, 0.01f, 0.0f}),
                     {{0, 0.625f}, {1, 0.375f}});
}

TEST(SamplerInfill, TextBelowOneOverNPlusOneGoes) {
  // All three reach 0.2; with n = 3 the cut is 0.25, so c (0.21) goes.
  InfillVocab vocab{{"a", "b", "c", ""}, {3}, 3};
  expect_frequencies(vocab, from_probs({0.5f, 0.29f, 0.21f, 0.0f}),
                     {{0, 0.5f / 0.79f}, {1, 0.29f / 0.79f}});
}

TEST(SamplerInfill, MergedMassDecidesWhoSurvivesNotHowLikely) {
  // "a" takes "ab" (0.25 + 0.17 = 0.42): it survives, and "d" (0.23) then falls under 1 / 4.
  // The draw is llama.cpp's dist over the survivors' logits: c 0.35 and a 0.25 of 0.60.
  InfillVocab vocab{{"a", "ab", "c", "d", ""}, {4}, 4};
  const std::vector<float> logits = from_probs({0.25f, 0.17f, 0.35f, 0.23f, 0.0f});
  const std::vector<InfillSurvivor> want =
      testing::reference_infill(logits, infill_with(1.0f), vocab);
  ASSERT_EQ(want.size(), 2u);
  EXPECT_NEAR(want[1].p, 0.42f / 0.77f, 1e-5);  // the merged mass, in rank order after c
  expect_frequencies(vocab, logits, {{2, 0.35f / 0.60f}, {0, 0.25f / 0.60f}});
}

TEST(SamplerInfill, NothingLikelyLeftGivesTheEndOfTurnToken) {
  // Eight text tokens at 0.125 each, the two EOG ids outside top_k: every text token goes.
  InfillVocab vocab{{"a", "b", "c", "d", "e", "f", "g", "h", "", ""}, {8, 9}, 9};
  std::vector<float> logits(10, 0.0f);
  logits[8] = logits[9] = -5.0f;
  const SamplingParams params = infill_with(1.0f, 8);
  EXPECT_EQ(histogram(*sampler_for(vocab, 10), logits, params, 200)[9], 200);
  // No end-of-turn id given: the first end-of-generation id in the vocabulary.
  EXPECT_EQ(histogram(*sampler_for(vocab, 10, nullptr, -1), logits, params, 200)[8], 200);
  InfillVocab outside = vocab;
  outside.eog = {40, 9, 8};
  EXPECT_EQ(histogram(*sampler_for(outside, 10, nullptr, 12), logits, params, 200)[9], 200);

  // A row that bans the end (ignore_eos) gets a text token instead: the draw runs over the
  // merged tokens, here all eight at 0.125.
  SamplingParams banned = params;
  banned.ignore_eos = true;
  const std::vector<int> hits = histogram(*sampler_for(vocab, 10), logits, banned, 4000);
  EXPECT_EQ(hits[8] + hits[9], 0);
  for (int32_t id = 0; id < 8; ++id) EXPECT_NEAR(hits[id] / 4000.0, 0.125, 0.03) << id;
}

TEST(SamplerInfill, LogprobsStayTheRawLogSoftmax) {
  InfillVocab vocab{{"x", "y", "z", "w", ""}, {4}, 4};
  const std::vector<float> logits = from_probs({0.4f, 0.3f, 0.1f, 0.1f, 0.1f});
  auto sampler = sampler_for(vocab, 5);
  SamplingParams params = infill_with(1.0f);
  params.logprobs = 2;
  std::vector<float> row = logits;
  RowLogprobs lp;
  ASSERT_EQ(sampler->sample(row, params, 9, {}, &lp), 4);  // the end, forced
  EXPECT_NEAR(lp.chosen.logprob, std::log(0.1f), 1e-5);
  ASSERT_EQ(lp.top.size(), 2u);
  EXPECT_EQ(lp.top[0].id, 0);
  EXPECT_NEAR(lp.top[0].logprob, std::log(0.4f), 1e-5);
}

// A real-sized vocabulary through the AVX-512 kernels and the lower ISA's (TANDEM_ISA names
// it; "portable" selects the lower table, AVX2's where the CPU has it). Each row lifts three
// tokens above a flat background, so most rows leave two or three survivors to draw from;
// every third row lifts the end above them.
TEST(SamplerInfill, SameTokensOnEveryInstructionSet) {
  const int32_t n = 32000;
  const InfillVocab vocab = prefix_closed_vocab(n, 11);
  auto best = sampler_for(vocab, n);
  auto portable = sampler_for(vocab, n, "portable");
  EXPECT_FALSE(portable->uses_avx512());
  const SamplingParams settings[] = {infill_with(1.0f, 40, 0.99f), infill_with(0.8f, 0, 0.95f),
                                     infill_with(1.0f), infill_with(1.2f, 20, 1.0f, 0.05f)};
  std::set<int32_t> tokens;
  std::mt19937 rng(3);
  for (uint32_t r = 0; r < 6; ++r) {
    std::vector<float> logits = testing::normal_logits(n, 1.0f, 100 + r);
    for (float lift : {12.0f, 11.7f, 11.3f}) logits[rng() % uint32_t(n - 1)] += lift;
    if (r % 3 == 0) logits[n - 1] = 13.0f;
    for (SamplingParams params : settings) {
      for (uint64_t seed = 0; seed < 10; ++seed) {
        params.seed = seed * 0x9e3779b9ull + r;
        std::vector<float> a = logits, b = logits;
        const int32_t token = best->sample(a, params, int64_t(seed) + 7);
        ASSERT_EQ(token, portable->sample(b, params, int64_t(seed) + 7)) << r << " " << seed;
        tokens.insert(token);
      }
    }
  }
  EXPECT_TRUE(tokens.count(n - 1));
  EXPECT_GE(tokens.size(), 6u);  // two or three per row that draws
}

}  // namespace
}  // namespace tandem::TANDEM_UNITY_ID
