// Speculative decoding in the scheduler, on the simulated device (which checks every KV
// read against what the sequence wrote): drafts, verify rows, their accepted tokens cut by
// EOS, stop strings and max_tokens exactly where decoding without them stops, the chain
// broken for them, and nothing drafted where the executor cannot verify or the batch is
// too large.
#include <gtest/gtest.h>

#include <iostream>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "runner/device/device.h"
#include "runner/device/simulated_executor.h"
#include "scheduler/scheduler.h"
#include "tests/scheduler/scheduler_test_support.h"

namespace tandem::testing::TANDEM_UNITY_ID {
namespace {

// Two letters: a draft matches half the time. EOS now and then where a request lets it.
SimulatedDeviceConfig two_letters(int32_t kv_blocks) {
  SimulatedDeviceConfig config = letters_device(kv_blocks);
  config.alphabet = {'a', 'b'};
  config.eos_probability = 0.02;
  return config;
}

struct Job {
  std::string prompt;
  uint64_t seed = 0;
  int32_t max_tokens = 0;
  std::vector<std::string> stop;
  bool ignore_eos = false;
  float temperature = 1.0f;
};

std::vector<Job> jobs(uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<Job> out(12);
  for (Job& j : out) {
    for (int k = 3 + static_cast<int>(rng() % 20); k > 0; --k) j.prompt += "ab"[rng() % 2];
    j.seed = rng();
    j.max_tokens = 1 + static_cast<int32_t>(rng() % 60);
    if (rng() % 3 == 0) j.stop = {std::vector<std::string>{"aaab", "bbba", "abba"}[rng() % 3]};
    j.ignore_eos = rng() % 2 == 0;
    j.temperature = rng() % 3 == 0 ? 0.0f : 1.0f;
  }
  return out;
}

struct Ran {
  std::vector<std::shared_ptr<RecordingSink>> sinks;
  SchedulerMetrics metrics;
};

Ran run_jobs(const std::vector<Job>& work, SchedulerOptions options, int32_t kv_blocks) {
  ByteTokenizer tokenizer;
  Device device(std::make_unique<SimulatedExecutor>(two_letters(kv_blocks)));
  Scheduler scheduler(device, tokenizer, options);
  Ran out;
  for (const Job& j : work) {
    out.sinks.push_back(std::make_shared<RecordingSink>());
    GenerationRequest r;
    r.prompt.assign(j.prompt.begin(), j.prompt.end());
    r.sampling.temperature = j.temperature;
    r.sampling.seed = j.seed;
    r.sampling.ignore_eos = j.ignore_eos;
    r.max_tokens = j.max_tokens;
    r.stop = j.stop;
    r.sink = out.sinks.back();
    EXPECT_TRUE(scheduler.submit(std::move(r)).accepted());
    scheduler.run_once();
  }
  for (int i = 0; i < 100000 && !scheduler.drained(); ++i) scheduler.run_once();
  EXPECT_TRUE(scheduler.drained());
  out.metrics = scheduler.metrics();
  return out;
}

std::string outcome(const RecordingSink& s) {
  return (s.reason() ? finish_reason_name(*s.reason()) : std::string("none")) + " " +
         std::to_string(s.usage().completion_tokens) + " " + s.text();
}

TEST(Speculation, OutputsEqualDecodingWithoutDraftsOnTheSimulatedDevice) {
  uint64_t accepted = 0, drafted = 0, breaks = 0;
  for (uint32_t seed = 1; seed <= 12; ++seed) {
    const std::vector<Job> work = jobs(seed);
    SchedulerOptions plain;
    plain.max_batch = 6;
    const Ran want = run_jobs(work, plain, 256);
    SchedulerOptions spec = plain;
    spec.overlap = seed % 2 == 0;
    spec.spec_tokens = 1 + static_cast<int32_t>(seed % 5);
    spec.spec_ngram_min = 1 + static_cast<int32_t>(seed % 2);
    spec.spec_ngram_max = spec.spec_ngram_min + 2;
    spec.max_step_tokens = seed % 3 == 0 ? 12 : 512;  // a tight budget trims drafts
    // Small pools: drafts are dropped rather than preempting, and requests preempt.
    const Ran got = run_jobs(work, spec, seed % 4 == 0 ? 12 : 256);
    for (size_t i = 0; i < work.size(); ++i)
      EXPECT_EQ(outcome(*got.sinks[i]), outcome(*want.sinks[i])) << "seed " << seed << " job " << i;
    EXPECT_EQ(got.metrics.completion_tokens, want.metrics.completion_tokens);
    accepted += got.metrics.spec_accepted_tokens;
    drafted += got.metrics.spec_draft_tokens;
    breaks += got.metrics.chain_breaks[static_cast<int>(ChainBreak::kSpeculation)];
  }
  EXPECT_GT(accepted, 0u);
  EXPECT_GT(drafted, accepted);
  EXPECT_GT(breaks, 0u);  // overlap on: steps that could draft were not chained
  std::cout << "  simulated: " << accepted << " of " << drafted << " drafts accepted, " << breaks
            << " chains broken for them\n";
}

// "aaa" and max_tokens alone on `executor` with 4 drafts at most: its text, finish and the
// scheduler's counters.
struct Alone {
  std::string text;
  std::optional<FinishReason> reason;
  SchedulerMetrics metrics;
};
Alone run_alone(std::unique_ptr<StepExecutor> executor, int32_t max_tokens) {
  ByteTokenizer tokenizer;
  Device device(std::move(executor));
  SchedulerOptions options;
  options.spec_tokens = 4;
  Scheduler scheduler(device, tokenizer, options);
  auto sink = std::make_shared<RecordingSink>();
  GenerationRequest r;
  r.prompt = {'a', 'a', 'a'};
  r.max_tokens = max_tokens;
  r.sink = sink;
  EXPECT_TRUE(scheduler.submit(std::move(r)).accepted());
  for (int i = 0; i < 1000 && !scheduler.drained(); ++i) scheduler.run_once();
  return {sink->text(), sink->reason(), scheduler.metrics()};
}

TEST(Speculation, EveryAcceptedDraftSavesAStep) {
  SimulatedDeviceConfig config = letters_device(64);
  config.alphabet = {'a'};  // every draft of a's matches
  const Alone got = run_alone(std::make_unique<SimulatedExecutor>(config), 40);
  EXPECT_EQ(got.text, std::string(40, 'a'));
  EXPECT_EQ(got.reason, FinishReason::kLength);
  const SchedulerMetrics& m = got.metrics;
  // The prompt's step samples the first token; then 7 steps of 4 drafts and a token each,
  // and one of the 3 drafts max_tokens leaves room for and a token: 40 tokens in 9 steps.
  EXPECT_EQ(m.steps, 9u);
  EXPECT_EQ(m.spec_verify_rows, 8u);
  EXPECT_EQ(m.spec_draft_tokens, 31u);
  EXPECT_EQ(m.spec_accepted_tokens, 31u);
  EXPECT_EQ(m.completion_tokens, 40u);
}

// A sampled output over 26 letters repeats single letters all the time but never what
// followed them: drafts are found nearly every step and nearly always refused. The pace
// (DraftPace) keeps what they cost to a few rows.
TEST(Speculation, DraftsThatKeepFailingAreProposedLessAndLess) {
  const auto run = [](int32_t spec_tokens) {
    ByteTokenizer tokenizer;
    Device device(std::make_unique<SimulatedExecutor>(letters_device(256)));  // 26 letters
    SchedulerOptions options;
    options.spec_tokens = spec_tokens;
    options.spec_ngram_min = 1;
    options.spec_ngram_max = 2;
    Scheduler scheduler(device, tokenizer, options);
    auto sink = std::make_shared<RecordingSink>();
    GenerationRequest r;
    r.prompt = {'a', 'b', 'c', 'a', 'b', 'c', 'a', 'b', 'c'};
    r.sampling.seed = 5;
    r.max_tokens = 200;
    r.sink = sink;
    EXPECT_TRUE(scheduler.submit(std::move(r)).accepted());
    for (int i = 0; i < 10000 && !scheduler.drained(); ++i) scheduler.run_once();
    return std::make_pair(sink->text(), scheduler.metrics());
  };
  const auto [plain, unused] = run(0);
  const auto [text, m] = run(8);
  EXPECT_EQ(text, plain);
  EXPECT_EQ(text.size(), 200u);
  EXPECT_GT(m.spec_verify_rows, 0u);
  EXPECT_LT(m.spec_draft_tokens, 40u);  // 8 a step would have cost about 1600
  // While its pace waits, the request drafts nothing, so its steps are chained.
  EXPECT_GT(m.chained_steps, 100u);
  std::cout << "  " << m.spec_draft_tokens << " draft tokens in " << m.spec_verify_rows
            << " verify rows, " << m.spec_accepted_tokens << " accepted, over 200 tokens\n";
}

// Text that repeats nothing finds no drafts: its lookups wait longer each time they find
// nothing, and its steps are chained meanwhile (QA AA2: a chain broken at every step for a
// lookup cost the demo shape 9-17%).
TEST(Speculation, LookupsThatFindNothingLetTheChainGoOn) {
  ByteTokenizer tokenizer;
  Device device(std::make_unique<SimulatedExecutor>(letters_device(256)));  // 26 letters
  SchedulerOptions options;
  options.spec_tokens = 4;
  options.spec_ngram_min = 4;  // four letters again in 200: rare
  options.spec_ngram_max = 4;
  Scheduler scheduler(device, tokenizer, options);
  auto sink = std::make_shared<RecordingSink>();
  GenerationRequest r;
  r.prompt = {'q', 'r', 's', 't'};
  r.sampling.seed = 9;
  r.max_tokens = 200;
  r.sink = sink;
  ASSERT_TRUE(scheduler.submit(std::move(r)).accepted());
  for (int i = 0; i < 10000 && !scheduler.drained(); ++i) scheduler.run_once();
  const SchedulerMetrics m = scheduler.metrics();
  EXPECT_EQ(sink->text().size(), 200u);
  EXPECT_LT(m.spec_verify_rows, 5u);
  EXPECT_GT(m.chained_steps, 120u);  // of 200
}

TEST(Speculation, NothingIsDraftedWhereTheBatchIsLargerThanSpecMaxBatch) {
  const std::vector<Job> work = jobs(3);
  SchedulerOptions options;
  options.spec_tokens = 4;
  options.spec_max_batch = 0;
  const Ran got = run_jobs(work, options, 256);
  EXPECT_EQ(got.metrics.spec_verify_rows, 0u);
  EXPECT_EQ(got.metrics.spec_draft_tokens, 0u);
  EXPECT_EQ(got.metrics.chain_breaks[static_cast<int>(ChainBreak::kSpeculation)], 0u);
  EXPECT_GT(got.metrics.chained_steps, 0u);  // the chain goes on as without speculation
}

TEST(Speculation, AnExecutorThatCannotVerifyGetsNoDrafts) {
  // Every token 'a': drafts would be found at once, and all of them match.
  const Alone got =
      run_alone(std::make_unique<ScriptedExecutor>([](uint64_t, int32_t) { return int32_t{'a'}; },
                                                   fake_device_info()),
                20);
  EXPECT_EQ(got.text, std::string(20, 'a'));
  EXPECT_EQ(got.metrics.spec_verify_rows, 0u);
  EXPECT_EQ(got.metrics.steps, 20u);
}

TEST(Speculation, SchedulerRefusesBadSettings) {
  ByteTokenizer tokenizer;
  Device device(std::make_unique<SimulatedExecutor>(two_letters(64)));
  const auto refused = [&](SchedulerOptions o) {
    EXPECT_THROW(Scheduler(device, tokenizer, o), std::invalid_argument);
  };
  SchedulerOptions o;
  o.spec_tokens = -1;
  refused(o);
  o = {};
  o.spec_ngram_min = 0;
  refused(o);
  o = {};
  o.spec_ngram_min = 3;
  o.spec_ngram_max = 2;
  refused(o);
}

TEST(Speculation, AVerifyStepCannotBeChainedFrom) {
  Device device(std::make_unique<SimulatedExecutor>(two_letters(64)));
  StepPlan plan;
  StepRow row;
  row.request_id = 1;
  row.tokens = {'a', 'b'};
  row.verify = true;
  row.kv_blocks = {0};
  plan.rows.push_back(row);
  PendingStep step = device.launch(std::move(plan));
  EXPECT_THROW(device.launch_chained(step), std::logic_error);
  const StepResult result = device.finalize(step);
  ASSERT_EQ(result.accepted.size(), 1u);
  EXPECT_LE(result.accepted[0], 1);
}

}  // namespace
}  // namespace tandem::testing::TANDEM_UNITY_ID
