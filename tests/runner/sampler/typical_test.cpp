// llama.cpp's locally typical sampling in the fused sampler (runner/sampler/typical.h):
// llama.cpp's own test vectors (test-sampling.cpp's test_typical, one of which drops the
// likeliest token), the choice against a plain double-precision reading of the definition,
// and tokens against the reference beside the other filters (llama.cpp's orders:
// chain_order_test.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>
#include <random>
#include <vector>

#include "runner/sampler/sampler.h"
#include "runner/sampler/typical.h"
#include "tests/runner/sampler/reference.h"
#include "tests/runner/sampler/sampler_test_support.h"

namespace tandem::TANDEM_UNITY_ID {
namespace {

std::vector<float> log_of(const std::vector<float>& probs) {
  std::vector<float> out;
  for (float p : probs) out.push_back(std::log(p));
  return out;
}

// typical.h's choice over a whole set given in id order 0, 1, ...
size_t typical_of(const std::vector<float>& z, float p, std::vector<uint8_t>& keep) {
  const float z_max = *std::max_element(z.begin(), z.end());
  std::vector<float> e;
  for (float v : z) e.push_back(sampler_kernels::exp_shifted(v - z_max));
  std::vector<int32_t> ids(z.size());
  std::iota(ids.begin(), ids.end(), 0);
  sampler_typical::Scratch scratch;
  return sampler_typical::mark_typical(z, e, z_max, ids, p, scratch, keep);
}

TEST(SamplerTypical, MatchesLlamaCppsTestVectors) {
  struct Case {
    std::vector<float> probs;
    float typical_p;
    std::vector<double> expected;
  };
  const std::vector<Case> cases = {
      {{0.97f, 0.01f, 0.01f, 0.01f}, 0.5f, {1.0, 0.0, 0.0, 0.0}},
      // The likeliest token is the least typical: it goes.
      {{0.4f, 0.2f, 0.2f, 0.2f}, 0.5f, {0.0, 1.0 / 3, 1.0 / 3, 1.0 / 3}},
  };
  Sampler sampler({4, {}});
  for (const Case& c : cases) {
    const std::vector<float> logits = log_of(c.probs);
    std::vector<uint8_t> keep;
    const size_t kept = typical_of(logits, c.typical_p, keep);
    EXPECT_EQ(kept, static_cast<size_t>(std::count(keep.begin(), keep.end(), 1)));
    for (size_t i = 0; i < 4; ++i) EXPECT_EQ(keep[i] != 0, c.expected[i] > 0) << i;
    SamplingParams p;
    p.typical_p = c.typical_p;
    EXPECT_LT(testing::drawn_total_variation(sampler, logits, p, 3, {}, c.expected), 0.01);
  }
}

// Greedy takes the best of what the chain keeps, as llama.cpp's does: where typ_p drops the
// top token, the best of the rest (the lowest id among equals), and it draws no noise.
TEST(SamplerTypical, GreedyTakesTheBestTokenTypPKeeps) {
  Sampler sampler({4, {}});
  const std::vector<float> logits = log_of({0.4f, 0.2f, 0.2f, 0.2f});
  SamplingParams p;
  p.temperature = 0.0f;
  p.typical_p = 0.5f;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    p.seed = seed;
    std::vector<float> row = logits;
    EXPECT_EQ(sampler.sample(row, p, 1), 1);
  }
  p.typical_p = 1.0f;
  std::vector<float> row = logits;
  EXPECT_EQ(sampler.sample(row, p, 1), 0);
}

// The definition's order: by score, then z descending, then id (scores in double or float).
template <typename Score>
std::vector<size_t> typical_order(const std::vector<Score>& score, const std::vector<float>& z,
                                  const std::vector<int32_t>& ids) {
  std::vector<size_t> order(score.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (score[a] != score[b]) return score[a] < score[b];
    if (z[a] != z[b]) return z[a] > z[b];
    return ids[a] < ids[b];
  });
  return order;
}

