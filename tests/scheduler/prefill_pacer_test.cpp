// Fair scheduling under long prompts (issue 15): the pacer's arithmetic on given step
// times, and the scheduler cutting a long prompt into small chunks while other requests
// decode (auto) where a fixed chunk would stall them, with the same texts either way.
#include "scheduler/prefill_pacer.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <iostream>
#include <mutex>
#include <thread>

#include "scheduler/scheduler.h"
#include "tests/scheduler/scheduler_test_support.h"

namespace tandem::TANDEM_UNITY_ID {
namespace {

using testing::ByteTokenizer;
using testing::fake_device_info;
using testing::RecordingSink;

TEST(PrefillPacer, TakesTheWholeStepUntilItHasMeasuredBothCosts) {
  PrefillPacer pacer(512, 0, true);
  EXPECT_EQ(pacer.prompt_budget(0), 512);
  EXPECT_EQ(pacer.prompt_budget(8), 512);
  pacer.record(0.010, 8, 0);  // a decode step: T_decode known, t_token not yet
  EXPECT_EQ(pacer.prompt_budget(8), 512);
}

TEST(PrefillPacer, KeepsAMixedStepWithinAboutTwoDecodeSteps) {
  PrefillPacer pacer(512, 0, true);
  pacer.record(0.010, 8, 0);            // T_decode = 10 ms
  pacer.record(0.010 + 0.0032, 8, 64);  // 64 prompt tokens beside 8 rows: t_token = 50 us
  EXPECT_DOUBLE_EQ(pacer.decode_step_seconds(), 0.010);
  EXPECT_NEAR(pacer.prompt_token_seconds(), 50e-6, 1e-12);
  // 0.8 * 10 ms / 50 us = 160 tokens: the mixed step takes about 1.8 decode steps.
  EXPECT_EQ(pacer.prompt_budget(8), 160);
  EXPECT_EQ(pacer.prompt_budget(0), 512);  // nobody decodes: nobody waits
}

TEST(PrefillPacer, ClampsToAFloorAndTheStepBudgetAndIgnoresNonsense) {
  PrefillPacer slow(512, 0, true);
  slow.record(0.001, 4, 0);
  slow.record(0.101, 0, 100);  // 1 ms a token: 0.8 tokens fit, but a prompt must move on
  EXPECT_EQ(slow.prompt_budget(4), PrefillPacer::kMinChunk);
  PrefillPacer fast(512, 0, true);
  fast.record(0.001, 4, 0);
  fast.record(0.001 + 0.000512, 0, 512);  // 1 us a token beyond the step's cost: 800 fit
  EXPECT_EQ(fast.prompt_budget(4), 512);
  const double before = fast.prompt_token_seconds();
  fast.record(std::nan(""), 0, 10);
  fast.record(-1, 4, 0);
  fast.record(0, 0, 10);
  fast.record(0.0005, 4, 10);  // faster than a decode step alone: says nothing of t_token
  EXPECT_EQ(fast.prompt_token_seconds(), before);
  EXPECT_EQ(fast.decode_step_seconds(), 0.001);
}

TEST(PrefillPacer, AShortPromptsStepDoesNotMakeItsTokensLookDear) {
  PrefillPacer pacer(512, 0, true);
  pacer.record(0.010, 4, 0);           // T_decode = 10 ms: what every step pays
  pacer.record(0.010 + 0.0005, 0, 5);  // a 5-token prompt alone: 100 us a token, not 2.1 ms
  EXPECT_NEAR(pacer.prompt_token_seconds(), 100e-6, 1e-12);
  EXPECT_NEAR(pacer.prompt_budget(4), 80, 1);  // 0.8 * 10 ms / 100 us, floored
}

TEST(PrefillPacer, EachRequestWaitingForItsFirstTokenAddsAShare) {
  PrefillPacer pacer(512, 0, true);
  pacer.record(0.010, 8, 0);                  // T_decode = 10 ms
  pacer.record(0.010 + 0.0032, 8, 64);        // t_token = 50 us
  EXPECT_EQ(pacer.prompt_budget(8, 1), 160);  // 0.8 * 10 ms / 50 us
  EXPECT_EQ(pacer.prompt_budget(8, 0), 160);  // at least one share
  EXPECT_EQ(pacer.prompt_budget(8, 2), 320);
  EXPECT_EQ(pacer.prompt_budget(1, 3), 480);  // the share counts the prompts, not the rows
  EXPECT_EQ(pacer.prompt_budget(8, 4), 512);  // the step budget still caps it
  EXPECT_EQ(pacer.prompt_budget(0, 4), 512);
  PrefillPacer fixed(512, 96, true);
  fixed.record(0.010, 8, 0);
  fixed.record(0.020, 8, 64);
  EXPECT_EQ(fixed.prompt_budget(8, 4), 96);  // a fixed chunk stays fixed
}

TEST(PrefillPacer, AFixedChunkIsKeptWhileRequestsDecode) {
  PrefillPacer pacer(512, 96, true);
  pacer.record(0.010, 8, 0);
  pacer.record(0.020, 8, 64);
  EXPECT_EQ(pacer.prompt_budget(8), 96);
  EXPECT_EQ(pacer.prompt_budget(0), 512);
  EXPECT_EQ(PrefillPacer(64, 96, true).prompt_budget(8), 64);
}

TEST(PrefillPacer, UnpacedItGivesTheWholeStepWhateverItMeasured) {
  PrefillPacer pacer(512, 0, false);
  pacer.record(0.010, 8, 0);
  pacer.record(0.020, 8, 64);
  EXPECT_EQ(pacer.prompt_budget(8), 512);
}

// A model whose step takes base + per_token * (tokens fed) of wall time, as a real step's
// cost grows with its tokens; it records what each step carried of the long request.
class TimedExecutor : public StepExecutor {
 public:
  struct Shape {
    int32_t other_rows = 0;   // rows of the other requests
    int32_t long_prompt = 0;  // prompt tokens of the long request
  };
  // Requests long_id .. long_id + n_long - 1 are the long prompts.
  TimedExecutor(uint64_t long_id, int32_t n_long, int32_t long_len)
      : long_id_(long_id), n_long_(n_long), long_len_(long_len) {}
  DeviceInfo info() const override { return fake_device_info(2048, 512); }
  void execute(const StepPlan& plan, std::span<int32_t> tokens) override {
    Shape shape;
    int64_t fed = 0;
    for (size_t i = 0; i < plan.rows.size(); ++i) {
      const StepRow& row = plan.rows[i];
      fed += static_cast<int64_t>(row.tokens.size());
      const bool is_long = row.request_id >= long_id_ && row.request_id < long_id_ + n_long_;
      if (is_long && row.position < long_len_)
        shape.long_prompt += static_cast<int32_t>(row.tokens.size());
      else if (!is_long)
        ++shape.other_rows;
      if (row.sample) tokens[i] = 'x';
    }
    std::this_thread::sleep_for(std::chrono::microseconds(3000 + 30 * fed));
    std::lock_guard lock(mutex_);
    shapes_.push_back(shape);
  }
  std::vector<Shape> shapes() const {
    std::lock_guard lock(mutex_);
    return shapes_;
  }

