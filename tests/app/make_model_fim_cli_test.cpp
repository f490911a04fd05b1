// `tandem make-model --fim`: the built-in vocabulary with Qwen2.5-Coder's FIM tokens; it
// does not combine with --vocab (exit 2, one line naming both flags).
#include <gtest/gtest.h>

#include "runner/gguf/gguf.h"
#include "tests/common/test_support.h"

namespace tandem::testing::TANDEM_UNITY_ID {
namespace {

TEST(MakeModelFimCli, FimAddsTheTokensAndTheirKeys) {
  ScratchDir dir;
  const auto out = dir.file("fim.gguf").string();
  const auto r = run_tandem({"make-model", "--shape", "tiny", "--fim", "--out", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto file = gguf::File::open(out);
  EXPECT_EQ(file.get_string_array("tokenizer.ggml.tokens")[258], "<|fim_prefix|>");
  EXPECT_EQ(file.get_int("tokenizer.ggml.fim_sep_token_id"), 263);
}

TEST(MakeModelFimCli, FimWithVocabExitsTwoNamingBoth) {
  ScratchDir dir;
  const auto vocab = dir.file("vocab.gguf").string();
  ASSERT_EQ(run_tandem({"make-model", "--shape", "tiny", "--out", vocab}).exit_code, 0);
  const auto out = dir.file("x.gguf");
  const auto r = run_tandem(
      {"make-model", "--shape", "tiny", "--fim", "--vocab", vocab, "--out", out.string()});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--fim"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--vocab"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "expected exactly one line: " << r.err;
  EXPECT_FALSE(std::filesystem::exists(out));
}

}  // namespace
}  // namespace tandem::testing::TANDEM_UNITY_ID
