// Scheduler::busy_slots(): the running and then the waiting requests numbered as
// llama-server's slots (GET /slots), each the lowest number free when it is first published,
// kept through its admission and any preemption until it finishes; what waits
// beyond max_batch has none; with the counts and sampling fields a slot shows.
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
    for (const BusySlot& r : scheduler.busy_slots()) {
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
  EXPECT_TRUE(run.scheduler.busy_slots().empty());
  const auto a = static_cast<int64_t>(run.submit(4, 3));
  const auto b = static_cast<int64_t>(run.submit(4, 60));
  const auto c = static_cast<int64_t>(run.submit(4, 60));
  ASSERT_TRUE(run.run_until([&] { return run.scheduler.busy_slots().size() == 3; }));
  EXPECT_EQ(run.slots(3), (std::vector<int64_t>{a, b, c}));
  ASSERT_TRUE(run.run_until([&] { return run.sinks[0]->ended(); }));
  EXPECT_EQ(run.slots(3), (std::vector<int64_t>{-1, b, c}));
  const auto d = static_cast<int64_t>(run.submit(4, 60));
  ASSERT_TRUE(run.run_until([&] { return run.scheduler.busy_slots().size() == 3; }));
  EXPECT_EQ(run.slots(3), (std::vector<int64_t>{d, b, c})) << "d takes the slot a left";
  ASSERT_TRUE(run.run_until([&] { return run.scheduler.drained(); }));
  EXPECT_TRUE(run.scheduler.busy_slots().empty());
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
    const auto running = run.scheduler.busy_slots();
    return !running.empty() && running[0].generated >= 5;
  }));
  const BusySlot r = run.scheduler.busy_slots().at(0);
  EXPECT_EQ(r.slot, 0);
  EXPECT_TRUE(r.admitted);
  EXPECT_TRUE(r.limited);
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

// A preempted request keeps its slot while it waits to run again; a request waiting beyond
// max_batch has none until one is free.
TEST(RunningSlots, APreemptedRequestKeepsItsSlotWhileItWaits) {
  SchedulerOptions options;
  options.max_batch = 2;
  // 6 blocks of 16: two 40-token prompts hold 3 each, and the first to grow preempts the
  // later one.
  SlotRun run(options, fake_device_info(256, 6));
  const auto a = static_cast<int64_t>(run.submit(40, 20));
  const auto b = static_cast<int64_t>(run.submit(40, 20));
  ASSERT_TRUE(run.run_until([&] {
    const auto slots = run.scheduler.busy_slots();
    return slots.size() == 2 && slots[0].admitted && slots[1].admitted;
  }));
  EXPECT_EQ(run.slots(2), (std::vector<int64_t>{a, b}));
  // A third request waits beyond max_batch: no slot, as a llama-server deferred task.
  const auto c = static_cast<int64_t>(run.submit(8, 4));
  ASSERT_TRUE(run.run_until([&] { return run.scheduler.metrics().preemptions > 0; }));
  // b went back to the queue's front, c behind it: b keeps its slot, c still has none.
  EXPECT_EQ(run.slots(2), (std::vector<int64_t>{a, b}));
  EXPECT_FALSE(run.scheduler.busy_slots().at(1).admitted);
  EXPECT_TRUE(run.scheduler.busy_slots().at(0).admitted);
  ASSERT_TRUE(run.run_until([&] { return run.sinks[0]->ended(); }));
  ASSERT_TRUE(run.run_until([&] { return run.scheduler.busy_slots().size() == 2; }));
  EXPECT_EQ(run.slots(2), (std::vector<int64_t>{c, b})) << "c takes the slot a left";
  ASSERT_TRUE(run.run_until([&] { return run.scheduler.drained(); }));
  EXPECT_EQ(run.sinks[1]->reason(), FinishReason::kLength);
  EXPECT_TRUE(run.scheduler.busy_slots().empty());
}

// Waiting requests hold the free slots in queue order before they are admitted, and keep
// them when they are.
TEST(RunningSlots, WaitingRequestsHoldTheFreeSlotsAndKeepThemWhenAdmitted) {
  SchedulerOptions options;
  options.max_batch = 4;
  options.max_step_tokens = 64;  // one 60-token prompt a step: the others wait
  SlotRun run(options);
  std::vector<int64_t> ids;
  for (int i = 0; i < 3; ++i) ids.push_back(static_cast<int64_t>(run.submit(60, 8)));
  ASSERT_TRUE(run.run_until([&] { return !run.scheduler.busy_slots().empty(); }));
  const auto first = run.scheduler.busy_slots();
  ASSERT_EQ(first.size(), 3u);
  EXPECT_EQ(run.slots(4), (std::vector<int64_t>{ids[0], ids[1], ids[2], -1}));
  EXPECT_TRUE(first[0].admitted);
  EXPECT_FALSE(first[2].admitted) << "a 60-token prompt fills the step";
  EXPECT_EQ(first[2].prefilled, 0);
  ASSERT_TRUE(run.run_until([&] {
    const auto slots = run.scheduler.busy_slots();
    return slots.size() == 3 && slots[2].admitted;
  }));
  EXPECT_EQ(run.slots(4), (std::vector<int64_t>{ids[0], ids[1], ids[2], -1}));
}

}  // namespace
}  // namespace tandem::TANDEM_UNITY_ID
