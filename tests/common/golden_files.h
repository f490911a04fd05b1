// The shared golden files (../shared/models: GGUF files with llama.cpp's greedy tokens), as
// the CPU golden test (tests/runner/model/golden_test.cpp) and the GPU one
// (tests/cuda/golden_cuda_test.cpp) read them.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "runner/model/model.h"

namespace tandem::testing {

// The full-precision golden models, by path under models/ without ".gguf".
inline const std::vector<std::string>& golden_model_names() {
  static const std::vector<std::string> names = {
      "rand-tiny-llama-spm-f32",       "rand-tiny-llama-spm-f16",
      "families/llama3-tiny-s777-f16", "families/mistral-nemo-tiny-s777-f16",
      "families/qwen3-tiny-s777-f16",  "families/phi3-tiny-s777-f16",
      "families/gemma2-tiny-s777-f16", "families/gemma3-tiny-s777-f16"};
  return names;
}

// A test over golden models, one per parameter (a name as above).
class GoldenFileTest : public ::testing::TestWithParam<std::string> {
 protected:
  std::filesystem::path model_path() const;
  // NAME.gguf.golden.json or NAME.golden.json; a missing file is a failure, and gives no
  // cases.
  nlohmann::json golden() const;
};

// The ids llama.cpp's run excluded from greedy (ignore_eos): the golden file's own list
// when it has one, else the model's EOS id.
std::vector<int32_t> golden_eog_ids(const Model& model, const nlohmann::json& golden);

// gtest's name for a parameter: the path with every non-alphanumeric character as '_'.
std::string golden_test_name(const ::testing::TestParamInfo<std::string>& info);

// A quantized golden file checked step by step with teacher forcing (golden_test.cpp on
// the CPU, golden_cuda_test.cpp on the GPU): where llama.cpp's top two logits are at least
// `margin` apart our greedy token must be its token, and where its top-5 list starts with
// its token our top-5 logit differences stay within `tolerance` of its.
struct QuantizedGoldenCheck {
  double margin;
  double tolerance;
  size_t compared = 0;  // steps whose greedy token was compared (the rest are near-ties)
  size_t total = 0;     // steps checked
  double worst = 0;     // the largest top-5 difference seen

  // Step `step` of case `c` (its notes `check`): our greedy token `ours`, and
  // deviation(top5 row) our top-5 logit differences from llama.cpp's.
  template <typename Deviation>
  void step(const nlohmann::json& c, const nlohmann::json& check, size_t step, int32_t ours,
            Deviation deviation) {
    ++total;
    const auto expected = c["greedy_tokens"][step].get<int32_t>();
    const nlohmann::json& gap = check["top1_top2_logit_margins"][step];
    if (gap.is_number() && gap.get<double>() >= margin) {
      EXPECT_EQ(ours, expected) << c["prompt"] << " step " << step;
      ++compared;
    }
    const nlohmann::json& top5 = check["top5_non_eog"];
    if (top5.size() == c["greedy_tokens"].size() && top5[step][0][0] == expected) {
      const double d = deviation(top5[step]);
      worst = std::max(worst, d);
      EXPECT_LE(d, tolerance) << c["prompt"] << " step " << step;
    }
  }

  // Prints the tally after `label` and requires that some token was compared.
  void finish(const std::string& label) const {
    std::cout << "  " << label << ": " << compared << " of " << total
              << " greedy tokens compared (the rest are near-ties), top-5 logit differences "
                 "within "
              << worst << " of llama.cpp's\n";
    EXPECT_GT(compared, 0u);
  }
};

}  // namespace tandem::testing
