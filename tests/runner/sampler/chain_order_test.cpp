// llama.cpp's chain orders in the fused sampler (SamplingParams::temperature_last and
// min_p_last): the kept set and the token against the contract's reference composed as the
// chain reads (the filters on the raw logits, then the tempered draw; min_p cutting what top_p
// kept), on every instruction set; and, on rows built so that the orders disagree, the
// frequencies of llama.cpp's chain rather than vLLM's.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "runner/sampler/sampler.h"
#include "tests/runner/sampler/reference.h"

namespace tandem::TANDEM_UNITY_ID {
namespace {

// The kept ids of the chain `params` asks for, in any order, from the vLLM-order reference:
// at temperature 1 where the filters read the raw logits; without min_p where it comes
// after top_p, which then keeps the ids within its cut of the top one.
std::vector<int32_t> chain_kept(const std::vector<float>& logits, const SamplingParams& params) {
  SamplingParams filters = params;
  if (params.temperature_last) filters.temperature = 1.0f;
  const bool cut_last =
      params.min_p_last && params.min_p > 0.0f && (params.top_p < 1.0f || params.typical_p < 1.0f);
  if (cut_last) filters.min_p = 0.0f;
  std::vector<int32_t> kept = testing::reference_kept(logits, filters);
  if (!cut_last) return kept;
  const std::vector<float> z = testing::tempered(logits, filters.temperature);
  const float z_max = z[kept.front()];
  const float cut = std::min(std::log(params.min_p), 0.0f);
  std::erase_if(kept, [&](int32_t id) { return !(z[id] - z_max >= cut); });
  return kept;
}

int32_t chain_token(const std::vector<float>& logits, const SamplingParams& params,
                    int64_t position) {
  const std::vector<int32_t> kept = chain_kept(logits, params);
  return testing::gumbel_token(testing::tempered(logits, params.temperature), kept, params.seed,
                               position);
}

std::vector<float> random_row(std::mt19937& rng, int32_t n) {
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> row(static_cast<size_t>(n));
  for (float& v : row) v = normal(rng);
  return row;
}

SamplingParams chain(float t, int32_t k, float p, float m, bool late, bool m_last) {
  SamplingParams s;
  s.temperature = t;
  s.top_k = k;
  s.top_p = p;
  s.min_p = m;
  s.temperature_last = late;
  s.min_p_last = m_last;
  s.seed = 77;
  return s;
}

SamplingParams sigma(SamplingParams s, float n) {
  s.top_n_sigma = n;
  return s;
}

SamplingParams typical(SamplingParams s, float p) {
  s.typical_p = p;
  return s;
}

void expect_reference_tokens(const char* isa) {
  if (isa != nullptr) setenv("TANDEM_ISA", isa, 1);
  Sampler sampler({4096, {}});
  if (isa != nullptr) unsetenv("TANDEM_ISA");
  std::mt19937 rng(5);
  const std::vector<SamplingParams> chains = {
      chain(0.7f, 40, 0.95f, 0.05f, true, true),  // llama-server's default chain
      chain(0.7f, 0, 0.9f, 0.0f, true, false),    // top_p alone, on the raw logits
      chain(1.6f, 0, 0.9f, 0.02f, true, true),    // top_p then min_p, no top_k
      chain(1.6f, 0, 0.8f, 0.1f, false, true),    // min_p after top_p, tempered
      chain(0.5f, 40, 1.0f, 0.0f, true, false),   // top_k alone: the order changes nothing
      chain(2.0f, 100, 0.7f, 0.0f, true, false),  // top_k then top_p on the raw logits
      sigma(chain(0.7f, 40, 0.95f, 0.05f, true, true), 1.0f),    // with top_n_sigma first
      sigma(chain(1.6f, 0, 0.9f, 0.02f, true, true), 1.5f),      // top_p over sigma's, min_p
      sigma(chain(0.8f, 0, 1.0f, 0.0f, false, false), 0.5f),     // top_n_sigma alone
      typical(chain(0.7f, 40, 0.95f, 0.05f, true, true), 0.9f),  // typ_p in the default chain
      typical(chain(1.3f, 0, 0.9f, 0.02f, true, true), 0.5f),    // typ_p on the whole row
      typical(chain(0.9f, 40, 1.0f, 0.05f, true, true), 0.6f),   // min_p after typ_p, no top_p
  };
  for (size_t c = 0; c < chains.size(); ++c) {
    for (int r = 0; r < 12; ++r) {
      const std::vector<float> logits = random_row(rng, 4096);
      for (int64_t position = 0; position < 8; ++position) {
        std::vector<float> row = logits;
        ASSERT_EQ(sampler.sample(row, chains[c], position),
                  chain_token(logits, chains[c], position))
            << "chain " << c << " row " << r << " position " << position << " isa "
            << (isa ? isa : "default");
      }
    }
  }
}

TEST(SamplerChainOrder, TokensAreTheComposedReferencesOnEveryInstructionSet) {
  expect_reference_tokens(nullptr);
  expect_reference_tokens("portable");
}

// A late temperature over top_k alone draws what an early one does: the same product.
TEST(SamplerChainOrder, ALateTemperatureWithTopKAloneChangesNothing) {
  Sampler sampler({512, {}});
  std::mt19937 rng(9);
  for (int r = 0; r < 20; ++r) {
    const std::vector<float> logits = random_row(rng, 512);
    for (int64_t position = 0; position < 4; ++position) {
      std::vector<float> a = logits, b = logits;
      EXPECT_EQ(sampler.sample(a, chain(0.6f, 20, 1.0f, 0.0f, false, false), position),
                sampler.sample(b, chain(0.6f, 20, 1.0f, 0.0f, true, false), position));
    }
  }
}

// Logits whose softmax is `probs`.
std::vector<float> from_probs(const std::vector<double>& probs) {
  std::vector<float> out;
  for (double p : probs) out.push_back(static_cast<float>(std::log(p)));
  return out;
}

std::vector<int> histogram(const std::vector<float>& logits, const SamplingParams& params,
                           int draws) {
  Sampler sampler({static_cast<int32_t>(logits.size()), {}});
  std::vector<int> hits(logits.size(), 0);
  for (int d = 0; d < draws; ++d) {
    std::vector<float> row = logits;
    hits[static_cast<size_t>(sampler.sample(row, params, d))] += 1;
  }
  return hits;
}

TEST(SamplerChainOrder, TopPBeforeTheTemperatureWeighsTheRawProbabilities) {
  // p = 0.5, 0.3, 0.15, 0.05 and top_p 0.75 at T = 2. The raw masses keep {0, 1}, drawn as
  // sqrt(0.5) : sqrt(0.3) (0.563 : 0.437). Tempered first (vLLM), the masses are 0.379,
  // 0.293, 0.208, 0.120, and top_p keeps three.
  const std::vector<float> logits = from_probs({0.5, 0.3, 0.15, 0.05});
  constexpr int kDraws = 20000;
  const std::vector<int> late = histogram(logits, chain(2.0f, 0, 0.75f, 0.0f, true, false), kDraws);
  EXPECT_EQ(late[2] + late[3], 0);
  EXPECT_NEAR(double(late[0]) / kDraws, 0.563, 0.015);
  const std::vector<int> early =
      histogram(logits, chain(2.0f, 0, 0.75f, 0.0f, false, false), kDraws);
  EXPECT_NEAR(double(early[2]) / kDraws, 0.208 / 0.880, 0.015);
}

TEST(SamplerChainOrder, MinPAfterTopPCutsOnlyWhatTopPKept) {
  // p = 0.4, 0.3, 0.2, 0.1, top_p 0.75, min_p 0.3 (keeps p >= 0.12). top_p first keeps
  // {0, 1, 2}, all above min_p's cut; min_p first keeps {0, 1, 2}, and top_p over their
  // renormalized masses (0.444, 0.333, 0.222) then keeps {0, 1}.
  const std::vector<float> logits = from_probs({0.4, 0.3, 0.2, 0.1});
  constexpr int kDraws = 20000;
  const std::vector<int> last = histogram(logits, chain(1.0f, 0, 0.75f, 0.3f, false, true), kDraws);
  EXPECT_NEAR(double(last[2]) / kDraws, 0.2 / 0.9, 0.015);
  EXPECT_EQ(last[3], 0);
  const std::vector<int> first =
      histogram(logits, chain(1.0f, 0, 0.75f, 0.3f, false, false), kDraws);
  EXPECT_EQ(first[2] + first[3], 0);
}

}  // namespace
}  // namespace tandem::TANDEM_UNITY_ID