 private:
  uint64_t long_id_;
  int32_t n_long_;
  int32_t long_len_;
  mutable std::mutex mutex_;
  std::vector<Shape> shapes_;
};

struct LongPromptRun {
  std::vector<TimedExecutor::Shape> shapes;
  std::vector<std::string> texts;
  int32_t chunk_metric = 0;  // SchedulerMetrics::prefill_chunk_tokens at the end
};

// Four streams start decoding; then n_long 1200-token prompts arrive (requests 5, 6, ...).
LongPromptRun run_long_prompt(bool paced, int32_t prefill_chunk, int32_t n_long = 1,
                              int32_t max_batch = 64) {
  constexpr int32_t kLong = 1200;
  ByteTokenizer tokenizer;
  auto executor = std::make_unique<TimedExecutor>(5, n_long, kLong);
  TimedExecutor* timed = executor.get();
  Device device(std::move(executor));
  SchedulerOptions options;
  options.paced_prefill = paced;
  options.prefill_chunk = prefill_chunk;
  options.max_batch = max_batch;
  Scheduler scheduler(device, tokenizer, options);
  std::vector<std::shared_ptr<RecordingSink>> sinks;
  auto submit = [&](int32_t prompt, int32_t max_tokens, char fill) {
    auto sink = std::make_shared<RecordingSink>();
    GenerationRequest r;
    r.prompt.assign(prompt, fill);  // distinct long prompts share no cached prefix
    r.max_tokens = max_tokens;
    r.sink = sink;
    EXPECT_TRUE(scheduler.submit(std::move(r)).accepted());
    sinks.push_back(sink);
  };
  for (int i = 0; i < 4; ++i) submit(4, 80, 'p');
  for (int i = 0; i < 4; ++i) scheduler.run_once();  // prefilled, decoding
  for (int i = 0; i < n_long; ++i) submit(kLong, 2, static_cast<char>('a' + i));
  for (int i = 0; i < 100000 && !scheduler.drained(); ++i) scheduler.run_once();
  EXPECT_TRUE(scheduler.drained());
  LongPromptRun out{timed->shapes(), {}, scheduler.metrics().prefill_chunk_tokens};
  for (auto& s : sinks) out.texts.push_back(s->text());
  return out;
}

// The most prompt tokens of the long requests that one step carried beside other rows, and
// how many steps carried any.
int32_t largest_mixed(const LongPromptRun& run, int& chunks) {
  int32_t largest = 0;
  chunks = 0;
  for (const TimedExecutor::Shape& s : run.shapes) {
    chunks += s.long_prompt > 0;
    if (s.long_prompt > 0 && s.other_rows > 0) largest = std::max(largest, s.long_prompt);
  }
  return largest;
}

TEST(FairPrefill, ALongPromptMovesInSmallChunksWhileOthersDecodeAndTheTextsDoNotChange) {
  const LongPromptRun paced = run_long_prompt(true, 0);
  const LongPromptRun fixed = run_long_prompt(false, 512);
  EXPECT_EQ(paced.texts, fixed.texts);
  int paced_chunks = 0, fixed_chunks = 0;
  // Fixed: the streams wait for a 508-token chunk (the step's 512 less their 4 rows; 3 +
  // 30 * 512 us = 18 ms, about six decode steps). Paced: 0.8 * 3.1 ms / 30 us = 83 tokens
  // once measured (the bound leaves room for timing noise).
  EXPECT_EQ(largest_mixed(fixed, fixed_chunks), 508);
  const int32_t paced_largest = largest_mixed(paced, paced_chunks);
  EXPECT_LE(paced_largest, 256);
  std::cout << "  long prompt: paced " << paced_chunks << " chunks (largest beside decode rows "
            << paced_largest << "), fixed " << fixed_chunks << "\n";
  EXPECT_GE(paced_chunks, 1200 / 256);
  EXPECT_LT(fixed_chunks, paced_chunks);
  EXPECT_EQ(fixed.chunk_metric, 512);  // /metrics' tandem_prefill_chunk_tokens
  EXPECT_GE(paced.chunk_metric, PrefillPacer::kMinChunk);
  EXPECT_LE(paced.chunk_metric, 256);
}

// Eight long prompts arriving together are eight requests waiting for their first token:
// each adds a share, so their chunks beside the streams grow to the step's budget (0.8 * 8
// * 3.1 ms / 30 us = 660 tokens, capped at 508) against a lone prompt's 83, where one share
// fed the whole burst one small chunk at a time. (The bound leaves room for timing noise
// and for t_token's average, which starts from the short prompts' dear tokens.)
TEST(FairPrefill, ABurstOfPromptsTakesAShareForEachWaitingRequest) {
  const LongPromptRun lone = run_long_prompt(true, 0);
  const LongPromptRun burst = run_long_prompt(true, 0, 8);
  const LongPromptRun fixed = run_long_prompt(false, 512, 8);
  EXPECT_EQ(burst.texts, fixed.texts);
  int lone_chunks = 0, burst_chunks = 0;
  const int32_t lone_largest = largest_mixed(lone, lone_chunks);
  const int32_t burst_largest = largest_mixed(burst, burst_chunks);
  std::cout << "  largest chunk beside decode rows: lone prompt " << lone_largest
            << ", burst of eight " << burst_largest << "\n";
  EXPECT_GE(lone_largest, PrefillPacer::kMinChunk);
  EXPECT_GE(burst_largest, 3 * lone_largest);
}

// Requests queued for admission wait for their first token too: with room for one prompt
// beside the four streams (--max-batch 5), the burst's other seven wait in the queue, and
// the prompt being prefilled still takes their shares.
TEST(FairPrefill, QueuedRequestsCountAmongThoseWaiting) {
  const LongPromptRun lone = run_long_prompt(true, 0, 1, 5);
  const LongPromptRun queued = run_long_prompt(true, 0, 8, 5);
  int lone_chunks = 0, queued_chunks = 0;
  const int32_t lone_largest = largest_mixed(lone, lone_chunks);
  const int32_t queued_largest = largest_mixed(queued, queued_chunks);
  std::cout << "  largest chunk beside decode rows, one prompt admitted at a time: lone "
            << lone_largest << ", seven more queued " << queued_largest << "\n";
  EXPECT_GE(lone_largest, PrefillPacer::kMinChunk);
  EXPECT_GE(queued_largest, 3 * lone_largest);
}

}  // namespace
}  // namespace tandem::TANDEM_UNITY_ID
