// The sliding-window layers' block group in the scheduler (scheduler_kv.cpp): local blocks
// are taken as a sequence grows, dropped as its window moves on, shared by n choices,
// found again through the prefix cache, and given back on finish, cancel and preemption.
// The simulated device checks that every local block a query can see holds this
// sequence's slot there (a block freed early and reused fails the step), and outputs must
// equal the run without the group.
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "runner/device/cpu_executor.h"
#include "runner/device/simulated_executor.h"
#include "scheduler/scheduler.h"
#include "tests/scheduler/scheduler_test_support.h"

namespace tandem::TANDEM_UNITY_ID {
namespace {

using testing::ByteTokenizer;
using testing::RecordingSink;

constexpr int32_t kWindow = 20;

SimulatedDeviceConfig device_config(int32_t kv_blocks, int32_t local_blocks) {
  SimulatedDeviceConfig c;
  c.vocab_size = 260;
  c.context_length = 512;
  c.kv_blocks = kv_blocks;
  c.eog_ids = {testing::kFakeEos};
  c.eos_probability = 0;
  for (int32_t t = 'a'; t <= 'z'; ++t) c.alphabet.push_back(t);
  c.kv_local_blocks = local_blocks;
  c.sliding_window = kWindow;
  return c;
}

struct Harness {
  Harness(SchedulerOptions options, SimulatedDeviceConfig config)
      : device(std::make_unique<SimulatedExecutor>(config)),
        scheduler(device, tokenizer, std::move(options)) {}
  static GenerationRequest request(const std::string& prompt, int32_t max_tokens, uint64_t seed,
                                   std::shared_ptr<RecordingSink> sink) {
    GenerationRequest r;
    r.prompt.assign(prompt.begin(), prompt.end());
    r.max_tokens = max_tokens;
    r.sampling.temperature = 1.0f;
    r.sampling.seed = seed;
    r.sink = std::move(sink);
    return r;
  }
  void drain() {
    for (int i = 0; i < 200000 && !scheduler.drained(); ++i) scheduler.run_once();
    ASSERT_TRUE(scheduler.drained());
  }

