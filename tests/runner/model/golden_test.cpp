// Greedy generation on the GGUF files in ../shared/models, written by an independent
// writer, against the tokens an independent implementation (llama.cpp) produced.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <nlohmann/json.hpp>
#include <numeric>

#include "runner/model/forward.h"
#include "runner/model/model.h"
#include "runner/tokenizer/tokenizer.h"
#include "tests/common/golden_files.h"
#include "tests/common/test_support.h"

namespace tandem::testing::TANDEM_UNITY_ID {
namespace {

// A step where the golden file's top-1 and top-2 logits are closer than this is one
// where float rounding (llama.cpp keeps K and V in F16, we keep F32) may pick the other
// token; the golden tokens are only compared up to such a step.
constexpr double kRoundingMargin = 2e-3;
// Bound on how far our logit differences between the golden top-5 tokens may be from
// llama.cpp's (logprob differences are logit differences).
constexpr double kLogitDifferenceTolerance = 2e-2;

class GoldenModels : public GoldenFileTest {};

// Greedy over the logits with the end-of-generation ids excluded (llama.cpp's ignore_eos).
int32_t greedy(std::span<const float> logits, const std::vector<int32_t>& eog) {
  int32_t best = -1;
  for (int32_t i = 0; i < static_cast<int32_t>(logits.size()); ++i)
    if (std::find(eog.begin(), eog.end(), i) == eog.end() && (best < 0 || logits[i] > logits[best]))
      best = i;
  return best;
}

// Largest gap between our and llama.cpp's logit(top1) - logit(k) over the golden top 5.
double top5_deviation(std::span<const float> logits, const nlohmann::json& top5) {
  const auto first = top5[0].get<std::pair<int32_t, double>>();
  double worst = 0;
  for (const auto& entry : top5) {
    const auto [id, logprob] = entry.get<std::pair<int32_t, double>>();
    const double ours = logits[first.first] - logits[id], theirs = first.second - logprob;
    worst = std::max(worst, std::abs(ours - theirs));
  }
  return worst;
}

// The forward pass alone: the golden file's prompt tokens in, greedy tokens out. Where
// the file has per-step margins, a first difference is accepted only at a step whose
// margin is below kRoundingMargin, and our logits must agree with llama.cpp's top 5.
TEST_P(GoldenModels, GreedyTokensEqualTheGoldenFile) {
  TANDEM_REQUIRE_SHARED();
  const nlohmann::json g = golden();
  ASSERT_FALSE(g["cases"].empty());
  std::unique_ptr<Model> model = Model::load(model_path());
  const std::vector<int32_t> eog = golden_eog_ids(*model, g);
  ThreadPool pool(2);
  KvCache kv(model->config().n_layer, model->config().kv_dim(), 64, KvType::kF16,
             model->config().head_dim);
  ForwardPass forward(*model, kv, pool);
  std::vector<int32_t> blocks(64);
  std::iota(blocks.begin(), blocks.end(), 0);

  int exact = 0;
  double worst = 0;
  for (size_t ci = 0; ci < g["cases"].size(); ++ci) {
    const auto& c = g["cases"][ci];
    const nlohmann::json* check = g.contains("notes") ? &g["notes"]["checks"][ci] : nullptr;
    std::vector<int32_t> seq = c["prompt_tokens"].get<std::vector<int32_t>>();
    const auto expected = c["greedy_tokens"].get<std::vector<int32_t>>();
    ForwardRow row{seq, 0, blocks, true};
    for (size_t step = 0; step < expected.size(); ++step) {
      std::span<float> logits = forward.run({&row, 1});
      const int32_t token = greedy(logits, eog);
      // The server merges a partial UTF-8 byte token's top 5 into the next; compare only
      // while its list lines up with the tokens.
      const nlohmann::json* top5 = check ? &(*check)["top5_non_eog"] : nullptr;
      if (top5 && top5->size() == expected.size() && (*top5)[step][0][0] == expected[step]) {
        const double deviation = top5_deviation(logits, (*top5)[step]);
        worst = std::max(worst, deviation);
        EXPECT_LE(deviation, kLogitDifferenceTolerance) << c["prompt"] << " step " << step;
      }
      if (token != expected[step]) {
        const double margin = check ? (*check)["top1_top2_logit_margins"][step].get<double>() : 1;
        EXPECT_LT(margin, kRoundingMargin) << c["prompt"] << ": token " << token << " at step "
                                           << step << ", expected " << expected[step];
        std::cout << "  [rounding] " << GetParam() << " case " << ci << ": differs at step " << step
                  << " of " << expected.size() << " (golden margin " << margin << ")\n";
        break;
      }
      exact += step + 1 == expected.size();
      seq.push_back(token);
      row = {{&seq.back(), 1}, static_cast<int32_t>(seq.size() - 1), blocks, true};
    }
  }
  std::cout << "  " << GetParam() << ": " << exact << "/" << g["cases"].size()
            << " prompts match exactly; top-5 logit differences within " << worst
            << " of llama.cpp's\n";
}

// The tokenizer from the same file: prompt text to the golden file's prompt tokens.
TEST_P(GoldenModels, TokenizerEncodesThePromptsAsTheGoldenFile) {
  TANDEM_REQUIRE_SHARED();
  const nlohmann::json g = golden();
  const gguf::File file = gguf::File::open(model_path());
  std::unique_ptr<Tokenizer> tokenizer;
  try {
    tokenizer = Tokenizer::from_gguf(file);
  } catch (const std::exception& e) {
    GTEST_SKIP() << "tokenizer not supported: " << e.what();
  }
  for (const auto& c : g["cases"])
    EXPECT_EQ(tokenizer->encode(c["prompt"].get<std::string>(), true, false),
              c["prompt_tokens"].get<std::vector<int32_t>>())
        << "tokenizer disagrees on: " << c["prompt"];
}

INSTANTIATE_TEST_SUITE_P(SharedModels, GoldenModels, ::testing::ValuesIn(golden_model_names()),
                         golden_test_name);

// The quantized files (Q4_0, Q3_K_M, Q4_K_M, IQ4_XS, made by llama.cpp). tandem multiplies
// them as llama.cpp does (activations quantized per row to Q8_0/Q8_K, integer dots), but the
// rest of the pass is not llama.cpp's bit for bit (its attention runs in F16), and on these
// random models Q8 activations make the logits chaotic: measured, rounding our own K and V
// to F16 moves our top-5 logit differences by 0.03-0.17 (by 0.001-0.004 with F32
// activations), as much as we differ from llama.cpp. So the 2e-2 bounds above cannot hold
// here without reproducing llama.cpp's attention; this checks against that noise floor
// instead. Every step is fed llama.cpp's token (teacher forcing); where llama.cpp's top two
// are at least kQuantMargin apart our greedy token must be its token, and at every step the
// top-5 logit differences must be within kQuantTolerance of llama.cpp's. Measured over all
// 192 steps of each file: 0.22 (Q4_0), 0.40 (Q3_K_M), 0.34 (Q4_K_M), 0.27 (IQ4_XS); 68-75
// steps per file are compared token for token. A wrong block scale moves them by whole
// units (masking the Q4_K scales' sixth bit gave 7.6 and 8.4).
constexpr double kQuantMargin = 0.4;
constexpr double kQuantTolerance = 0.5;

class QuantizedGoldenModels : public GoldenModels {};

TEST_P(QuantizedGoldenModels, GreedyTokensEqualTheGoldenFileAwayFromNearTies) {
  TANDEM_REQUIRE_SHARED();
  const nlohmann::json g = golden();
  ASSERT_FALSE(g["cases"].empty());
  std::unique_ptr<Model> model = Model::load(model_path());
  const std::vector<int32_t> eog = {
      static_cast<int32_t>(model->file().get_int_or("tokenizer.ggml.eos_token_id", 2))};
  ThreadPool pool(2);
  KvCache kv(model->config().n_layer, model->config().kv_dim(), 64, KvType::kF16,
             model->config().head_dim);
  ForwardPass forward(*model, kv, pool);
  std::vector<int32_t> blocks(64);
  std::iota(blocks.begin(), blocks.end(), 0);
  QuantizedGoldenCheck tally{kQuantMargin, kQuantTolerance};
  for (size_t ci = 0; ci < g["cases"].size(); ++ci) {
    const auto& c = g["cases"][ci];
    std::vector<int32_t> seq = c["prompt_tokens"].get<std::vector<int32_t>>();
    const auto expected = c["greedy_tokens"].get<std::vector<int32_t>>();
    ForwardRow row{seq, 0, blocks, true};
    for (size_t step = 0; step < expected.size(); ++step) {
      std::span<float> logits = forward.run({&row, 1});
      // Where llama.cpp's top two are closer than these files' noise either token is its
      // answer; elsewhere ours must be the same. The golden token is fed next either way
      // (teacher forcing), so every later step still sees llama.cpp's sequence.
      tally.step(c, g["notes"]["checks"][ci], step, greedy(logits, eog),
                 [&](const nlohmann::json& top5) { return top5_deviation(logits, top5); });
      seq.push_back(expected[step]);
      row = {{&seq.back(), 1}, static_cast<int32_t>(seq.size() - 1), blocks, true};
    }
  }
  tally.finish(GetParam());
}

INSTANTIATE_TEST_SUITE_P(SharedModels, QuantizedGoldenModels,
                         ::testing::Values("kquants/rand-kq-llama-q4_0",
                                           "kquants/rand-kq-llama-q3_k_m",
                                           "kquants/rand-kq-llama-q4_k_m",
                                           "kquants/rand-kq-llama-iq4_xs"),
                         golden_test_name);

}  // namespace
}  // namespace tandem::testing::TANDEM_UNITY_ID