// The definition in double: returns the kept flags, or nothing where the float computation
// may honestly decide otherwise (two scores, or the mass and typical_p, within 1e-4).
std::optional<std::vector<uint8_t>> plain_typical(const std::vector<float>& z,
                                                  const std::vector<int32_t>& ids, float p) {
  const size_t n = z.size();
  const double z_max = *std::max_element(z.begin(), z.end());
  std::vector<double> prob(n);
  double sum = 0, entropy = 0;
  for (size_t i = 0; i < n; ++i) sum += prob[i] = std::exp(z[i] - z_max);
  for (double& v : prob) v /= sum;
  for (size_t i = 0; i < n; ++i) entropy -= prob[i] > 0 ? prob[i] * std::log(prob[i]) : 0.0;
  std::vector<double> score(n);
  for (size_t i = 0; i < n; ++i) score[i] = std::abs(std::log(sum) - (z[i] - z_max) - entropy);
  const std::vector<size_t> order = typical_order(score, z, ids);
  std::vector<uint8_t> keep(n, 0);
  double mass = 0;
  for (size_t r = 0; r < n; ++r) {
    const size_t i = order[r];
    keep[i] = 1;
    mass += prob[i];
    if (r + 1 < n && std::abs(score[order[r + 1]] - score[i]) < 1e-4) return std::nullopt;
    if (std::abs(mass - p) < 1e-4) return std::nullopt;
    if (mass > p) break;
  }
  return keep;
}

TEST(SamplerTypical, ChoosesAsThePlainDefinitionDoes) {
  std::mt19937 rng(21);
  int compared = 0, dropped_top = 0;
  for (int round = 0; round < 2000; ++round) {
    // Up to 3000 tokens: past the first chunks of the selection.
    const size_t n = round % 10 == 0 ? 1000 + rng() % 2000 : 2 + rng() % 60;
    std::vector<float> z = testing::normal_logits(static_cast<int32_t>(n), 0.5f + float(round % 4),
                                                  static_cast<uint32_t>(round));
    std::vector<int32_t> ids(n);
    std::iota(ids.begin(), ids.end(), 0);
    const float p = std::vector<float>{0.1f, 0.5f, 0.9f, 0.95f}[round % 4];
    const auto want = plain_typical(z, ids, p);
    if (!want) continue;
    std::vector<uint8_t> keep;
    typical_of(z, p, keep);
    ASSERT_EQ(keep, *want) << "round " << round;
    ++compared;
    const size_t top = std::max_element(z.begin(), z.end()) - z.begin();
    dropped_top += keep[top] == 0;
  }
  EXPECT_GT(compared, 1500);
  EXPECT_GT(dropped_top, 100);
}

// keep_in_order's walk against the whole order sorted at once, in float as it sums: the
// bucketed selection must keep the same tokens, bit for bit, including equal scores (equal z,
// and scores mirrored about H by different z), a bucket holding nearly the whole set, and a
// float sum that falls short of where the double one passed typical_p.
size_t kept_by_a_whole_sort(const std::vector<float>& score, const std::vector<float>& p,
                            const std::vector<float>& z, const std::vector<int32_t>& ids,
                            float typical_p, std::vector<uint8_t>& keep) {
  const size_t n = score.size();
  const std::vector<size_t> order = typical_order(score, z, ids);
  keep.assign(n, 0);
  float mass = 0.0f;
  for (size_t r = 0; r < n; ++r) {
    keep[order[r]] = 1;
    mass = mass + p[order[r]];
    if (mass > typical_p) return r + 1;
  }
  return n;
}

