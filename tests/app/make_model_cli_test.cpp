// `tandem make-model` as a user runs it: good runs write a model, bad flags exit 2
// with one line naming the flag or the problem.
#include <fstream>

#include <gtest/gtest.h>

#include "runner/gguf/gguf.h"
#include "tests/common/test_support.h"

namespace tandem::testing::TANDEM_UNITY_ID {
namespace {

void expect_one_line_naming(const CommandResult& r, const std::string& needle) {
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "expected exactly one line: " << r.err;
}

TEST(MakeModelCli, WritesARandomModelThatReadsBack) {
  ScratchDir dir;
  const auto out = dir.file("tiny.gguf").string();
  auto r =
      run_tandem({"make-model", "--shape", "tiny", "--dtype", "bf16", "--seed", "5", "--out", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto file = gguf::File::open(out);
  EXPECT_EQ(file.get_int("llama.embedding_length"), 64);
  EXPECT_EQ(file.find_tensor("blk.0.attn_q.weight")->type, gguf::TensorType::kBF16);
}

TEST(MakeModelCli, DtypeDefaultsToF16) {
  ScratchDir dir;
  const auto out = dir.file("tiny.gguf").string();
  ASSERT_EQ(run_tandem({"make-model", "--shape", "tiny", "--out", out}).exit_code, 0);
  EXPECT_EQ(gguf::File::open(out).find_tensor("token_embd.weight")->type, gguf::TensorType::kF16);
}

TEST(MakeModelCli, BadShapeExitsTwoNamingTheFlag) {
  ScratchDir dir;
  expect_one_line_naming(
      run_tandem({"make-model", "--shape", "huge", "--out", dir.file("x.gguf").string()}),
      "--shape");
}

TEST(MakeModelCli, BadDtypeExitsTwoNamingTheFlag) {
  ScratchDir dir;
  expect_one_line_naming(run_tandem({"make-model", "--shape", "tiny", "--dtype", "q1_0", "--out",
                                     dir.file("x.gguf").string()}),
                         "--dtype");
}

TEST(MakeModelCli, MissingOutExitsTwoNamingTheFlag) {
  expect_one_line_naming(run_tandem({"make-model", "--shape", "tiny"}), "--out");
}

TEST(MakeModelCli, NegativeSeedExitsTwoNamingTheFlag) {
  ScratchDir dir;
  expect_one_line_naming(run_tandem({"make-model", "--shape", "tiny", "--seed", "-1", "--out",
                                     dir.file("x.gguf").string()}),
                         "--seed");
}

TEST(MakeModelCli, VocabThatIsNotGgufExitsTwo) {
  ScratchDir dir;
  std::ofstream(dir.file("vocab.txt")) << "hello world\n";
  const auto out = dir.file("x.gguf");
  auto r = run_tandem({"make-model", "--shape", "tiny", "--vocab", dir.file("vocab.txt").string(),
                       "--out", out.string()});
  expect_one_line_naming(r, "--vocab");
  EXPECT_NE(r.err.find("not a GGUF file"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(out));
}

TEST(MakeModelCli, VocabWithoutTokenizerKeysExitsTwo) {
  ScratchDir dir;
  gguf::Writer writer;
  writer.add_string("general.architecture", "llama");
  writer.write(dir.file("model.gguf"));
  auto r = run_tandem({"make-model", "--shape", "tiny", "--vocab", dir.file("model.gguf").string(),
                       "--out", dir.file("x.gguf").string()});
  expect_one_line_naming(r, "tokenizer");
}

TEST(MakeModelCli, MissingVocabFileExitsTwoNamingTheFlag) {
  ScratchDir dir;
  expect_one_line_naming(
      run_tandem({"make-model", "--shape", "tiny", "--vocab", dir.file("nope.gguf").string(),
                  "--out", dir.file("x.gguf").string()}),
      "--vocab");
}

TEST(MakeModelCli, OutInAMissingDirectoryExitsTwo) {
  auto r = run_tandem({"make-model", "--shape", "tiny", "--out", "/nonexistent-dir/x.gguf"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("does not exist"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("/nonexistent-dir/x.gguf"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace tandem::testing::TANDEM_UNITY_ID
