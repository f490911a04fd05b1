// `tandem quantize` and `make-model --dtype` as a user runs them: every type writes a
// model that loads and generates the same greedy tokens every time; bad input exits 2
// with one line.
#include <filesystem>
#include <fstream>
#include <iterator>

#include <gtest/gtest.h>

#include "runner/gguf/gguf.h"
#include "tests/common/test_support.h"

namespace tandem::testing::TANDEM_UNITY_ID {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void expect_one_line_exit_two(const CommandResult& r, const std::string& needle) {
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "expected exactly one line: " << r.err;
}

std::vector<std::string> greedy(const std::string& model) {
  return {"generate", "--model",       model, "--prompt",     "Hello",     "--max-tokens",
          "8",        "--temperature", "0",   "--ignore-eos", "--threads", "2"};
}

// Each --dtype on the demo shape (256-wide rows, so the K types are kept): the same seed
// gives a byte-identical file, which loads and whose greedy tokens repeat. One test per
// type, so that ctest can run them side by side (all of them in one took 94 s under ASan,
// the sanitizer stage's longest test).
class MakeModelDtype : public ::testing::TestWithParam<const char*> {};

TEST_P(MakeModelDtype, GivesALoadableDeterministicModel) {
  const char* dtype = GetParam();
  ScratchDir dir;
  const std::string a = dir.file(std::string(dtype) + "-a.gguf").string();
  const std::string b = dir.file(std::string(dtype) + "-b.gguf").string();
  for (const auto& out : {a, b}) {
    const auto r = run_tandem(
        {"make-model", "--shape", "demo", "--dtype", dtype, "--seed", "9", "--out", out});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  EXPECT_EQ(slurp(a), slurp(b));
  const auto file = gguf::File::open(a);
  EXPECT_STRCASEEQ(gguf::type_name(file.find_tensor("blk.0.attn_q.weight")->type), dtype);
  const auto first = run_tandem(greedy(a));
  const auto second = run_tandem(greedy(b));
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_EQ(first.out, second.out);
  EXPECT_NE(first.err.find("generated 8 tokens"), std::string::npos) << first.err;
}

INSTANTIATE_TEST_SUITE_P(MakeModelCli, MakeModelDtype,
                         ::testing::Values("f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0",
                                           "q5_1", "q2_k", "q3_k", "q4_k", "q5_k", "q6_k", "iq4_nl",
                                           "iq4_xs"),
                         [](const auto& info) { return std::string(info.param); });

TEST(QuantizeCli, WritesTheMixAndReportsTypesAndSizes) {
  ScratchDir dir;
  const std::string in = dir.file("demo.gguf").string();
  const std::string out = dir.file("q.gguf").string();
  ASSERT_EQ(run_tandem({"make-model", "--shape", "demo", "--dtype", "f16", "--out", in}).exit_code,
            0);
  const auto r = run_tandem({"quantize", in, out, "q4_k_m"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("as Q4_K_M (general.file_type 15)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  Q4_K: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  Q6_K: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  F32: 9 tensors"), std::string::npos) << r.out;  // the norms
  EXPECT_NE(r.out.find("file "), std::string::npos) << r.out;
  const auto file = gguf::File::open(out);
  EXPECT_EQ(file.get_int("general.file_type"), 15);
  const auto gen = run_tandem(greedy(out));
  EXPECT_EQ(gen.exit_code, 0) << gen.err;
}

TEST(QuantizeCli, BadInputExitsTwoWithOneLine) {
  ScratchDir dir;
  const std::string in = dir.file("demo.gguf").string();
  ASSERT_EQ(run_tandem({"make-model", "--shape", "tiny", "--out", in}).exit_code, 0);
  const std::string out = dir.file("q.gguf").string();
  expect_one_line_exit_two(run_tandem({"quantize", dir.file("missing.gguf").string(), out, "q8_0"}),
                           "no such file");
  expect_one_line_exit_two(run_tandem({"quantize", in, out, "q4_k_l"}), "unknown type 'q4_k_l'");
  const std::string text = dir.file("text.gguf").string();
  { std::ofstream(text) << "not a model at all"; }
  expect_one_line_exit_two(run_tandem({"quantize", text, out, "q8_0"}), "text.gguf");
  expect_one_line_exit_two(run_tandem({"quantize", in}), "out");
  // The input as the output, by its own path, another spelling or a link (QA Q: the model
  // was replaced by its quantized copy, exit 0); the input is left as it was.
  const auto before = std::filesystem::file_size(in);
  std::filesystem::create_symlink(in, dir.file("link.gguf"));
  for (const std::string& same :
       {in, dir.path().string() + "/./demo.gguf", dir.file("link.gguf").string()})
    expect_one_line_exit_two(run_tandem({"quantize", in, same, "q8_0"}), "is the input file");
  EXPECT_EQ(std::filesystem::file_size(in), before);
}

}  // namespace
}  // namespace tandem::testing::TANDEM_UNITY_ID
