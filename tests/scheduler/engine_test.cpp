// The assembled engine on a real tiny model: a request goes through scheduler, device,
// forward pass and sampler, and comes back as text with usage; bad files are refused.
#include "scheduler/engine.h"

#include <gtest/gtest.h>

#include <fstream>

#include "tests/common/test_models.h"
#include "tests/common/test_support.h"
#include "tests/scheduler/scheduler_test_support.h"

namespace tandem::testing::TANDEM_UNITY_ID {
namespace {

std::string generate(Engine& engine, uint64_t seed, int32_t max_tokens) {
  auto sink = std::make_shared<RecordingSink>();
  GenerationRequest req;
  req.prompt = engine.tokenizer().encode("Hello there", true, false);
  req.sampling.seed = seed;
  req.sampling.ignore_eos = true;
  req.max_tokens = max_tokens;
  req.sink = sink;
  EXPECT_TRUE(engine.scheduler().submit(std::move(req)).accepted());
  sink->wait();
  EXPECT_EQ(sink->reason(), FinishReason::kLength);
  EXPECT_EQ(sink->usage().completion_tokens, max_tokens);
  return sink->text();
}

TEST(Engine, RunsARequestEndToEndAndRepeatsItBySeed) {
  ScratchDir dir;
  EngineOptions options;
  options.model = write_tiny_llama(dir.path(), gguf::TensorType::kF16, /*seed=*/0);
  options.threads = 2;
  options.kv_tokens = 2048;
  Engine engine(options);
  engine.start();
  EXPECT_EQ(engine.config().n_vocab, 258);
  const std::string a = generate(engine, 42, 24);
  const std::string b = generate(engine, 42, 24);
  const std::string c = generate(engine, 43, 24);
  EXPECT_FALSE(a.empty());
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

TEST(Engine, RefusesAFileThatIsNotAModel) {
  ScratchDir dir;
  std::ofstream(dir.file("bad.gguf")) << "GGUF but not really";
  EngineOptions options;
  options.model = dir.file("bad.gguf");
  EXPECT_THROW(Engine{options}, gguf::GgufError);
}

}  // namespace
}  // namespace tandem::testing::TANDEM_UNITY_ID
