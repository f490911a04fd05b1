// Greedy generation on the GGUF files in ../shared/models, written by an independent
// writer, against the tokens an independent implementation (llama.cpp) produced.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>

#include "runner/device/cpu_executor.h"
#include "runner/model/model.h"
#include "runner/tokenizer/tokenizer.h"
#include "tests/common/test_support.h"

namespace tandem::testing {
namespace {

class GoldenModels : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenModels, GreedyTokensEqualTheGoldenFile) {
  TANDEM_REQUIRE_SHARED();
  const auto dir = *shared_dir() / "models";
  const auto model_path = dir / (GetParam() + ".gguf");
  std::ifstream in(dir / (GetParam() + ".golden.json"));
  ASSERT_TRUE(in) << "missing golden file for " << GetParam();
  const nlohmann::json golden = nlohmann::json::parse(in);

  std::shared_ptr<const Model> model = Model::load(model_path);
  auto tokenizer = Tokenizer::from_gguf(model->file());
  CpuExecutor executor(model, {.threads = 2, .kv_tokens = 1024, .eog_ids = tokenizer->eog_ids()});
  ASSERT_FALSE(golden["cases"].empty());

  for (const auto& c : golden["cases"]) {
    const auto prompt = c["prompt_tokens"].get<std::vector<int32_t>>();
    const auto expected = c["greedy_tokens"].get<std::vector<int32_t>>();
    EXPECT_EQ(tokenizer->encode(c["prompt"].get<std::string>(), true, false), prompt)
        << "tokenizer disagrees on: " << c["prompt"];

    std::vector<int32_t> blocks(64);
    std::iota(blocks.begin(), blocks.end(), 0);
    StepPlan plan;
    StepRow row;
    row.tokens = prompt;
    row.kv_blocks = blocks;
    row.sampling.temperature = 0;
    row.sampling.ignore_eos = true;
    plan.rows.push_back(row);
    std::vector<int32_t> got;
    int32_t token = kNoToken;
    while (got.size() < expected.size()) {
      executor.execute(plan, {&token, 1});
      got.push_back(token);
      plan.rows[0].position += static_cast<int32_t>(plan.rows[0].tokens.size());
      plan.rows[0].tokens = {token};
    }
    EXPECT_EQ(got, expected) << "prompt: " << c["prompt"];
  }
}

INSTANTIATE_TEST_SUITE_P(SharedModels, GoldenModels,
                         ::testing::Values("rand-tiny-llama-spm-f32", "rand-tiny-llama-spm-f16"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& ch : n)
                             if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n;
                         });

}  // namespace
}  // namespace tandem::testing
