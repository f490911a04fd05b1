// The GPU executor under the real scheduler (DESIGN.md's laws on the GPU): outputs are the
// same with overlap on and off (chained steps fed on the device), alone or in any batch, with
// CUDA graphs or plain launches, for every KV type the GPU keeps, and for rows the host
// samples (penalties, log-probabilities, grammars) mixed with rows the device samples.
#include <gtest/gtest.h>

#include <numeric>

#include "runner/device/cpu_executor.h"
#include "scheduler/engine.h"
#include "tests/common/test_models.h"
#include "tests/common/test_support.h"
#include "tests/cuda/cuda_test_support.h"
#include "tests/scheduler/scheduler_test_support.h"

namespace tandem::testing::TANDEM_UNITY_ID {
namespace {

struct Ask {
  std::string prompt;
  SamplingParams sampling;
  int32_t max_tokens = 16;
  bool json = false;  // constrained to a JSON object
};

// A mix: greedy, plain temperature, every filter, logit_bias and min_tokens bans (all on the
// device), and penalties, logprobs (post-sampling ones), Mirostat and a grammar (on the host);
// prompts and lengths differ, so requests finish at different steps and the batch changes under the
// chain.
std::vector<Ask> mixed_asks() {
  std::vector<Ask> asks;
  for (int i = 0; i < 12; ++i) {
    Ask a;
    a.prompt = std::string("The request number ") + std::to_string(i) + std::string(i % 4 * 9, 'x');
    a.sampling.seed = 1000 + i;
    a.sampling.temperature = i % 3 == 0 ? 0.0f : 0.7f + 0.1f * (i % 4);
    if (i % 4 == 1) a.sampling.top_k = 20;
    if (i % 4 == 2) a.sampling.top_p = 0.9f;
    if (i % 5 == 3) a.sampling.min_p = 0.05f;
    if (i == 4) a.sampling.logit_bias = {{65, 3.0f}, {66, -100.0f}};
    if (i == 5) a.sampling.presence_penalty = 0.8f;
    if (i == 7) a.sampling.logprobs = 3;
    if (i == 2) {  // Mirostat's state, advanced by the host Sampler from step to step
      a.sampling.mirostat = 2;
      a.sampling.mirostat_tau = 3.0f;
      a.sampling.top_p = 1.0f;
    }
    if (i == 7) a.sampling.post_sampling_probs = true;
    if (i == 6) a.sampling.adaptive_target = 0.3f;  // adaptive-p's average, on the host too
    if (i == 8) a.sampling.repetition_penalty = 1.3f;
    if (i == 11) a.sampling.xtc_probability = 0.6f;  // on the host, as the penalties
    if (i == 9) {                                    // DRY over the whole history, on the host too
      a.sampling.dry_multiplier = 0.8f;
      a.sampling.dry_allowed_length = 1;
    }
    if (i == 10) {  // llama.cpp's definitions, over a window of the prompt and the output
      a.sampling.frequency_penalty = 0.6f;
      a.sampling.penalty_last_n = 8;
    }
    a.max_tokens = 6 + (i * 5) % 17;
    asks.push_back(std::move(a));
  }
  return asks;
}

EngineOptions gpu_options(const std::filesystem::path& model, bool overlap, KvType kv) {
  EngineOptions o;
  o.model = model;
  o.device = "cuda";
  o.kv_tokens = 4096;
  o.kv_type = kv;
  o.scheduler.overlap = overlap;
  return o;
}

// Submits every ask at once and returns the texts, in ask order.
std::vector<std::string> run(Engine& engine, const std::vector<Ask>& asks) {
  std::vector<std::shared_ptr<RecordingSink>> sinks;
  for (const Ask& a : asks) {
    auto sink = std::make_shared<RecordingSink>();
    GenerationRequest r;
    r.prompt = engine.tokenizer().encode(a.prompt, true, false);
    r.sampling = a.sampling;
    r.sampling.ignore_eos = true;
    r.max_tokens = a.max_tokens;
    if (a.json) r.grammar = engine.grammars().json_object();
    r.sink = sink;
    EXPECT_TRUE(engine.scheduler().submit(std::move(r)).accepted());
    sinks.push_back(sink);
  }
  std::vector<std::string> texts;
  for (auto& s : sinks) {
    s->wait();
    EXPECT_TRUE(s->reason().has_value()) << s->text();
    texts.push_back(s->text());
  }
  return texts;
}

class GpuLaws : public ::testing::TestWithParam<KvType> {};

TEST_P(GpuLaws, OverlapOnAndOffGiveTheSameTexts) {
  TANDEM_REQUIRE_GPU();
  ScratchDir dir;
  const auto model = write_tiny_llama(dir.path(), gguf::TensorType::kF16, 7);
  const std::vector<Ask> asks = mixed_asks();
  std::vector<std::string> off, on;
  {
    Engine engine(gpu_options(model, false, GetParam()));
    engine.start();
    off = run(engine, asks);
  }
  SchedulerMetrics metrics;
  {
    Engine engine(gpu_options(model, true, GetParam()));
    engine.start();
    on = run(engine, asks);
    metrics = engine.scheduler().metrics();
  }
  EXPECT_EQ(on, off);
  EXPECT_GT(metrics.chained_steps, 0u);
  EXPECT_GE(metrics.gpu_busy_seconds, 0.0);
  std::cout << "  chained steps " << metrics.chained_steps << " of " << metrics.steps
            << "; chained gap p50 " << metrics.chained_gap_median_us << " us\n";
}

TEST_P(GpuLaws, ARequestGivesTheSameTextAloneAndInABatch) {
  TANDEM_REQUIRE_GPU();
  ScratchDir dir;
  const auto model = write_tiny_llama(dir.path(), gguf::TensorType::kBF16, 9);
  Engine engine(gpu_options(model, true, GetParam()));
  engine.start();
  const std::vector<Ask> asks = mixed_asks();
  const std::vector<std::string> together = run(engine, asks);
  for (size_t i = 0; i < asks.size(); i += 3)
    EXPECT_EQ(run(engine, {asks[i]}).front(), together[i]) << "ask " << i;
}

// Quantized weights that the GPU keeps as int8 times a scale per 32 (Q8_0, Q4_0): the laws
// hold there too (alone or in any batch, overlap on or off).
class GpuQuantizedLaws : public ::testing::TestWithParam<gguf::TensorType> {};

TEST_P(GpuQuantizedLaws, ARequestGivesTheSameTextAloneInABatchAndWithOverlapOff) {
  TANDEM_REQUIRE_GPU();
  ScratchDir dir;
  const auto model = write_tiny_llama(dir.path(), GetParam(), 23);
  const std::vector<Ask> asks = mixed_asks();
  std::vector<std::string> together;
  {
    Engine engine(gpu_options(model, true, KvType::kF16));
    engine.start();
    together = run(engine, asks);
    for (size_t i = 0; i < asks.size(); i += 4)
      EXPECT_EQ(run(engine, {asks[i]}).front(), together[i]) << "ask " << i;
  }
  Engine off(gpu_options(model, false, KvType::kF16));
  off.start();
  EXPECT_EQ(run(off, asks), together);
}

INSTANTIATE_TEST_SUITE_P(WeightTypes, GpuQuantizedLaws,
                         ::testing::Values(gguf::TensorType::kQ8_0, gguf::TensorType::kQ4_0),
                         [](const auto& info) { return std::string(gguf::type_name(info.param)); });

INSTANTIATE_TEST_SUITE_P(KvTypes, GpuLaws,
                         ::testing::Values(KvType::kF16, KvType::kBf16, KvType::kF32),
                         [](const auto& info) { return std::string(kv_type_name(info.param)); });

TEST(GpuEngine, GrammarRowsOnTheHostStayValidJson) {
  TANDEM_REQUIRE_GPU();
  ScratchDir dir;
  const auto model = write_tiny_llama(dir.path(), gguf::TensorType::kF16, 11);
  Engine engine(gpu_options(model, true, KvType::kF16));
  engine.start();
  std::vector<Ask> asks = mixed_asks();
  for (size_t i = 0; i < asks.size(); i += 2) {
    asks[i].json = true;
    asks[i].max_tokens = 40;
  }
  const std::vector<std::string> texts = run(engine, asks);
  for (size_t i = 0; i < asks.size(); i += 2)
    EXPECT_FALSE(texts[i].empty() || texts[i][0] != '{') << texts[i];
}

TEST(GpuEngine, APrefixCacheHitGivesTheSameText) {
  TANDEM_REQUIRE_GPU();
  ScratchDir dir;
  const auto model = write_tiny_llama(dir.path(), gguf::TensorType::kF16, 13);
  Engine engine(gpu_options(model, true, KvType::kF16));
  engine.start();
  Ask a;
  a.prompt = std::string(120, 'q') + " and then";
  a.sampling.seed = 5;
  a.sampling.temperature = 0.8f;
  a.max_tokens = 20;
  const std::string first = run(engine, {a}).front();
  const uint64_t hits = engine.scheduler().metrics().prefix_hit_tokens;
  EXPECT_EQ(run(engine, {a}).front(), first);
  EXPECT_GT(engine.scheduler().metrics().prefix_hit_tokens, hits);
}

// n choices on the GPU: the leader's partly filled prompt block is copied into each
// member's own (copy_kv_slots), and every choice equals the same request alone.
TEST(GpuEngine, EachOfNChoicesEqualsTheSameRequestAlone) {
  TANDEM_REQUIRE_GPU();
  ScratchDir dir;
  const auto model = write_tiny_llama(dir.path(), gguf::TensorType::kF16, 19);
  for (const std::string& prompt : {std::string("abcdefghij"), std::string(40, 'y') + "z"}) {
    Engine engine(gpu_options(model, true, KvType::kF16));
    engine.start();
    std::vector<Ask> asks(4);
    for (int i = 0; i < 4; ++i) {
      asks[i].prompt = prompt;
      asks[i].sampling.seed = 500 + i;
      asks[i].sampling.temperature = 0.9f;
      asks[i].max_tokens = 12;
    }
    std::vector<std::shared_ptr<RecordingSink>> sinks;
    std::vector<GenerationRequest> list;
    for (const Ask& a : asks) {
      sinks.push_back(std::make_shared<RecordingSink>());
      GenerationRequest r;
      r.prompt = engine.tokenizer().encode(a.prompt, true, false);
      r.sampling = a.sampling;
      r.sampling.ignore_eos = true;
      r.max_tokens = a.max_tokens;
      r.sink = sinks.back();
      list.push_back(std::move(r));
    }
    ASSERT_TRUE(engine.scheduler().submit(std::move(list)).accepted());
    for (size_t i = 0; i < asks.size(); ++i) {
      sinks[i]->wait();
      EXPECT_EQ(sinks[i]->text(), run(engine, {asks[i]}).front()) << prompt << " choice " << i;
    }
  }
}

// The GPU and the CPU on the same file: greedy texts agree where the logits leave no near
// tie (a random tiny model has few), so this only reports how far they agree; the shared
// goldens (golden_cuda_test.cpp) hold the GPU to llama.cpp's tokens with margins.
class GpuAgainstCpu : public ::testing::TestWithParam<gguf::TensorType> {};

TEST_P(GpuAgainstCpu, ReportsHowFarGreedyAgreesWithTheCpu) {
  TANDEM_REQUIRE_GPU();
  ScratchDir dir;
  const auto model = write_tiny_llama(dir.path(), GetParam(), 17);
  Ask a;
  a.prompt = "Once upon a time";
  a.sampling.temperature = 0;
  a.max_tokens = 32;
  EngineOptions cpu = gpu_options(model, true, KvType::kF32);
  cpu.device = "cpu";
  Engine cpu_engine(cpu);
  cpu_engine.start();
  Engine gpu_engine(gpu_options(model, true, KvType::kF32));
  gpu_engine.start();
  const std::string c = run(cpu_engine, {a}).front(), g = run(gpu_engine, {a}).front();
  size_t same = 0;
  while (same < std::min(c.size(), g.size()) && c[same] == g[same]) ++same;
  std::cout << "  greedy text, " << gguf::type_name(GetParam())
            << " weights: GPU and CPU agree on the first " << same << " of " << c.size()
            << " bytes\n";
  EXPECT_GT(same, 0u);
}

INSTANTIATE_TEST_SUITE_P(WeightTypes, GpuAgainstCpu,
                         ::testing::Values(gguf::TensorType::kF32, gguf::TensorType::kBF16,
                                           gguf::TensorType::kQ8_0, gguf::TensorType::kQ4_0),
                         [](const auto& info) { return std::string(gguf::type_name(info.param)); });

}  // namespace
}  // namespace tandem::testing::TANDEM_UNITY_ID