TEST(SamplerTypical, TheBucketedWalkKeepsWhatAWholeSortKeeps) {
  std::mt19937 rng(77);
  sampler_typical::Scratch scratch;
  int cut_inside = 0;
  for (int round = 0; round < 240; ++round) {
    const size_t n = std::vector<size_t>{1, 7, 900, 1025, 5000, 40000}[round % 6];
    std::vector<float> z(n), score(n), p(n);
    std::vector<int32_t> ids(n);
    std::uniform_real_distribution<float> unit(0.0f, 1.0f);
    const int shape = (round / 6) % 4;
    float total = 0.0f;
    for (size_t i = 0; i < n; ++i) {
      ids[i] = static_cast<int32_t>(3 * i + 1);
      z[i] = std::round(unit(rng) * 40.0f) / 4.0f;  // many equal z
      switch (shape) {
        case 0:
          score[i] = unit(rng) * 12.0f;
          break;  // spread out
        case 1:
          score[i] = std::round(unit(rng) * 30.0f) / 8.0f;
          break;  // many ties
        case 2:
          score[i] = 1.0f + unit(rng) * 0.05f;
          break;  // one bucket
        default:
          score[i] = std::fabs(z[i] - 5.0f);
          break;  // mirrored about H
      }
      p[i] = unit(rng) * unit(rng);
      total += p[i];
    }
    for (float& v : p) v /= total;
    const float typical_p = std::vector<float>{0.05f, 0.5f, 0.9f, 0.99f, 1.0f}[round % 5];
    std::vector<uint8_t> want, got;
    const size_t want_count = kept_by_a_whole_sort(score, p, z, ids, typical_p, want);
    ASSERT_EQ(sampler_typical::keep_in_order(score, p, z, ids, typical_p, scratch, got), want_count)
        << "round " << round;
    ASSERT_EQ(got, want) << "round " << round;
    cut_inside += want_count < n;
  }
  EXPECT_GT(cut_inside, 120);

  // Half the mass first; then 200,000 tokens of 1e-9 each, which the float sum cannot add to
  // 0.5 but the double one passes 0.5001 with; then the rest. Everything is kept.
  const size_t tiny = 200000;
  std::vector<float> z(tiny + 2, 0.0f), score(tiny + 2), p(tiny + 2, 1e-9f);
  std::vector<int32_t> ids(tiny + 2);
  std::iota(ids.begin(), ids.end(), 0);
  score[0] = 0.0f;
  p[0] = 0.5f;
  for (size_t i = 1; i <= tiny; ++i) score[i] = 1.0f + float(i) / float(tiny);
  score[tiny + 1] = 3.0f;
  p[tiny + 1] = 0.4998f;
  std::vector<uint8_t> want, got;
  const size_t want_count = kept_by_a_whole_sort(score, p, z, ids, 0.5001f, want);
  EXPECT_EQ(want_count, tiny + 2);
  EXPECT_EQ(sampler_typical::keep_in_order(score, p, z, ids, 0.5001f, scratch, got), want_count);
  EXPECT_EQ(got, want);
}

TEST(SamplerTypical, TokensAreTheReferencesBesideTheOtherFilters) {
  std::mt19937 rng(9);
  for (const char* isa : {static_cast<const char*>(nullptr), "portable"}) {
    auto sampler = testing::sampler_with_isa(isa, {2000, {}});
    for (int r = 0; r < 40; ++r) {
      std::vector<float> logits = testing::normal_logits(2000, 1.0f + float(r % 3), 300 + r);
      for (size_t i = 0; i < logits.size(); i += 13) logits[i] = -INFINITY;
      SamplingParams p =
          testing::sampling_with(std::vector<float>{0.6f, 1.0f, 1.7f}[r % 3], r % 2 == 1 ? 40 : 0,
                                 r % 5 == 2 ? 0.9f : 1.0f, r % 7 == 3 ? 0.01f : 0.0f);
      p.typical_p = std::vector<float>{0.2f, 0.5f, 0.9f, 0.95f}[r % 4];
      if (r % 6 == 5) p.top_n_sigma = 2.0f;
      p.seed = 70 + static_cast<uint64_t>(r);
      for (int64_t position = 0; position < 6; ++position) {
        std::vector<float> row = logits;
        ASSERT_EQ(sampler->sample(row, p, position), testing::reference_token(logits, p, position))
            << "row " << r << " position " << position << " isa " << (isa ? isa : "default");
      }
    }
  }
}

}  // namespace
}  // namespace tandem::TANDEM_UNITY_ID
