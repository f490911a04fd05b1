// Structured output through the engine (scheduler, device worker, forward pass, fused
// sampler, matcher) on a random-weight model: every constrained output parses and
// validates against its schema, and the laws hold with grammar masks in the step (overlap
// on and off, batch composition, thread count, preemption under a small KV pool); and on
// the simulated device, chained steps advance a row's matcher on the worker.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "runner/device/simulated_executor.h"
#include "runner/model/make_model.h"
#include "scheduler/engine.h"
#include "tests/common/test_models.h"
#include "tests/common/test_support.h"
#include "tests/runner/grammar/schema_suite.h"
#include "tests/runner/grammar/schema_validator.h"
#include "tests/scheduler/scheduler_test_support.h"

namespace tandem::testing::TANDEM_UNITY_ID {
namespace {

using grammar::testing::schema_suite;

constexpr int kConstrainedRequests = 200;
constexpr int kUnconstrainedRequests = 40;
constexpr int kStoppedRequests = 16;
// Room for the longest documents a random model writes: the 30-property object, an
// unanchored pattern (open until a match comes up by chance), an e-mail's local part.
constexpr int32_t kConstrainedMaxTokens = 1900;

// make-model's "demo" shape: the context (2048) holds those documents.
std::filesystem::path demo_model(const ScratchDir& dir) {
  make_model::MakeModelOptions options;
  options.shape = "demo";
  options.dtype = gguf::TensorType::kF16;
  options.seed = 3;
  options.out = dir.path() / "demo.gguf";
  make_model::write_random_model(options);
  return options.out;
}

// One request of the workload: a schema of the suite (or none) and a seed.
struct Job {
  const grammar::testing::NamedSchema* schema = nullptr;  // null: unconstrained
  uint64_t seed = 0;
  // Ends at the first ",": a stop string finishes the row with a token already in flight
  // (overlap on), whose matcher step is dropped with the row.
  bool stop_at_comma = false;
};

struct Outcome {
  std::string text;
  std::optional<FinishReason> reason;
  int64_t tokens = 0;
};

struct EngineSetup {
  bool overlap = true;
  int threads = 2;
  int64_t kv_tokens = 16384;
};

std::vector<Job> workload() {
  std::vector<Job> jobs;
  const auto& suite = schema_suite();
  for (int i = 0; i < kConstrainedRequests + kUnconstrainedRequests; ++i) {
    // Every sixth request is unconstrained, so both kinds mix in every step.
    const bool plain = i % 6 == 5 && i / 6 < kUnconstrainedRequests;
    jobs.push_back({plain ? nullptr : &suite[static_cast<size_t>(i) % suite.size()],
                    0x5eed0000u + static_cast<uint64_t>(i)});
  }
  for (int i = 0; i < kStoppedRequests; ++i) {
    jobs.push_back({&suite[static_cast<size_t>(i)], 0x570b0000u + static_cast<uint64_t>(i), true});
  }
  return jobs;
}

// A random-weight model's logits are nearly flat, so a JSON string would run on for
// hundreds of bytes before a '"' came up by chance, and the whitespace the grammar allows
// between tokens (a newline and up to 20 blanks) would take a large share of them. Raising
// the closing characters' logits and lowering the blanks' (a plain logit_bias, applied
// before the mask) keeps the documents short; the grammar still decides what may appear.
std::vector<std::pair<int32_t, float>> short_document_bias(const Tokenizer& tokenizer) {
  std::vector<std::pair<int32_t, float>> bias;
  for (const auto& [text, value] : {std::pair{"\"", 3.0f},
                                    {"]", 2.0f},
                                    {"}", 2.0f},
                                    {" ", -4.0f},
                                    {"\n", -4.0f},
                                    {"\t", -4.0f}}) {
    const std::vector<int32_t> ids = tokenizer.encode(text, false, false);
    EXPECT_EQ(ids.size(), 1u) << text;
    if (!ids.empty()) bias.emplace_back(ids.front(), value);
  }
  std::sort(bias.begin(), bias.end());
  return bias;
}

std::vector<Outcome> run_jobs(const std::filesystem::path& model, const EngineSetup& setup,
                              const std::vector<Job>& jobs, SchedulerMetrics* metrics = nullptr) {
  EngineOptions options;
  options.model = model;
  options.threads = setup.threads;
  options.kv_tokens = setup.kv_tokens;
  options.scheduler.overlap = setup.overlap;
  options.scheduler.max_queue = 1024;
  Engine engine(options);
  const std::vector<int32_t> prompt = engine.tokenizer().encode("JSON please: ", true, false);
  const auto bias = short_document_bias(engine.tokenizer());
  std::vector<std::shared_ptr<RecordingSink>> sinks;
  // Everything is queued before the loop starts, so every run admits in the same order.
  for (const Job& job : jobs) {
    auto sink = std::make_shared<RecordingSink>();
    GenerationRequest request;
    request.prompt = prompt;
    request.sampling.seed = job.seed;
    if (job.schema != nullptr) {
      request.grammar = engine.grammars().json_schema(job.schema->text);
      request.sampling.logit_bias = bias;
      request.max_tokens = kConstrainedMaxTokens;
      if (job.stop_at_comma) request.stop = {","};
    } else {
      request.sampling.ignore_eos = true;
      request.max_tokens = 24;
    }
    request.sink = sink;
    EXPECT_TRUE(engine.scheduler().submit(std::move(request)).accepted());
    sinks.push_back(sink);
  }
  engine.start();
  std::vector<Outcome> outcomes;
  for (const auto& sink : sinks) {
    sink->wait();
    outcomes.push_back({sink->text(), sink->reason(), sink->usage().completion_tokens});
  }
  if (metrics != nullptr) *metrics = engine.scheduler().metrics();
  return outcomes;
}

TEST(StructuredOutput, SchemaSuiteOutputsParseValidateAndObeyTheLaws) {
  ASSERT_GE(schema_suite().size(), 30u);
  ScratchDir dir;
  const auto model = demo_model(dir);
  const std::vector<Job> jobs = workload();

  const std::vector<Outcome> on = run_jobs(model, {true, 2, 16384}, jobs);
  int validated = 0;
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (jobs[i].schema == nullptr) continue;
    if (jobs[i].stop_at_comma) {
      EXPECT_EQ(on[i].reason, FinishReason::kStop) << on[i].text;
      EXPECT_EQ(on[i].text.find(','), std::string::npos) << on[i].text;
      continue;
    }
    SCOPED_TRACE(std::string(jobs[i].schema->name) + ", seed " + std::to_string(jobs[i].seed) +
                 ", " + std::to_string(on[i].tokens) + " tokens: " + on[i].text);
    EXPECT_EQ(on[i].reason, FinishReason::kStop);
    const auto document = nlohmann::json::parse(on[i].text, nullptr, false);
    EXPECT_FALSE(document.is_discarded());
    if (document.is_discarded()) continue;
    const auto schema = nlohmann::json::parse(jobs[i].schema->text);
    EXPECT_EQ(grammar::testing::validate(document, schema), std::nullopt);
    ++validated;
  }
  EXPECT_EQ(validated, kConstrainedRequests);

