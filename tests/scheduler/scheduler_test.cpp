// The scheduler's rules, one at a time, on a scripted device driven turn by turn.
#include "scheduler/scheduler.h"

#include <memory>
#include <optional>
#include <stdexcept>
#include <thread>

#include <gtest/gtest.h>

#include "tests/scheduler/scheduler_test_support.h"

namespace tandem::TANDEM_UNITY_ID {
namespace {

using testing::ByteTokenizer;
using testing::FailingExecutor;
using testing::fake_device_info;
using testing::kFakeEos;
using testing::RecordingSink;
using testing::ScriptedExecutor;

// Every token is 'x', except EOS at the positions a test names.
struct Harness {
  explicit Harness(SchedulerOptions options = {}, ScriptedExecutor::Script script = nullptr,
                   DeviceInfo info = fake_device_info())
      : device(std::make_unique<ScriptedExecutor>(
            script ? script : [](uint64_t, int32_t) { return int32_t{'x'}; }, info)) {
    device.set_event_observer([this](const DeviceEvent& e) { events.push_back(e); });
    scheduler = std::make_unique<Scheduler>(device, tokenizer, std::move(options));
  }
  std::shared_ptr<RecordingSink> submit(int prompt_len, std::optional<int32_t> max_tokens,
                                        std::vector<std::string> stop = {}) {
    auto sink = std::make_shared<RecordingSink>();
    GenerationRequest r;
    r.prompt.assign(prompt_len, 'p');
    r.max_tokens = max_tokens;
    r.stop = std::move(stop);
    r.sink = sink;
    EXPECT_TRUE(scheduler->submit(std::move(r)).accepted());
    return sink;
  }
  void run_turns(int n) {
    for (int i = 0; i < n; ++i) scheduler->run_once();
  }
  void drain() {
    for (int i = 0; i < 10000 && !scheduler->drained(); ++i) scheduler->run_once();
    ASSERT_TRUE(scheduler->drained());
  }
  uint64_t breaks(ChainBreak reason) const {
    return scheduler->metrics().chain_breaks[static_cast<int>(reason)];
  }

