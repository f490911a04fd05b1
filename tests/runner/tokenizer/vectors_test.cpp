// The tokenizer test vectors of ../shared/vocab (llama.cpp's test-tokenizer-0 format):
// every input must encode to exactly the expected ids, without BOS and without parsing
// special tokens, as llama.cpp's test does.

#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "runner/gguf/gguf.h"
#include "runner/tokenizer/tokenizer.h"
#include "tests/common/test_support.h"

namespace tandem::TANDEM_UNITY_ID {
namespace {

std::string read_all(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

struct Vector {
  std::string input;
  std::vector<int32_t> ids;
};

// Inputs are separated by "\n__ggml_vocab_test__\n", which takes the newline that ends
// each input; the .out file has one line of ids per input. Split as test-tokenizer-0 does.
std::vector<Vector> read_vectors(const std::filesystem::path& gguf,
                                 const std::string& suffix = "") {
  const std::string inputs = read_all(gguf.string() + suffix + ".inp");
  const std::string outputs = read_all(gguf.string() + suffix + ".out");
  const std::string separator = "\n__ggml_vocab_test__\n";
  std::vector<Vector> vectors;
  for (size_t pos = 0; pos < inputs.size();) {
    size_t next = inputs.find(separator, pos);
    if (next == std::string::npos) next = inputs.size();
    vectors.push_back({inputs.substr(pos, next - pos), {}});
    pos = next + separator.size();
  }
  size_t line_start = 0;
  for (Vector& vector : vectors) {
    size_t line_end = outputs.find('\n', line_start);
    if (line_end == std::string::npos) line_end = outputs.size();
    std::istringstream line(outputs.substr(line_start, line_end - line_start));
    for (int32_t id; line >> id;) vector.ids.push_back(id);
    line_start = line_end + 1;
  }
  return vectors;
}

std::string escaped(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '\n')
      out += "\\n";
    else if (c == '\t')
      out += "\\t";
    else
      out += c;
  }
  return out;
}

void expect_all_vectors_pass(const std::string& vocab, const std::string& suffix = "",
                             bool parse_special = false) {
  const auto path = *testing::shared_dir() / "vocab" / ("ggml-vocab-" + vocab + ".gguf");
  const auto tokenizer = Tokenizer::from_gguf(gguf::File::open(path));
  const std::vector<Vector> vectors = read_vectors(path, suffix);
  ASSERT_GT(vectors.size(), 40u);
  size_t passed = 0;
  for (const Vector& vector : vectors) {
    const std::vector<int32_t> ids =
        tokenizer->encode(vector.input, /*add_special=*/false, parse_special);
    EXPECT_EQ(ids, vector.ids) << "input: \"" << escaped(vector.input) << "\"";
    if (ids == vector.ids) ++passed;
  }
  std::cout << vocab << ": " << passed << "/" << vectors.size() << " vectors pass\n";
}

TEST(TokenizerVectors, Gpt2EncodesEveryVectorExactly) {
  TANDEM_REQUIRE_SHARED();
  expect_all_vectors_pass("gpt-2");
}

TEST(TokenizerVectors, LlamaSpmEncodesEveryVectorExactly) {
  TANDEM_REQUIRE_SHARED();
  expect_all_vectors_pass("llama-spm");
}

// Llama 3 (pre-tokenizer llama-bpe, ignore_merges): llama.cpp's 46 strings and 30 harder
// ones (README-llama3.md), which llama-tokenize and Hugging Face's tokenizers agree on.
// Special-token text is parsed, as those were made.
TEST(TokenizerVectors, Llama3EncodesEveryExtendedVectorExactly) {
  TANDEM_REQUIRE_SHARED();
  expect_all_vectors_pass("llama3", ".ext", /*parse_special=*/true);
}

// The golden models' prompts, tokenized by llama-server (BOS added, special tokens parsed).
TEST(TokenizerVectors, GoldenModelPromptsTokenizeAsLlamaServerDid) {
  TANDEM_REQUIRE_SHARED();
  const auto models = *testing::shared_dir() / "models";
  const auto tokenizer =
      Tokenizer::from_gguf(gguf::File::open(models / "rand-tiny-llama-spm-f32.gguf"));
  const auto golden =
      nlohmann::json::parse(read_all(models / "rand-tiny-llama-spm-f32.golden.json"));
  ASSERT_FALSE(golden.at("cases").empty());
  for (const auto& golden_case : golden.at("cases")) {
    const std::string prompt = golden_case.at("prompt");
    EXPECT_EQ(tokenizer->encode(prompt, true, true),
              golden_case.at("prompt_tokens").get<std::vector<int32_t>>())
        << "prompt: \"" << escaped(prompt) << "\"";
  }
}

}  // namespace
}  // namespace tandem::TANDEM_UNITY_ID
