// Scheduler::running(): the running requests numbered as llama-server's slots (GET /slots),
// each the lowest number free when it is first published, kept while it runs and given up
// when it finishes or is preempted; with the counts and sampling fields a slot shows.
#include <algorithm>
#include <memory>
#include <optional>
#include <vector>

#include <gtest/gtest.h>

#include "scheduler/scheduler.h"
#include "tests/scheduler/scheduler_test_support.h"

namespace tandem::TANDEM_UNITY_ID {
namespace {

using testing::ByteTokenizer;
using testing::fake_device_info;
using testing::RecordingSink;
using testing::ScriptedExecutor;

struct SlotRun {
  explicit SlotRun(SchedulerOptions options, DeviceInfo info = fake_device_info())
      : device(std::make_unique<ScriptedExecutor>([](uint64_t, int32_t) { return int32_t{'x'}; },
                                                  info)),
        scheduler(device, tokenizer, std::move(options)) {}

  uint64_t submit(int prompt_len, int32_t max_tokens, SamplingParams sampling = {}) {
    auto sink = std::make_shared<RecordingSink>();
    GenerationRequest r;
    r.prompt.assign(prompt_len, 'p');
    r.max_tokens = max_tokens;
    r.sampling = sampling;
    r.sink = sink;
    const SubmitResult result = scheduler.submit(std::move(r));
    EXPECT_TRUE(result.accepted());
    sinks.push_back(sink);
    return result.id;
  }
  // Turns the loop until `done` holds (bounded); false if it never did.
  template <typename Done>
  bool run_until(Done done) {
    for (int i = 0; i < 10000; ++i) {
      if (done()) return true;
      scheduler.run_once();
    }
    return done();
  }
  // The id running in each slot, -1 where none (by max_batch).
  std::vector<int64_t> slots(int32_t total) const {
    std::vector<int64_t> out(static_cast<size_t>(total), -1);
    for (const RunningRequest& r : scheduler.running()) {
      EXPECT_GE(r.slot, 0);
      EXPECT_LT(r.slot, total);
      EXPECT_EQ(out.at(static_cast<size_t>(r.slot)), -1) << "two requests in slot " << r.slot;
      out.at(static_cast<size_t>(r.slot)) = static_cast<int64_t>(r.id);
    }
    return out;
  }

  ByteTokenizer tokenizer;
  Device device;
  Scheduler scheduler;
  std::vector<std::shared_ptr<RecordingSink>> sinks;
};

TEST(RunningSlots, EachRequestKeepsTheLowestSlotFreeWhenItStartedUntilItFinishes) {
  SchedulerOptions options;
  options.max_batch = 3;
  SlotRun run(options);
  EXPECT_TRUE(run.scheduler.running().empty());
  const auto a = static_cast<int64_t>(run.submit(4, 3));
  const auto b = static_cast<int64_t>(run.submit(4, 60));
  const auto c = static_cast<int64_t>(run.submit(4, 60));
  ASSERT_TRUE(run.run_until([&] { return run.scheduler.running().size() == 3; }));
  EXPECT_EQ(run.slots(3), (std::vector<int64_t>{a, b, c}));
  ASSERT_TRUE(run.run_until([&] { return run.sinks[0]->ended(); }));
  EXPECT_EQ(run.slots(3), (std::vector<int64_t>{-1, b, c}));
  const auto d = static_cast<int64_t>(run.submit(4, 60));
  ASSERT_TRUE(run.run_until([&] { return run.scheduler.running().size() == 3; }));
  EXPECT_EQ(run.slots(3), (std::vector<int64_t>{d, b, c})) << "d takes the slot a left";
  ASSERT_TRUE(run.run_until([&] { return run.scheduler.drained(); }));
  EXPECT_TRUE(run.scheduler.running().empty());
}

TEST(RunningSlots, ASlotShowsItsRequestsCountsAndSamplingFields) {
  SchedulerOptions options;
  options.max_batch = 2;
  SlotRun run(options);
  SamplingParams sampling;
  sampling.temperature = 0.5f;
  sampling.top_k = 7;
  sampling.top_p = 0.9f;
  sampling.min_p = 0.05f;
  sampling.seed = 99;
  const uint64_t id = run.submit(20, 30, sampling);
  ASSERT_TRUE(run.run_until([&] {
    const auto running = run.scheduler.running();
    return !running.empty() && running[0].generated >= 5;
  }));
  const RunningRequest r = run.scheduler.running().at(0);
  EXPECT_EQ(r.slot, 0);
  EXPECT_EQ(r.id, id);
  EXPECT_EQ(r.prompt_tokens, 20);
  EXPECT_EQ(r.prefilled, 20);
  EXPECT_EQ(r.cached_tokens, 0);
  EXPECT_TRUE(r.decoding);
  EXPECT_EQ(r.max_new, 30);
  EXPECT_LT(r.generated, 30);
  EXPECT_EQ(r.temperature, 0.5f);
  EXPECT_EQ(r.top_k, 7);
  EXPECT_EQ(r.top_p, 0.9f);
  EXPECT_EQ(r.min_p, 0.05f);
  EXPECT_EQ(r.seed, 99u);
}

// A preempted request gives its slot up: readmitted, it takes the lowest free one then.
TEST(RunningSlots, APreemptedRequestGivesItsSlotUp) {
  SchedulerOptions options;
  options.max_batch = 2;
  // 6 blocks of 16: two 40-token prompts hold 3 each, and the first to grow preempts the
  // later one.
  SlotRun run(options, fake_device_info(256, 6));
  const auto a = static_cast<int64_t>(run.submit(40, 20));
  const auto b = static_cast<int64_t>(run.submit(40, 20));
  ASSERT_TRUE(run.run_until([&] { return run.scheduler.running().size() == 2; }));
  EXPECT_EQ(run.slots(2), (std::vector<int64_t>{a, b}));
  ASSERT_TRUE(run.run_until([&] { return run.scheduler.metrics().preemptions > 0; }));
  EXPECT_EQ(run.slots(2), (std::vector<int64_t>{a, -1}));
  ASSERT_TRUE(run.run_until([&] { return run.sinks[0]->ended(); }));
  ASSERT_TRUE(run.run_until([&] { return run.scheduler.running().size() == 1; }));
  EXPECT_EQ(run.slots(2), (std::vector<int64_t>{b, -1})) << "b takes slot 0, free again";
  ASSERT_TRUE(run.run_until([&] { return run.scheduler.drained(); }));
  EXPECT_EQ(run.sinks[1]->reason(), FinishReason::kLength);
}

}  // namespace
}  // namespace tandem::TANDEM_UNITY_ID