  // Overlap off, one thread, and a pool so small that requests are preempted and
  // recomputed: the same bytes.
  SchedulerMetrics metrics;
  const std::vector<Outcome> off = run_jobs(model, {false, 1, 2048}, jobs, &metrics);
  EXPECT_GT(metrics.preemptions, 0u) << "the small pool was meant to preempt";
  for (size_t i = 0; i < jobs.size(); ++i) {
    EXPECT_EQ(off[i].text, on[i].text) << "request " << i;
    EXPECT_EQ(off[i].reason, on[i].reason) << "request " << i;
  }

  // The unconstrained rows did not notice the constrained ones beside them.
  std::vector<Job> plain;
  std::vector<size_t> where;
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (jobs[i].schema != nullptr) continue;
    plain.push_back(jobs[i]);
    where.push_back(i);
  }
  const std::vector<Outcome> alone = run_jobs(model, {true, 2, 16384}, plain);
  for (size_t k = 0; k < plain.size(); ++k) EXPECT_EQ(alone[k].text, on[where[k]].text);
}

TEST(StructuredOutput, AGbnfGrammarShapesTheOutputAndEndsIt) {
  ScratchDir dir;
  EngineOptions options;
  options.model = write_tiny_llama(dir.path(), gguf::TensorType::kF16, /*seed=*/3);
  options.threads = 2;
  options.kv_tokens = 4096;
  Engine engine(options);
  engine.start();
  const auto compiled = engine.grammars().gbnf(R"(root ::= "yes" | "no" | [0-9]{2,3} "!")");
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    auto sink = std::make_shared<RecordingSink>();
    GenerationRequest request;
    request.prompt = engine.tokenizer().encode("Answer: ", true, false);
    request.sampling.seed = seed;
    request.grammar = compiled;
    request.max_tokens = 16;
    request.sink = sink;
    ASSERT_TRUE(engine.scheduler().submit(std::move(request)).accepted());
    sink->wait();
    const std::string text = sink->text();
    EXPECT_EQ(sink->reason(), FinishReason::kStop) << text;
    const bool digits = text.size() >= 3 && text.size() <= 4 && text.back() == '!' &&
                        std::all_of(text.begin(), text.end() - 1, ::isdigit);
    EXPECT_TRUE(text == "yes" || text == "no" || digits) << text;
    // The end-of-generation token counts, as for any request.
    EXPECT_EQ(sink->usage().completion_tokens, static_cast<int64_t>(text.size()) + 1);
  }
}

