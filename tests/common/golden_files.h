// The shared golden files (../shared/models: GGUF files with llama.cpp's greedy tokens), as
// the CPU golden test (tests/runner/model/golden_test.cpp) and the GPU one
// (tests/cuda/golden_cuda_test.cpp) read them.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
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

}  // namespace tandem::testing
