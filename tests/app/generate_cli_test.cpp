// `tandem generate` as a user runs it: on a make-model file, and with bad input.
#include <gtest/gtest.h>

#include <fstream>

#include "runner/cuda/cuda_executor.h"
#include "tests/common/test_support.h"

namespace tandem::testing::TANDEM_UNITY_ID {
namespace {

std::string make_tiny(const ScratchDir& dir) {
  auto path = dir.file("tiny.gguf").string();
  auto r = run_tandem({"make-model", "--shape", "tiny", "--dtype", "f32", "--out", path});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return path;
}

TEST(GenerateCli, GreedyRunsAreRepeatableAndReportSpeed) {
  ScratchDir dir;
  auto model = make_tiny(dir);
  std::vector<std::string> args = {"generate", "--model",      model,       "--prompt",
                                   "Hello",    "--max-tokens", "12",        "--temperature",
                                   "0",        "--ignore-eos", "--threads", "2"};
  auto a = run_tandem(args);
  auto b = run_tandem(args);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
  EXPECT_GT(a.out.size(), 1u);
  EXPECT_NE(a.err.find("tok/s"), std::string::npos) << a.err;
  EXPECT_NE(a.err.find("generated 12 tokens"), std::string::npos) << a.err;
  // The KV pages the request can write were written before it ran (engine.h): 5 prompt
  // bytes + 8 + 12 tokens, in whole blocks of 16.
  EXPECT_NE(a.err.find("the first 32 positions' pages written at load"), std::string::npos)
      << a.err;
}

// --ceilings measures the CPU after the run and prints the speeds against it; it measures
// the CPU, so it refuses another device before loading anything.
TEST(GenerateCli, CeilingsPrintTheSpeedsAsFractionsOfTheMachine) {
  ScratchDir dir;
  auto model = make_tiny(dir);
  auto r = run_tandem({"generate", "--model", model, "--prompt", "Hello", "--max-tokens", "8",
                       "--ignore-eos", "--threads", "1", "--ceilings"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("ceilings (1 thread): F32 FMA "), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("GB/s (1 thread)"), std::string::npos) << "one read figure: " << r.err;
  EXPECT_NE(r.err.find("decode: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(" of the memory floor ("), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(" of the F32 FMA peak"), std::string::npos) << r.err;  // F32 weights
  auto cuda =
      run_tandem({"generate", "--model", model, "--prompt", "x", "--device", "cuda", "--ceilings"});
  EXPECT_EQ(cuda.exit_code, 2);
  EXPECT_NE(cuda.err.find("--ceilings: "), std::string::npos) << cuda.err;
  EXPECT_EQ(cuda.err.find('\n'), cuda.err.size() - 1) << cuda.err;
}

// --profile prints each phase of the steps, the largest first, and their total; it times
// the CPU forward pass, so it refuses another device with exit 2 and one line.
TEST(GenerateCli, ProfilePrintsWhereTheStepsTimeWent) {
  ScratchDir dir;
  auto model = make_tiny(dir);
  auto r = run_tandem({"generate", "--model", model, "--prompt", "Hello", "--max-tokens", "6",
                       "--temperature", "0", "--ignore-eos", "--threads", "2", "--profile"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const size_t head = r.err.find("where the steps' time went (");
  ASSERT_NE(head, std::string::npos) << r.err;
  for (const char* phase : {"embed", "qkv", "rope_store", "attention", "attn_out", "attn_residual",
                            "gate_up", "activation", "down", "ffn_residual", "output", "sample"}) {
    EXPECT_NE(r.err.find(std::string("\n  ") + phase + " ", head), std::string::npos)
        << phase << "\n"
        << r.err;
  }
  // The same tokens as a run without it.
  auto plain = run_tandem({"generate", "--model", model, "--prompt", "Hello", "--max-tokens", "6",
                           "--temperature", "0", "--ignore-eos", "--threads", "2"});
  EXPECT_EQ(r.out, plain.out);
  EXPECT_EQ(plain.err.find("where the steps' time went"), std::string::npos);
  auto cuda =
      run_tandem({"generate", "--model", model, "--prompt", "x", "--device", "cuda", "--profile"});
  EXPECT_EQ(cuda.exit_code, 2);
  EXPECT_NE(cuda.err.find("--profile: "), std::string::npos) << cuda.err;
  EXPECT_EQ(cuda.err.find('\n'), cuda.err.size() - 1) << cuda.err;
}

// Quantized weights run on the int8 dot step on every CPU tandem supports (AVX512-VNNI's, or
// AVX2's vpmaddubsw sequence), so their prompt is measured against that peak, not F32 FMA's.
TEST(GenerateCli, QuantizedWeightsAreMeasuredAgainstTheInt8Peak) {
  ScratchDir dir;
  auto model = dir.file("tiny-q4_0.gguf").string();
  auto made = run_tandem({"make-model", "--shape", "tiny", "--dtype", "q4_0", "--out", model});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  auto r = run_tandem({"generate", "--model", model, "--prompt", "Hello", "--max-tokens", "4",
                       "--ignore-eos", "--threads", "1", "--ceilings"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("int8 dot 0 GOP/s"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(" of the int8 dot peak"), std::string::npos) << r.err;
}

// --spec-tokens: the same text as without, the drafts counted on stderr; the GPU executor
// verifies no drafts, so it is refused there by name; bad values exit 2.
TEST(GenerateCli, SpeculativeDecodingGivesTheSameTextAndCountsItsDrafts) {
  ScratchDir dir;
  auto model = dir.file("tiny.gguf").string();
  ASSERT_EQ(run_tandem({"make-model", "--shape", "tiny", "--out", model}).exit_code, 0);
  const std::vector<std::string> base = {"generate", "--model",      model,       "--prompt",
                                         "Hello",    "--max-tokens", "40",        "--temperature",
                                         "0",        "--ignore-eos", "--threads", "1"};
  auto plain = run_tandem(base);
  std::vector<std::string> args = base;
  args.insert(args.end(), {"--spec-tokens", "4", "--spec-ngram", "1:3"});
  auto spec = run_tandem(args);
  ASSERT_EQ(spec.exit_code, 0) << spec.err;
  EXPECT_EQ(spec.out, plain.out);
  EXPECT_NE(spec.err.find("speculative decoding: "), std::string::npos) << spec.err;
  EXPECT_NE(spec.err.find(" draft tokens accepted"), std::string::npos) << spec.err;
  EXPECT_EQ(spec.err.find(" 0 of "), std::string::npos) << spec.err;  // drafts were accepted
  EXPECT_EQ(plain.err.find("speculative decoding"), std::string::npos) << plain.err;
  auto cuda = run_tandem(
      {"generate", "--model", model, "--prompt", "x", "--device", "cuda", "--spec-tokens", "2"});
  EXPECT_EQ(cuda.exit_code, 2);
  EXPECT_NE(cuda.err.find("--spec-tokens: "), std::string::npos) << cuda.err;
  EXPECT_EQ(cuda.err.find('\n'), cuda.err.size() - 1) << cuda.err;
  for (const std::vector<std::string>& bad : {std::vector<std::string>{"--spec-ngram", "0:2"},
                                              {"--spec-ngram", "4"},
                                              {"--spec-ngram", "2:x"},
                                              {"--spec-tokens", "-1"},
                                              {"--spec-max-batch", "-3"}}) {
    std::vector<std::string> a = {"generate", "--model", model, "--prompt", "x"};
    a.insert(a.end(), bad.begin(), bad.end());
    auto r = run_tandem(a);
    EXPECT_EQ(r.exit_code, 2) << bad[0] << " " << bad[1];
    EXPECT_NE(r.err.find(bad[0]), std::string::npos) << r.err;
  }
}

TEST(GenerateCli, SeededSamplingIsRepeatable) {
  ScratchDir dir;
  auto model = make_tiny(dir);
  std::vector<std::string> args = {
      "generate",      "--model", model,     "--prompt", "abc",    "--max-tokens", "16",
      "--temperature", "1.0",     "--top-p", "0.9",      "--seed", "1234",         "--ignore-eos"};
  auto a = run_tandem(args);
  auto b = run_tandem(args);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
  EXPECT_NE(a.err.find("seed 1234"), std::string::npos) << a.err;
}

TEST(GenerateCli, AFileThatIsNotAModelExitsTwoWithOneLine) {
  ScratchDir dir;
  auto path = dir.file("junk.gguf");
  std::ofstream(path) << "this is not a gguf file at all";
  auto r = run_tandem({"generate", "--model", path.string(), "--prompt", "x"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("magic"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
}

TEST(GenerateCli, BadFlagValuesExitTwoNamingTheFlag) {
  ScratchDir dir;
  auto model = make_tiny(dir);
  for (auto [flag, value] :
       std::vector<std::pair<std::string, std::string>>{{"--max-tokens", "0"},
                                                        {"--temperature", "-1"},
                                                        {"--top-p", "0"},
                                                        {"--threads", "abc"},
                                                        {"--max-tokens", "100000"}}) {
    auto r = run_tandem({"generate", "--model", model, "--prompt", "x", flag, value});
    EXPECT_EQ(r.exit_code, 2) << flag << " " << value;
    EXPECT_NE(r.err.find(flag), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
  }
}

// --device cuda where no GPU can be used (no device, no driver, or a build without CUDA):
// exit 2 and one line saying why, as for any option that cannot be honoured.
TEST(GenerateCli, DeviceCudaWithoutAGpuExitsTwoWithOneLine) {
  if (cuda_unavailable_reason().empty()) GTEST_SKIP() << "a GPU is present";
  ScratchDir dir;
  auto model = make_tiny(dir);
  auto r = run_tandem({"generate", "--model", model, "--prompt", "x", "--device", "cuda"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--device cuda: "), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
  auto bad = run_tandem({"generate", "--model", model, "--prompt", "x", "--device", "tpu"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--device"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace tandem::testing::TANDEM_UNITY_ID
