// Bad command-line input QA found across the subcommands: each gets exit 2 and one line,
// before any work starts; nothing crashes, hangs or leaves a file behind.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <gtest/gtest.h>

#include "tests/common/test_support.h"

namespace tandem::testing::TANDEM_UNITY_ID {
namespace {

void expect_one_line_exit_two(const CommandResult& r, const std::string& needle) {
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "expected exactly one line: " << r.err;
}

std::string make_tiny(const ScratchDir& dir, const std::string& name = "tiny.gguf") {
  const std::string path = dir.file(name).string();
  const auto r = run_tandem({"make-model", "--shape", "tiny", "--dtype", "f16", "--out", path});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return path;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void spit(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// Sets a tensor's dimension in place: its info is the name, a u32 dimension count, then
// u64 dimensions (GGUF v3, little-endian as make-model writes it).
void set_dimension(std::string& file, const std::string& tensor, int index, uint64_t value) {
  const size_t name = file.find(tensor);
  ASSERT_NE(name, std::string::npos) << tensor;
  std::memcpy(&file[name + tensor.size() + 4 + 8 * index], &value, sizeof(value));
}

// Rewrites a string value in place, keeping its length: the bytes after the key's u32
// type and u64 length.
void overwrite_string_value(std::string& file, const std::string& key, const std::string& text) {
  const size_t at = file.find(key);
  ASSERT_NE(at, std::string::npos) << key;
  uint64_t length = 0;
  std::memcpy(&length, &file[at + key.size() + 4], sizeof(length));
  ASSERT_GE(length, text.size());
  std::string value = text + std::string(length - text.size(), ' ');
  file.replace(at + key.size() + 12, length, value);
}

// A tiny model with its bytes changed by `edit`, written to `name` in `dir`; its path.
template <typename Edit>
std::string edited_tiny(const ScratchDir& dir, const std::string& name, Edit edit) {
  std::string bytes = slurp(make_tiny(dir));
  edit(bytes);
  const std::string path = dir.file(name).string();
  spit(path, bytes);
  return path;
}

bool has_temp_files(const ScratchDir& dir) {
  for (const auto& entry : std::filesystem::directory_iterator(dir.path()))
    if (entry.path().string().find(".tmp-") != std::string::npos) return true;
  return false;
}

TEST(BadInputCli, ATensorWithAZeroDimensionIsRefusedByEveryCommand) {
  ScratchDir dir;
  const std::string model = edited_tiny(dir, "zero.gguf", [](std::string& bytes) {
    set_dimension(bytes, "blk.0.attn_q.weight", 1, 0);
  });
  const std::string out = dir.file("out.gguf").string();
  // Q8_0 divided by the zero row count (SIGFPE); F16 wrote a broken file.
  for (const char* type : {"Q8_0", "Q4_K_M", "F32", "F16"}) {
    expect_one_line_exit_two(run_tandem({"quantize", model, out, type}),
                             "tensor 'blk.0.attn_q.weight' dims [64, 0] have a zero dimension");
    EXPECT_FALSE(std::filesystem::exists(out)) << type;
    EXPECT_FALSE(has_temp_files(dir)) << type;
  }
  expect_one_line_exit_two(run_tandem({"generate", "--model", model, "--prompt", "x"}),
                           "have a zero dimension");
}

// quantize writes only what tandem runs: a file of an architecture generate refuses is
// refused first (it had written a bert file), and nothing is left behind.
TEST(BadInputCli, QuantizeRefusesAModelTandemCannotRun) {
  ScratchDir dir;
  const std::string model = edited_tiny(dir, "bert.gguf", [](std::string& bytes) {
    overwrite_string_value(bytes, "general.architecture", "bert");
  });
  const std::string out = dir.file("out.gguf").string();
  expect_one_line_exit_two(run_tandem({"quantize", model, out, "Q8_0"}),
                           "unsupported architecture 'bert ");
  EXPECT_FALSE(std::filesystem::exists(out));
  EXPECT_FALSE(has_temp_files(dir));
  expect_one_line_exit_two(run_tandem({"generate", "--model", model, "--prompt", "x"}),
                           "unsupported architecture 'bert ");
}

// A block_count below the layers the file holds would run a cut-down model: refused, as
// llama.cpp refuses it (the u32 value follows the key's u32 type tag).
TEST(BadInputCli, ALayerPastBlockCountIsRefused) {
  ScratchDir dir;
  std::string bytes = slurp(make_tiny(dir));
  const std::string key = "llama.block_count";
  const size_t at = bytes.find(key);
  ASSERT_NE(at, std::string::npos);
  uint32_t layers = 0;
  std::memcpy(&layers, &bytes[at + key.size() + 4], sizeof(layers));
  ASSERT_GE(layers, 2u);
  const uint32_t fewer = layers - 1;
  std::memcpy(&bytes[at + key.size() + 4], &fewer, sizeof(fewer));
  const std::string model = dir.file("short.gguf").string();
  spit(model, bytes);
  expect_one_line_exit_two(run_tandem({"generate", "--model", model, "--prompt", "x"}),
                           "tensor blk." + std::to_string(fewer) + ".");
}

// One embedding row per token, as llama.cpp checks token_embd's shape against the token
// list: a list longer than the embedding names tokens the model has no row for.
TEST(BadInputCli, ATokenListLongerThanTheEmbeddingIsRefused) {
  ScratchDir dir;
  std::string bytes = slurp(make_tiny(dir));
  for (const char* tensor : {"token_embd.weight", "output.weight"})
    set_dimension(bytes, tensor, 1, 257);
  const std::string model = dir.file("short-embedding.gguf").string();
  spit(model, bytes);
  expect_one_line_exit_two(run_tandem({"generate", "--model", model, "--prompt", "x"}),
                           "tokenizer.ggml.tokens holds 258 tokens, token_embd.weight 257 rows");
}

// generate and bench send no chat requests, so a template tandem cannot compile does not
// refuse the model; serve, which renders it, still refuses at startup.
TEST(BadInputCli, AnUnparsableChatTemplateRefusesOnlyServe) {
  ScratchDir dir;
  const std::string model = edited_tiny(dir, "bad-template.gguf", [](std::string& bytes) {
    overwrite_string_value(bytes, "tokenizer.chat_template", "{{ (");
  });
  const auto generated = run_tandem({"generate", "--model", model, "--prompt", "Hi", "--max-tokens",
                                     "3", "--ignore-eos", "--threads", "1"});
  EXPECT_EQ(generated.exit_code, 0) << generated.err;
  EXPECT_NE(generated.err.find("generated 3 tokens"), std::string::npos) << generated.err;
  const auto bench =
      run_tandem({"bench", "--model", model, "--offline", "--requests", "2", "--prompt-tokens", "4",
                  "--max-tokens", "2", "--threads", "1", "--ceilings", "false"});
  EXPECT_EQ(bench.exit_code, 0) << bench.err;
  expect_one_line_exit_two(run_tandem({"serve", "--model", model, "--port", "0"}),
                           "give another with --chat-template");
}

// A step smaller than the batch left prompts waiting while the running requests decoded
// (QA R: a third request's first token at turn 105 of 110): refused before the model loads.
TEST(BadInputCli, AStepThatCannotHoldTheBatchIsRefused) {
  ScratchDir dir;
  const std::string model = make_tiny(dir);
  expect_one_line_exit_two(
      run_tandem({"serve", "--model", model, "--port", "0", "--max-step-tokens", "32"}),
      "--max-step-tokens 32 is below --max-batch 64");
  expect_one_line_exit_two(
      run_tandem({"bench", "--model", model, "--offline", "--requests", "2", "--max-batch", "8",
                  "--max-step-tokens", "4", "--ceilings", "false"}),
      "--max-step-tokens 4 is below --max-batch 8");
}

TEST(BadInputCli, NanAndInfinityAreRefusedForEveryFloatFlag) {
  ScratchDir dir;
  const std::string model = make_tiny(dir);
  for (const auto& [flag, value] :
       std::vector<std::pair<std::string, std::string>>{{"--temperature", "nan"},
                                                        {"--top-p", "nan"},
                                                        {"--min-p", "NaN"},
                                                        {"--temperature", "inf"},
                                                        {"--top-p", "-nan"}}) {
    expect_one_line_exit_two(
        run_tandem({"generate", "--model", model, "--prompt", "x", flag, value}),
        flag + ": '" + value + "' is not a number from");
  }
  // serve would have started and answered every request with an empty reply.
  for (const char* flag : {"--idle-timeout", "--read-timeout", "--shutdown-grace"}) {
    expect_one_line_exit_two(run_tandem({"serve", "--model", model, "--port", "0", flag, "nan"}),
                             std::string(flag) + ": 'nan' is not a number from");
  }
  expect_one_line_exit_two(
      run_tandem({"bench", "--url", "http://127.0.0.1:9", "--temperature", "nan"}),
      "--temperature: 'nan' is not a number from 0 to 100");
  // In range still passes: a finite value at a bound.
  const auto ok = run_tandem({"generate", "--model", model, "--prompt", "x", "--max-tokens", "1",
                              "--top-p", "1", "--min-p", "0", "--temperature", "100"});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
}

TEST(BadInputCli, ASeedOutsideUnsigned64BitsIsRefused) {
  ScratchDir dir;
  const std::string model = make_tiny(dir);
  for (const char* seed : {"-1", "99999999999999999999999", "1.5", ""}) {
    expect_one_line_exit_two(
        run_tandem({"generate", "--model", model, "--prompt", "x", "--seed", seed}),
        "is not an integer from 0 to 18446744073709551615");
    expect_one_line_exit_two(run_tandem({"bench", "--url", "http://127.0.0.1:9", "--seed", seed}),
                             "is not an integer from 0 to 18446744073709551615");
  }
  const auto top = run_tandem({"generate", "--model", model, "--prompt", "x", "--max-tokens", "1",
                               "--seed", "18446744073709551615"});
  EXPECT_EQ(top.exit_code, 0) << top.err;
  EXPECT_NE(top.err.find("seed 18446744073709551615"), std::string::npos) << top.err;
}

TEST(BadInputCli, InputsThatAreNotRegularFilesSayWhatTheyAre) {
  ScratchDir dir;
  const std::string fifo = dir.file("fifo.gguf").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // Opening a FIFO for reading waited for a writer forever.
  expect_one_line_exit_two(run_tandem({"generate", "--model", fifo, "--prompt", "x"}),
                           "not a regular file (a FIFO)");
  const std::string out = dir.file("out.gguf").string();
  expect_one_line_exit_two(run_tandem({"quantize", fifo, out, "Q8_0"}), "is a FIFO");
  expect_one_line_exit_two(run_tandem({"quantize", dir.path().string(), out, "Q8_0"}),
                           "is a directory");
}

TEST(BadInputCli, APromptLongerThanTheContextBlamesThePrompt) {
  ScratchDir dir;
  const std::string model = make_tiny(dir);  // a 512-token context, a token per byte
  const auto alone = run_tandem({"generate", "--model", model, "--prompt", std::string(600, 'a')});
  expect_one_line_exit_two(alone, "--prompt: prompt (");
  EXPECT_NE(alone.err.find("tokens) exceeds the context length 512"), std::string::npos)
      << alone.err;
  EXPECT_EQ(alone.err.find("--max-tokens"), std::string::npos) << alone.err;
  const auto both = run_tandem(
      {"generate", "--model", model, "--prompt", std::string(500, 'a'), "--max-tokens", "100"});
  expect_one_line_exit_two(both, "--max-tokens: prompt (");
}

TEST(BadInputCli, OutputPathsThatCannotBeWrittenAreRefusedUpFront) {
  ScratchDir dir;
  const std::string model = make_tiny(dir);
  const std::string missing = dir.file("no-such-dir/x.gguf").string();
  const std::string here = dir.path().string();
  expect_one_line_exit_two(run_tandem({"quantize", model, here, "Q8_0"}), "is a directory");
  expect_one_line_exit_two(run_tandem({"quantize", model, missing, "Q8_0"}), "does not exist");
  expect_one_line_exit_two(run_tandem({"make-model", "--shape", "tiny", "--out", here}), "--out: ");
  expect_one_line_exit_two(run_tandem({"make-model", "--shape", "tiny", "--out", missing}),
                           "does not exist");
  expect_one_line_exit_two(
      run_tandem({"serve", "--model", model, "--port", "0", "--access-log", missing}),
      "--access-log: ");
  // bench finds both before it contacts a server (port 9, discard, has none).
  expect_one_line_exit_two(run_tandem({"bench", "--url", "http://127.0.0.1:9", "--json", here}),
                           "--json: ");
  expect_one_line_exit_two(run_tandem({"bench", "--url", "http://127.0.0.1:9", "--json", missing}),
                           "does not exist");
  const std::string schema = dir.file("schema.json").string();
  spit(schema, "{\"type\": \"object\",");
  expect_one_line_exit_two(
      run_tandem({"bench", "--url", "http://127.0.0.1:9", "--json-schema", schema}),
      "--json-schema: " + schema + " is not JSON");
}

// The finished file is renamed over the output path, which replaced a FIFO (or, as root, a
// device such as /dev/full) by a file: only a regular file is replaced. A symbolic link is
// followed, so the link stays and its target gets the file. An explicitly empty --json
// wrote nothing and said nothing.
TEST(BadInputCli, OutputsReplaceOnlyRegularFilesAndFollowLinks) {
  ScratchDir dir;
  const std::string model = make_tiny(dir);
  const std::string fifo = dir.file("fifo.gguf").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  expect_one_line_exit_two(run_tandem({"quantize", model, fifo, "Q8_0"}),
                           "out: " + fifo + " is not a regular file");
  expect_one_line_exit_two(run_tandem({"make-model", "--shape", "tiny", "--out", fifo}),
                           "--out: " + fifo + " is not a regular file");
  EXPECT_TRUE(std::filesystem::is_fifo(fifo));
  const std::string target = dir.file("target.gguf").string();
  const std::string link = dir.file("link.gguf").string();
  spit(target, "old");
  std::filesystem::create_symlink(target, link);
  const CommandResult written = run_tandem({"quantize", model, link, "Q8_0"});
  ASSERT_EQ(written.exit_code, 0) << written.err;
  EXPECT_TRUE(std::filesystem::is_symlink(link));
  EXPECT_GT(std::filesystem::file_size(target), 1000u);
  expect_one_line_exit_two(run_tandem({"bench", "--url", "http://127.0.0.1:9", "--json", ""}),
                           "--json: an empty path");
  // A link whose target does not exist yet: the target is made, the link stays.
  const std::string dangling = dir.file("dangling.gguf").string();
  const std::string made = dir.file("made.gguf").string();
  std::filesystem::create_symlink("made.gguf", dangling);
  const CommandResult created = run_tandem({"quantize", model, dangling, "Q8_0"});
  ASSERT_EQ(created.exit_code, 0) << created.err;
  EXPECT_TRUE(std::filesystem::is_symlink(dangling));
  EXPECT_TRUE(std::filesystem::is_regular_file(made));
}

// A file bench or serve would open and write itself must open for writing now, not
// after the run (bench's --json came at the end of minutes of load). As root, mode bits
// do not stop a write, so a sysfs file that refuses even root stands in.
TEST(BadInputCli, AnExistingFileThatCannotBeWrittenIsRefusedUpFront) {
  ScratchDir dir;
  std::string locked = dir.file("locked.json").string();
  spit(locked, "{}");
  ::chmod(locked.c_str(), 0444);
  if (::geteuid() == 0) locked = "/sys/devices/system/cpu/online";
  if (!std::filesystem::exists(locked)) GTEST_SKIP() << "no read-only file to write: " << locked;
  expect_one_line_exit_two(run_tandem({"bench", "--url", "http://127.0.0.1:9", "--json", locked}),
                           "--json: " + locked + " cannot be written");
  const std::string model = make_tiny(dir);
  expect_one_line_exit_two(
      run_tandem({"serve", "--model", model, "--port", "0", "--access-log", locked}),
      "--access-log: " + locked + " cannot be written");
}

// A --kv-tokens within its range that no machine here holds is the flag's fault (exit 2),
// said before the allocation: it was "std::bad_alloc" and exit 1.
TEST(BadInputCli, AKvCacheLargerThanTheMachinesMemoryIsRefused) {
  ScratchDir dir;
  const std::string model = make_tiny(dir);
  for (const char* command : {"serve", "bench"}) {
    SCOPED_TRACE(command);
    expect_one_line_exit_two(
        run_tandem({command, "--model", model, "--kv-tokens", "4294967296", "--kv-dtype", "f32"}),
        "--kv-tokens: a KV cache of 4294967296 tokens takes");
  }
}

// serve without --model makes its default model under $XDG_CACHE_HOME/tandem: a cache
// directory that cannot be made was a raw filesystem error and exit 1.
TEST(BadInputCli, ACacheDirectoryThatCannotBeMadeIsSaidInOneLine) {
  ScratchDir dir;
  const std::string file = dir.file("a-file").string();
  spit(file, "x");
  ::setenv("XDG_CACHE_HOME", file.c_str(), 1);
  const CommandResult r = run_tandem({"serve", "--port", "0"});
  ::unsetenv("XDG_CACHE_HOME");
  expect_one_line_exit_two(r, "cannot create " + file + "/tandem for the default model");
}

// A flag given twice was named in CLI11's words ("At Most 1 required but received 2").
TEST(BadInputCli, AFlagGivenTwiceIsSaidSo) {
  expect_one_line_exit_two(
      run_tandem({"bench", "--url", "http://x", "--max-tokens", "4", "--max-tokens", "4"}),
      "--max-tokens: given more than once");
}

// An empty --api-key served without authentication, in silence.
TEST(BadInputCli, AnEmptyApiKeyIsRefused) {
  ScratchDir dir;
  const std::string model = make_tiny(dir);
  expect_one_line_exit_two(run_tandem({"serve", "--model", model, "--port", "0", "--api-key", ""}),
                           "an empty key would leave the server open");
  // A blank or control byte: no client can send the key, so nobody could get in.
  for (const char* key : {" ", "key\n", "a b"}) {
    expect_one_line_exit_two(
        run_tandem({"serve", "--model", model, "--port", "0", "--api-key", key}),
        "a key is visible ASCII characters");
  }
  // An empty host listened on every interface.
  expect_one_line_exit_two(run_tandem({"serve", "--model", model, "--port", "0", "--host", ""}),
                           "--host: an empty host");
}

// A workload that cannot fit the served context failed every request after the load and
// the warm-up (exit 1); it is a bad flag, found first. tiny's context is 512 tokens.
TEST(BadInputCli, BenchWorkloadsBeyondTheContextAreRefusedFirst) {
  ScratchDir dir;
  const std::string model = make_tiny(dir);
  expect_one_line_exit_two(
      run_tandem({"bench", "--model", model, "--prompt-tokens", "600", "--requests", "1"}),
      "--prompt-tokens: prompts of up to 600 tokens leave no room for output in the model's "
      "context of 512 tokens");
  expect_one_line_exit_two(run_tandem({"bench", "--model", model, "--prompt-tokens", "8",
                                       "--shared-prefix-tokens", "504", "--requests", "1"}),
                           "--shared-prefix-tokens/--prompt-tokens: prompts of up to 512");
  expect_one_line_exit_two(run_tandem({"bench", "--model", model, "--kv-tokens", "32",
                                       "--prompt-tokens", "40", "--requests", "1"}),
                           "context of 32 tokens");
}

// A URL nothing answers at is a bad --url (exit 2), said in one line.
TEST(BadInputCli, BenchAgainstAUrlNothingAnswersAtExitsTwo) {
  expect_one_line_exit_two(run_tandem({"bench", "--url", "http://127.0.0.1:9", "--requests", "1"}),
                           "--url: cannot reach http://127.0.0.1:9");
}

TEST(BadInputCli, AnEmptyServedModelNameIsRefused) {
  ScratchDir dir;
  const std::string model = make_tiny(dir);
  expect_one_line_exit_two(
      run_tandem({"serve", "--model", model, "--port", "0", "--served-model-name", ""}),
      "--served-model-name");
  expect_one_line_exit_two(
      run_tandem({"serve", "--model", model, "--port", "0", "--served-model-name", "a", ""}),
      "cannot be empty");
  expect_one_line_exit_two(
      run_tandem({"bench", "--model", model, "--served-model-name", "", "--requests", "1"}),
      "cannot be empty");
}

// Every request waits in the queue until it is admitted, so --max-queue 0 had started a
// server that refused every request with a 400 blaming the request ("send fewer").
TEST(BadInputCli, AZeroQueueIsRefused) {
  ScratchDir dir;
  const std::string model = make_tiny(dir);
  expect_one_line_exit_two(
      run_tandem({"serve", "--model", model, "--port", "0", "--max-queue", "0"}), "--max-queue");
}

// A flag a subcommand does not know points at that subcommand's help, where the flags are.
TEST(BadInputCli, AnUnknownFlagPointsAtItsSubcommandsHelp) {
  expect_one_line_exit_two(run_tandem({"serve", "--no-such-flag"}), "(see tandem serve --help)");
  expect_one_line_exit_two(run_tandem({"bench", "--requests", "x"}), "(see tandem bench --help)");
  expect_one_line_exit_two(run_tandem({"--no-such-flag"}), "(see tandem --help)");
}

TEST(BadInputCli, HelpShowsTheDefaultsAndSaneBounds) {
  const auto generate = run_tandem({"generate", "--help"});
  ASSERT_EQ(generate.exit_code, 0);
  // CLI11 shows a default as "=VALUE" after the type and range.
  for (const auto& [flag, shown] :
       std::vector<std::pair<std::string, std::string>>{{"--max-tokens", "]=64"},
                                                        {"--temperature", "]=0"},
                                                        {"--top-k", "]=0"},
                                                        {"--top-p", "]=1"},
                                                        {"--min-p", "]=0"}}) {
    const size_t at = generate.out.find("  " + flag + " ");
    ASSERT_NE(at, std::string::npos) << flag;
    const std::string line = generate.out.substr(at, generate.out.find('\n', at) - at);
    EXPECT_EQ(line.substr(line.size() - shown.size()), shown) << line;
  }
  const auto bench = run_tandem({"bench", "--help"});
  EXPECT_NE(bench.out.find("default 128"), std::string::npos) << bench.out;
  const auto serve = run_tandem({"serve", "--help"});
  EXPECT_NE(serve.out.find("1048576 tokens"), std::string::npos) << serve.out;
  ScratchDir dir;
  const auto top_k =
      run_tandem({"generate", "--model", make_tiny(dir), "--prompt", "x", "--top-k", "-3"});
  expect_one_line_exit_two(top_k, "--top-k");
  EXPECT_LT(top_k.err.size(), 200u) << top_k.err;
}

}  // namespace
}  // namespace tandem::testing::TANDEM_UNITY_ID