  ByteTokenizer tokenizer;
  Device device;
  Scheduler scheduler;
};

struct Planned {
  std::string prompt;
  int32_t max_tokens;
  int32_t n;  // choices, submitted as one list
};

// Prompts longer than the window, some sharing a prefix, one repeated (a prefix hit),
// one with three choices (a prompt share), long generations.
std::vector<Planned> workload() {
  const std::string a(45, 'a'), b(70, 'b');
  return {{a + "one", 90, 1}, {b + "two", 60, 1}, {a + "three", 75, 3},
          {a + "one", 80, 1}, {b + "x", 100, 1},  {std::string(23, 'c'), 120, 1},
          {b + "two", 50, 2}, {a + "one", 40, 1}};
}

std::vector<std::string> run(SchedulerOptions options, SimulatedDeviceConfig config,
                             SchedulerMetrics* metrics = nullptr) {
  Harness h(options, config);
  std::vector<std::shared_ptr<RecordingSink>> sinks;
  uint64_t seed = 1;
  for (const Planned& p : workload()) {
    std::vector<GenerationRequest> list;
    for (int32_t i = 0; i < p.n; ++i) {
      sinks.push_back(std::make_shared<RecordingSink>());
      list.push_back(Harness::request(p.prompt, p.max_tokens, seed++, sinks.back()));
    }
    EXPECT_TRUE(h.scheduler.submit(std::move(list)).accepted());
    for (int turns = 0; turns < 7; ++turns) h.scheduler.run_once();
  }
  h.drain();
  std::vector<std::string> texts;
  for (const auto& sink : sinks) {
    EXPECT_TRUE(sink->ended());
    EXPECT_EQ(sink->error(), "");
    EXPECT_EQ(sink->reason(), FinishReason::kLength);
    texts.push_back(sink->text());
  }
  const SchedulerMetrics m = h.scheduler.metrics();
  EXPECT_EQ(m.kv_blocks_used, 0);
  EXPECT_EQ(m.kv_local_blocks_used, 0);  // every local block came back exactly once
  if (metrics) *metrics = m;
  return texts;
}

TEST(SlidingWindowKv, OutputsEqualTheRunWithoutTheGroupWhateverTheSchedule) {
  SchedulerOptions plain;
  plain.overlap = false;
  plain.prefix_cache = false;
  const std::vector<std::string> expected = run(plain, device_config(256, 0));
  uint64_t hits = 0, preemptions = 0;
  for (bool overlap : {false, true})
    for (bool cache : {false, true})
      for (int32_t chunk : {7, 64})
        for (int32_t kv_blocks : {256, 24}) {  // 24 blocks preempt
          SchedulerOptions options;
          options.overlap = overlap;
          options.prefix_cache = cache;
          options.max_step_tokens = chunk;
          options.max_batch = 4;
          const int32_t local = std::min(
              options.max_batch * local_blocks_per_sequence(kWindow, chunk, 16), kv_blocks);
          SchedulerMetrics m;
          EXPECT_EQ(run(options, device_config(kv_blocks, local), &m), expected)
              << "overlap " << overlap << " cache " << cache << " chunk " << chunk << " blocks "
              << kv_blocks;
          hits += m.prefix_hit_tokens;
          preemptions += m.preemptions;
        }
  // The workload exercised what it claims to.
  EXPECT_GT(hits, 0u);
  EXPECT_GT(preemptions, 0u);
  std::cout << "  sliding-window group: " << hits << " prompt tokens from the cache, "
            << preemptions << " preemptions\n";
}

// One long sequence never holds more local blocks than its window and one chunk need,
// while its global blocks grow with it.
TEST(SlidingWindowKv, ASequenceHoldsOnlyItsWindowOfLocalBlocks) {
  for (bool overlap : {false, true}) {
    SchedulerOptions options;
    options.overlap = overlap;
    options.max_step_tokens = 16;
    Harness h(options, device_config(64, 40));
    auto sink = std::make_shared<RecordingSink>();
    ASSERT_TRUE(
        h.scheduler.submit(Harness::request(std::string(100, 'p'), 300, 7, sink)).accepted());
    const int32_t bound = (kWindow + 16 + 15) / 16 + 1;
    int32_t most_global = 0, most_local = 0;
    for (int i = 0; i < 100000 && !h.scheduler.drained(); ++i) {
      h.scheduler.run_once();
      const SchedulerMetrics m = h.scheduler.metrics();
      most_global = std::max(most_global, m.kv_blocks_used);
      most_local = std::max(most_local, m.kv_local_blocks_used);
      ASSERT_LE(m.kv_local_blocks_used, bound) << "turn " << i;
    }
    EXPECT_EQ(sink->error(), "");
    EXPECT_EQ(sink->usage().completion_tokens, 300);
    EXPECT_EQ(most_global, 25);  // 400 positions
    EXPECT_GE(most_local, 2);
    EXPECT_EQ(h.scheduler.metrics().kv_local_blocks_total, 40);
  }
}

// A local group far smaller than the batch needs (4 blocks for 4 sequences that may each
// want 4): prefill chunks wait for blocks, decode rows preempt, and every request still
// ends with the output a roomy device gives.
TEST(SlidingWindowKv, ALocalGroupSmallerThanTheBatchNeedsStillFinishesEveryRequest) {
  for (bool overlap : {false, true}) {
    SchedulerOptions options;
    options.overlap = overlap;
    options.max_step_tokens = 16;
    options.max_batch = 4;
    std::vector<std::string> texts[2];
    uint64_t preemptions = 0;
    for (int32_t local : {64, 4}) {
      Harness h(options, device_config(64, local));
      std::vector<std::shared_ptr<RecordingSink>> sinks;
      for (int i = 0; i < 4; ++i) {
        sinks.push_back(std::make_shared<RecordingSink>());
        const std::string prompt = std::string(40 + i, static_cast<char>('k' + i));
        ASSERT_TRUE(h.scheduler.submit(Harness::request(prompt, 30 + 5 * i, 3 + i, sinks.back()))
                        .accepted());
      }
      h.drain();
      for (const auto& sink : sinks) {
        EXPECT_EQ(sink->error(), "");
        texts[local == 4].push_back(sink->text());
      }
      EXPECT_EQ(h.scheduler.metrics().kv_local_blocks_used, 0);
      if (local == 4) preemptions = h.scheduler.metrics().preemptions;
    }
    EXPECT_EQ(texts[0], texts[1]) << "overlap " << overlap;
    EXPECT_GT(preemptions, 0u);
  }
}

// A local group smaller than one sequence's window and step: a lone request's chunk could
// never get its blocks and waited forever (QA R), so the scheduler refuses the device. Four
// blocks hold the window of 20 and a 16-token step straddling block boundaries; three do not.
TEST(SlidingWindowKv, ALocalGroupThatCannotHoldOneSequenceIsRefused) {
  SchedulerOptions options;
  options.max_step_tokens = 16;
  options.max_batch = 4;
  EXPECT_THROW(Harness(options, device_config(64, 3)), std::invalid_argument);
  EXPECT_NO_THROW(Harness(options, device_config(64, 4)));
}

// A cancelled request and its choices give back their local blocks too.
TEST(SlidingWindowKv, CancelAndShutdownGiveEveryLocalBlockBack) {
  SchedulerOptions options;
  options.max_step_tokens = 8;
  Harness h(options, device_config(64, 40));
  std::vector<std::shared_ptr<RecordingSink>> sinks;
  std::vector<GenerationRequest> list;
  for (int i = 0; i < 3; ++i) {
    sinks.push_back(std::make_shared<RecordingSink>());
    list.push_back(Harness::request(std::string(50, 'q'), 200, 11 + i, sinks.back()));
  }
  const SubmitResult submitted = h.scheduler.submit(std::move(list));
  ASSERT_TRUE(submitted.accepted());
  for (int i = 0; i < 30; ++i) h.scheduler.run_once();
  EXPECT_GT(h.scheduler.metrics().kv_local_blocks_used, 0);
  for (uint64_t id : submitted.ids) h.scheduler.cancel(id);
  h.drain();
  EXPECT_EQ(h.scheduler.metrics().kv_local_blocks_used, 0);
  EXPECT_EQ(h.scheduler.metrics().kv_blocks_used, 0);
}

}  // namespace
}  // namespace tandem::TANDEM_UNITY_ID