  ByteTokenizer tokenizer;
  Device device;
  std::vector<DeviceEvent> events;
  std::unique_ptr<Scheduler> scheduler;
};

uint64_t total_breaks(const SchedulerMetrics& m) {
  uint64_t n = 0;
  for (uint64_t b : m.chain_breaks) n += b;
  return n;
}

TEST(Scheduler, ASingleRequestStreamsItsTokensAndFinishesOnLength) {
  Harness h;
  auto sink = h.submit(5, 10);
  h.drain();
  EXPECT_EQ(sink->text(), std::string(10, 'x'));
  EXPECT_EQ(sink->reason(), FinishReason::kLength);
  EXPECT_EQ(sink->usage().prompt_tokens, 5);
  EXPECT_EQ(sink->usage().completion_tokens, 10);
  const SchedulerMetrics m = h.scheduler->metrics();
  // Prefill (samples token 1), a fresh decode step, then chained steps up to token 10.
  EXPECT_EQ(m.steps, 10u);
  EXPECT_EQ(m.chained_steps, 8u);
  EXPECT_EQ(h.breaks(ChainBreak::kPrefill), 1u);
  EXPECT_EQ(h.breaks(ChainBreak::kFinish), 1u);  // the step that samples token 10
  EXPECT_EQ(m.discarded_tokens, 0u);  // max_tokens is foreseen: nothing was sampled past it
  EXPECT_EQ(m.kv_blocks_used, 0);
}

// /metrics read during a request's first step (a long prefill takes seconds) shows it
// running and its blocks taken; the gauges used to be set only after a step, so they read
// 0 through it. The script runs on the device worker while the step executes.
TEST(Scheduler, TheGaugesShowAStepsRequestsWhileItRuns) {
  std::optional<SchedulerMetrics> seen;
  Harness* harness = nullptr;
  Harness h({}, [&](uint64_t, int32_t) {
    if (!seen) seen = harness->scheduler->metrics();
    return int32_t{'x'};
  });
  harness = &h;
  h.submit(40, 3);
  h.drain();
  ASSERT_TRUE(seen.has_value());
  EXPECT_EQ(seen->running, 1);
  EXPECT_EQ(seen->waiting, 0);
  EXPECT_EQ(seen->kv_blocks_used, 3);  // 40 prompt positions in 16-token blocks
}

TEST(Scheduler, ChainedStepsAreLaunchedBeforeThePreviousStepIsFinalized) {
  Harness h;
  h.submit(3, 20);
  h.drain();
  int overlapped = 0;
  for (size_t i = 0; i < h.events.size(); ++i) {
    const DeviceEvent& e = h.events[i];
    if (e.kind != DeviceEvent::Kind::kLaunch || !e.chained) continue;
    // The step this one chains from (sequence - 1) must not be finalized yet.
    bool prev_finalized = false;
    for (size_t j = 0; j < i; ++j) {
      prev_finalized |= h.events[j].kind == DeviceEvent::Kind::kFinalize &&
                        h.events[j].sequence == e.sequence - 1;
    }
    EXPECT_FALSE(prev_finalized) << "chained step " << e.sequence;
    ++overlapped;
  }
  EXPECT_GE(overlapped, 17);
}

TEST(Scheduler, OverlapOffNeverHasTwoStepsInFlight) {
  SchedulerOptions options;
  options.overlap = false;
  Harness h(options);
  h.submit(3, 20);
  h.drain();
  int in_flight = 0;
  for (const DeviceEvent& e : h.events) {
    in_flight += e.kind == DeviceEvent::Kind::kLaunch ? 1 : -1;
    EXPECT_LE(in_flight, 1);
    EXPECT_FALSE(e.chained);
  }
  EXPECT_EQ(h.scheduler->metrics().chained_steps, 0u);
  EXPECT_EQ(total_breaks(h.scheduler->metrics()), 0u);
}

TEST(Scheduler, AnEosFoundWhileProcessingBreaksTheChainAndItsNextTokenIsDiscarded) {
  // Request 1 emits EOS as its 6th token (position 4 + 5 = 9); request 2 runs on.
  Harness h({},
            [](uint64_t id, int32_t pos) { return id == 1 && pos == 9 ? kFakeEos : int32_t{'x'}; });
  auto a = h.submit(4, 30);
  auto b = h.submit(4, 12);
  h.drain();
  EXPECT_EQ(a->reason(), FinishReason::kStop);
  EXPECT_EQ(a->text(), "xxxxx");
  EXPECT_EQ(a->usage().completion_tokens, 6);  // EOS counts, its text is empty
  EXPECT_EQ(b->text(), std::string(12, 'x'));
  const SchedulerMetrics m = h.scheduler->metrics();
  EXPECT_EQ(m.discarded_tokens, 1u);
  EXPECT_EQ(h.breaks(ChainBreak::kFinish), 2u);  // the EOS, then b's last token
  EXPECT_EQ(m.steps, m.chained_steps + total_breaks(m));
  EXPECT_EQ(m.kv_blocks_used, 0);
}

TEST(Scheduler, AStopStringFinishesTheRequestWithoutEmittingIt) {
  Harness h({}, [](uint64_t, int32_t pos) { return int32_t{pos % 3 == 0 ? 'S' : 'a'}; });
  auto sink = h.submit(2, 40, {"aS"});
  h.drain();
  EXPECT_EQ(sink->reason(), FinishReason::kStop);
  EXPECT_EQ(sink->text(), "");  // positions 2 'a'... "a" then "S": stopped at once
  EXPECT_EQ(sink->usage().completion_tokens, 2);
  EXPECT_EQ(h.scheduler->metrics().discarded_tokens, 1u);
}

TEST(Scheduler, AnAdmissionBreaksTheChainAsABatchChange) {
  Harness h;
  h.submit(4, 40);
  h.run_turns(6);  // steady chained decode
  const uint64_t before = h.breaks(ChainBreak::kBatchChange);
  h.submit(4, 5);
  h.run_turns(1);
  EXPECT_EQ(h.breaks(ChainBreak::kBatchChange), before + 1);
  h.drain();
  EXPECT_EQ(h.breaks(ChainBreak::kBatchChange), 1u);
}

TEST(Scheduler, ARequestWaitingForKvBlocksDoesNotBreakTheChain) {
  // Request 1's prompt takes all 4 blocks (50 positions, room for 14 more); request 2
  // cannot be admitted until it finishes, so it is no reason to stop chaining.
  Harness h({}, nullptr, fake_device_info(/*context=*/256, /*kv_blocks=*/4));
  auto a = h.submit(50, 14);
  h.run_turns(3);
  auto b = h.submit(4, 4);
  h.drain();
  EXPECT_EQ(a->text(), std::string(14, 'x'));
  EXPECT_EQ(b->text(), "xxxx");
  EXPECT_EQ(h.breaks(ChainBreak::kBatchChange), 0u);
  EXPECT_GE(h.scheduler->metrics().chained_steps, 12u);
}

TEST(Scheduler, ChunkedPrefillBreaksTheChainForEachChunkBesideDecodeRows) {
  SchedulerOptions options;
  options.max_step_tokens = 5;  // one decode row + 4 prompt tokens per step
  Harness h(options);
  auto a = h.submit(3, 40);
  h.run_turns(6);
  const uint64_t before = h.breaks(ChainBreak::kPrefill);
  auto b = h.submit(12, 3);
  h.drain();
  EXPECT_EQ(h.breaks(ChainBreak::kPrefill), before + 3);  // 12 prompt tokens, 4 per step
  EXPECT_EQ(a->text(), std::string(40, 'x'));
  EXPECT_EQ(b->text(), "xxx");
  EXPECT_EQ(h.scheduler->metrics().prompt_tokens, 15u);
}

TEST(Scheduler, ACancelDuringChainedDecodeBreaksTheChainAndDiscardsBothTokensInFlight) {
  Harness h;
  auto a = h.submit(4, 40);
  auto b = h.submit(4, 40);
  h.run_turns(6);
  const std::string streamed = b->text();
  h.scheduler->cancel(2);  // curr is finalized but unprocessed, next is in flight
  h.run_turns(1);
  EXPECT_EQ(b->reason(), FinishReason::kCancelled);
  EXPECT_EQ(b->text(), streamed);
  EXPECT_EQ(b->usage().completion_tokens, static_cast<int32_t>(streamed.size()));
  // b's blocks (as many as a's: they run in step) stay taken while the chained step that
  // may still write them is in flight, and come back once it is finalized.
  const int32_t held = h.scheduler->metrics().kv_blocks_used;
  EXPECT_GT(held, 0);
  EXPECT_EQ(held % 2, 0);
  h.run_turns(1);
  EXPECT_EQ(h.scheduler->metrics().kv_blocks_used, held / 2);
  h.drain();
  EXPECT_EQ(h.breaks(ChainBreak::kCancel), 1u);
  EXPECT_EQ(h.scheduler->metrics().discarded_tokens, 2u);
  EXPECT_EQ(a->text(), std::string(40, 'x'));
  EXPECT_EQ(b->events_after_end(), 0);
  EXPECT_EQ(h.scheduler->metrics().kv_blocks_used, 0);
}

TEST(Scheduler, ACancelReachesARequestWhereverItIs) {
  SchedulerOptions options;
  options.max_batch = 1;
  options.max_step_tokens = 4;
  Harness h(options);
  auto running = h.submit(4, 30);
  auto prefilling = h.submit(12, 4);
  auto waiting = h.submit(4, 4);
  h.run_turns(3);
  h.scheduler->cancel(3);  // still waiting: max_batch is 1
  h.run_turns(1);
  EXPECT_EQ(waiting->reason(), FinishReason::kCancelled);
  EXPECT_EQ(waiting->usage().completion_tokens, 0);
  h.scheduler->cancel(1);
  h.run_turns(3);  // request 2 is admitted and part-way through its 12-token prompt
  EXPECT_EQ(running->reason(), FinishReason::kCancelled);
  EXPECT_FALSE(prefilling->ended());
  h.scheduler->cancel(2);
  h.scheduler->cancel(2);  // twice, and an unknown id: ignored
  h.scheduler->cancel(99);
  h.drain();
  EXPECT_EQ(prefilling->reason(), FinishReason::kCancelled);
  EXPECT_EQ(prefilling->usage().completion_tokens, 0);
  EXPECT_EQ(h.scheduler->metrics().kv_blocks_used, 0);
  EXPECT_EQ(h.scheduler->metrics().requests_finished, 3u);
}

TEST(Scheduler, AFullQueueRefusesAndAnImpossibleRequestIsInvalid) {
  SchedulerOptions options;
  options.max_queue = 2;
  Harness h(options, nullptr, fake_device_info(/*context=*/64, /*kv_blocks=*/4));
  h.submit(4, 4);
  h.submit(4, 4);
  GenerationRequest r;
  r.prompt = {'a'};
  r.max_tokens = 16;
  r.sink = std::make_shared<RecordingSink>();
  EXPECT_EQ(h.scheduler->submit(r).refusal, ErrorKind::kOverloaded);
  h.run_turns(1);  // both admitted: the queue has room again
  EXPECT_TRUE(h.scheduler->submit(r).accepted());

  GenerationRequest too_long = r;
  too_long.prompt.assign(64, 'a');
  EXPECT_EQ(h.scheduler->submit(too_long).refusal, ErrorKind::kInvalidRequest);
  GenerationRequest empty = r;
  empty.prompt.clear();
  EXPECT_EQ(h.scheduler->submit(empty).refusal, ErrorKind::kInvalidRequest);
  GenerationRequest bad_token = r;
  bad_token.prompt = {999};
  EXPECT_EQ(h.scheduler->submit(bad_token).refusal, ErrorKind::kInvalidRequest);
  GenerationRequest negative = r;
  negative.max_tokens = -1;  // 0 is allowed: the prompt is only scored (echo)
  EXPECT_EQ(h.scheduler->submit(negative).refusal, ErrorKind::kInvalidRequest);
  h.drain();
}

TEST(Scheduler, AdmissionWaitsForThePromptsKvBlocks) {
  // 4 blocks of 16: each request's 20-token prompt takes 2 blocks, and its 12 more
  // positions fit them.
  Harness h({}, nullptr, fake_device_info(/*context=*/256, /*kv_blocks=*/4));
  std::vector<std::shared_ptr<RecordingSink>> sinks;
  for (int i = 0; i < 3; ++i) sinks.push_back(h.submit(20, 12));
  h.run_turns(1);
  SchedulerMetrics m = h.scheduler->metrics();
  EXPECT_EQ(m.running, 2);
  EXPECT_EQ(m.waiting, 1);
  EXPECT_EQ(m.kv_blocks_used, 4);
  h.drain();
  for (auto& s : sinks) EXPECT_EQ(s->text(), std::string(12, 'x'));
  EXPECT_EQ(h.scheduler->metrics().kv_blocks_used, 0);
  EXPECT_EQ(h.scheduler->metrics().kv_blocks_total, 4);
}

TEST(Scheduler, GenerationStopsAtTheContextLength) {
  Harness h({}, nullptr, fake_device_info(/*context=*/32));
  auto sink = h.submit(28, 100);
  h.drain();
  EXPECT_EQ(sink->reason(), FinishReason::kLength);
  EXPECT_EQ(sink->usage().completion_tokens, 4);
}

TEST(Scheduler, WithoutMaxTokensGenerationRunsToTheContext) {
  Harness h({}, nullptr, fake_device_info(/*context=*/32));
  auto sink = h.submit(28, std::nullopt);
  h.drain();
  EXPECT_EQ(sink->reason(), FinishReason::kLength);
  EXPECT_EQ(sink->usage().completion_tokens, 4);
}

TEST(Scheduler, AKvPoolSmallerThanTheContextLowersTheServedContext) {
  // 4 blocks of 16: 64 positions, fewer than the context's 256.
  Harness h({}, nullptr, fake_device_info(/*context=*/256, /*kv_blocks=*/4));
  EXPECT_EQ(h.scheduler->context_length(), 64);
  auto asked = h.submit(20, 100);
  h.drain();
  EXPECT_EQ(asked->reason(), FinishReason::kLength);
  EXPECT_EQ(asked->usage().completion_tokens, 44);
  auto unbounded = h.submit(20, std::nullopt);
  h.drain();
  EXPECT_EQ(unbounded->usage().completion_tokens, 44);
  GenerationRequest r;
  r.prompt.assign(64, 'p');  // fits the model's context, but leaves the pool no room
  r.sink = std::make_shared<RecordingSink>();
  const SubmitResult refused = h.scheduler->submit(r);
  EXPECT_EQ(refused.refusal, ErrorKind::kInvalidRequest);
  EXPECT_NE(refused.message.find("the prompt has 64 tokens; the model's context holds 64"),
            std::string::npos)
      << refused.message;
}

TEST(Scheduler, IgnoreEosKeepsGoingPastEos) {
  Harness h({}, [](uint64_t, int32_t pos) { return pos == 5 ? kFakeEos : int32_t{'y'}; });
  auto sink = std::make_shared<RecordingSink>();
  GenerationRequest r;
  r.prompt = {'a', 'b'};
  r.max_tokens = 6;
  r.sampling.ignore_eos = true;
  r.sink = sink;
  ASSERT_TRUE(h.scheduler->submit(r).accepted());
  h.drain();
  EXPECT_EQ(sink->reason(), FinishReason::kLength);
  EXPECT_EQ(sink->text(), "yyyyy");  // EOS's text is empty
  EXPECT_EQ(sink->usage().completion_tokens, 6);
}

// bench's and generate's GFLOP/s (roofline.h) rest on these counts: they once charged the
// output head to every prompt token, and reported up to 2.6x the machine's peak.
TEST(Scheduler, ItCountsTheRowsFedAndTheRowsThatReachTheOutputHead) {
  SchedulerOptions options;
  options.max_step_tokens = 16;  // the 40-token prompts go in chunks of 16, 16 and 8
  options.prefix_cache = false;  // the second prompt computes again
  Harness h(options);
  auto plain = h.submit(40, 5);
  h.drain();
  SchedulerMetrics m = h.scheduler->metrics();
  EXPECT_EQ(m.steps, 3u + 4u);
  EXPECT_EQ(m.rows_fed, 40u + 4u);  // the last token sampled is never fed
  EXPECT_EQ(m.logit_rows, 5u);      // the prompt's last row, then each decode row
  EXPECT_EQ(m.logit_steps, 1u + 4u);

  auto scored = std::make_shared<RecordingSink>();  // echo with logprobs: every prompt row
  GenerationRequest r;
  r.prompt.assign(40, 'p');
  r.max_tokens = 2;
  r.sampling.prompt_logprobs = 0;
  r.sink = scored;
  ASSERT_TRUE(h.scheduler->submit(std::move(r)).accepted());
  h.drain();
  const SchedulerMetrics before = m;
  m = h.scheduler->metrics();
  EXPECT_EQ(m.rows_fed - before.rows_fed, 40u + 1u);
  EXPECT_EQ(m.logit_rows - before.logit_rows, 40u + 1u);
  EXPECT_EQ(m.logit_steps - before.logit_steps, 3u + 1u);
  EXPECT_EQ(plain->text(), "xxxxx");
  EXPECT_EQ(scored->text(), "xx");
}

TEST(Scheduler, ADeviceFailureEndsTheRequestsInTheStepWithAnErrorAndFreesTheirBlocks) {
  ByteTokenizer tokenizer;
  Device device(std::make_unique<FailingExecutor>(4, "out of memory", 'z'));
  Scheduler scheduler(device, tokenizer);
  auto sink = std::make_shared<RecordingSink>();
  GenerationRequest r;
  r.prompt = {'a'};
  r.max_tokens = 50;
  r.sink = sink;
  ASSERT_TRUE(scheduler.submit(r).accepted());
  for (int i = 0; i < 100 && !scheduler.drained(); ++i) scheduler.run_once();
  ASSERT_TRUE(scheduler.drained());
  EXPECT_NE(sink->error().find("out of memory"), std::string::npos);
  EXPECT_EQ(sink->error_kind(), ErrorKind::kInternal);
  EXPECT_EQ(sink->events_after_end(), 0);
  EXPECT_EQ(scheduler.metrics().kv_blocks_used, 0);
}

TEST(Scheduler, OnItsOwnThreadItServesConcurrentSubmittersAndCancellers) {
  ByteTokenizer tokenizer;
  Device device(std::make_unique<ScriptedExecutor>(
      [](uint64_t id, int32_t pos) { return int32_t('a' + (id + pos) % 26); },
      fake_device_info(256, 256)));
  SchedulerOptions options;
  options.max_batch = 8;
  Scheduler scheduler(device, tokenizer, options);
  scheduler.start();
  constexpr int kThreads = 4, kPerThread = 8;
  std::vector<std::vector<std::shared_ptr<RecordingSink>>> sinks(kThreads);
  std::vector<std::thread> clients;
  for (int t = 0; t < kThreads; ++t) {
    clients.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        auto sink = std::make_shared<RecordingSink>();
        GenerationRequest r;
        r.prompt.assign(3 + i, 'p');
        r.max_tokens = 20;
        r.sink = sink;
        SubmitResult result = scheduler.submit(r);
        ASSERT_TRUE(result.accepted());
        if (i % 3 == 0) scheduler.cancel(result.id);
        sinks[t].push_back(sink);
      }
      for (auto& s : sinks[t]) s->wait();
    });
  }
  for (auto& c : clients) c.join();
  scheduler.stop();
  for (auto& per_thread : sinks) {
    for (auto& s : per_thread) {
      EXPECT_TRUE(s->reason() == FinishReason::kLength || s->reason() == FinishReason::kCancelled)
          << ::testing::PrintToString(s->reason());
      if (s->reason() == FinishReason::kLength) {
        EXPECT_EQ(s->usage().completion_tokens, 20);
      }
      EXPECT_EQ(s->events_after_end(), 0);
    }
  }
  const SchedulerMetrics m = scheduler.metrics();
  EXPECT_EQ(m.kv_blocks_used, 0);
  EXPECT_EQ(m.requests_finished, uint64_t{kThreads * kPerThread});
}

TEST(Scheduler, StoppingEndsLiveAndWaitingRequestsWithAnError) {
  SchedulerOptions options;
  options.max_batch = 1;
  Harness h(options);
  auto live = h.submit(4, 100);
  auto waiting = h.submit(4, 100);
  h.run_turns(4);
  h.scheduler->stop();
  EXPECT_FALSE(live->error().empty());
  EXPECT_FALSE(waiting->error().empty());
  EXPECT_EQ(live->error_kind(), ErrorKind::kShuttingDown);
  EXPECT_EQ(waiting->error_kind(), ErrorKind::kShuttingDown);
  EXPECT_EQ(h.scheduler->metrics().kv_blocks_used, 0);
  GenerationRequest r;
  r.prompt = {'a'};
  r.sink = std::make_shared<RecordingSink>();
  EXPECT_EQ(h.scheduler->submit(r).refusal, ErrorKind::kShuttingDown);
}

}  // namespace
}  // namespace tandem::TANDEM_UNITY_ID