// One row decoded on the simulated device, by chained steps (the worker feeds each token
// and advances the matcher) or by fresh launches from the host: the same tokens, in the
// grammar, ending with the end-of-generation id once it accepts.
std::vector<int32_t> decode_on_device(bool chained,
                                      const std::shared_ptr<const grammar::CompiledGrammar>& g) {
  SimulatedDeviceConfig config;
  config.eos_probability = 0;
  Device device(std::make_unique<SimulatedExecutor>(config));
  StepRow row;
  row.request_id = 1;
  row.tokens = {'x'};
  row.kv_blocks = {0};
  row.sampling.seed = 9;
  row.grammar = std::make_shared<grammar::Matcher>(g);
  std::vector<int32_t> tokens;
  PendingStep step = device.launch(StepPlan{{row}});
  for (int i = 0; i < 8; ++i) {
    PendingStep next;
    if (chained && i < 7) next = device.launch_chained(step);
    const int32_t token = device.finalize(step).tokens.at(0);
    tokens.push_back(token);
    if (i == 7) break;
    if (!chained) {
      row.position += static_cast<int32_t>(row.tokens.size());
      row.tokens = {token};
      next = device.launch(StepPlan{{row}});
    }
    step = std::move(next);
  }
  return tokens;
}

TEST(StructuredOutput, TheDeviceWorkerAdvancesAChainedRowsMatcher) {
  std::vector<std::string> bytes(512);
  for (int id = 2; id < 128; ++id) bytes[static_cast<size_t>(id)] = std::string(1, char(id));
  auto vocabulary =
      std::make_shared<const grammar::Vocabulary>(std::move(bytes), std::vector<int32_t>{1});
  auto compiled = std::make_shared<const grammar::CompiledGrammar>(
      grammar::parse_gbnf(R"(root ::= [a-e]{6} "!")"), vocabulary);
  const std::vector<int32_t> chained = decode_on_device(true, compiled);
  EXPECT_EQ(chained, decode_on_device(false, compiled));
  ASSERT_EQ(chained.size(), 8u);
  for (int i = 0; i < 6; ++i) EXPECT_TRUE(chained[i] >= 'a' && chained[i] <= 'e') << chained[i];
  EXPECT_EQ(chained[6], '!');
  EXPECT_EQ(chained[7], 1);  // end of generation, allowed only now
}

}  // namespace
}  // namespace tandem::testing::TANDEM_UNITY_ID
