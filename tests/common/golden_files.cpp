#include "tests/common/golden_files.h"

#include <cctype>
#include <fstream>

#include "tests/common/test_support.h"

namespace tandem::testing {

std::filesystem::path GoldenFileTest::model_path() const {
  return *shared_dir() / "models" / (GetParam() + ".gguf");
}

nlohmann::json GoldenFileTest::golden() const {
  const auto dir = *shared_dir() / "models";
  std::ifstream in(dir / (GetParam() + ".gguf.golden.json"));
  if (!in) in.open(dir / (GetParam() + ".golden.json"));
  if (!in) ADD_FAILURE() << "missing golden file for " << GetParam();
  return in ? nlohmann::json::parse(in) : nlohmann::json{{"cases", nlohmann::json::array()}};
}

std::vector<int32_t> golden_eog_ids(const Model& model, const nlohmann::json& golden) {
  if (golden.contains("notes") && golden["notes"].contains("eog_token_ids"))
    return golden["notes"]["eog_token_ids"].get<std::vector<int32_t>>();
  return {static_cast<int32_t>(model.file().get_int_or("tokenizer.ggml.eos_token_id", 2))};
}

std::string golden_test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string n = info.param;
  for (char& ch : n)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return n;
}

}  // namespace tandem::testing
