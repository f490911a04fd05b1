// The lazy step API: launch order, chained steps fed on the worker, errors, counters.
#include "runner/device/device.h"

#include <mutex>
#include <stdexcept>

#include <gtest/gtest.h>

namespace tandem::TANDEM_UNITY_ID {
namespace {

// Records every plan it runs; a row's token is 1000 * step + its first input token.
class RecordingExecutor : public StepExecutor {
 public:
  DeviceInfo info() const override { return DeviceInfo{2000, 128, 16, 8, {0}}; }
  void execute(const StepPlan& plan, std::span<int32_t> tokens) override {
    std::lock_guard lock(mutex);
    if (fail_at == static_cast<int>(plans.size())) {
      plans.push_back(plan);
      throw std::runtime_error("device fault");
    }
    plans.push_back(plan);
    for (size_t i = 0; i < plan.rows.size(); ++i) {
      if (plan.rows[i].sample) {
        tokens[i] = 1000 * static_cast<int32_t>(plans.size()) + plan.rows[i].tokens.front();
      }
    }
  }
  std::mutex mutex;
  std::vector<StepPlan> plans;
  int fail_at = -1;
};

StepRow row(uint64_t id, std::vector<int32_t> tokens, int32_t position, bool sample = true) {
  StepRow r;
  r.request_id = id;
  r.tokens = std::move(tokens);
  r.position = position;
  r.kv_blocks = {0, 1, 2};
  r.sample = sample;
  return r;
}

TEST(Device, StepsRunInLaunchOrderAndReturnTheirTokens) {
  auto exec = std::make_unique<RecordingExecutor>();
  RecordingExecutor* seen = exec.get();
  Device device(std::move(exec));
  PendingStep a = device.launch(StepPlan{{row(1, {5}, 0)}});
  PendingStep b = device.launch(StepPlan{{row(1, {6}, 1), row(2, {7, 8}, 0, false)}});
  EXPECT_EQ(a.sequence(), 1u);
  EXPECT_EQ(b.sequence(), 2u);
  EXPECT_EQ(b.row_count(), 2u);
  StepResult rb = device.finalize(b);  // finalizing out of order is allowed
  StepResult ra = device.finalize(a);
  EXPECT_EQ(ra.tokens, std::vector<int32_t>({1005}));
  EXPECT_EQ(rb.tokens, std::vector<int32_t>({2006, kNoToken}));
  std::lock_guard lock(seen->mutex);
  ASSERT_EQ(seen->plans.size(), 2u);
  EXPECT_EQ(seen->plans[0].rows[0].tokens.front(), 5);
}

TEST(Device, AChainedStepIsFedThePreviousStepsTokensAtTheNextPositions) {
  auto exec = std::make_unique<RecordingExecutor>();
  RecordingExecutor* seen = exec.get();
  Device device(std::move(exec));
  // Row 1 ends its 3-token prompt chunk at 0..2; row 2 decodes at position 9.
  PendingStep first = device.launch(StepPlan{{row(1, {4, 5, 6}, 0), row(2, {7}, 9)}});
  PendingStep second = device.launch_chained(first);  // before first is finalized
  PendingStep third = device.launch_chained(second);
  EXPECT_TRUE(second.chained());
  EXPECT_EQ(device.finalize(first).tokens, std::vector<int32_t>({1004, 1007}));
  EXPECT_EQ(device.finalize(second).tokens, std::vector<int32_t>({3004, 3007}));
  EXPECT_EQ(device.finalize(third).tokens, std::vector<int32_t>({6004, 6007}));
  std::lock_guard lock(seen->mutex);
  ASSERT_EQ(seen->plans.size(), 3u);
  const StepRow& r1 = seen->plans[1].rows[0];
  EXPECT_EQ(r1.tokens, std::vector<int32_t>({1004}));
  EXPECT_EQ(r1.position, 3);
  EXPECT_EQ(r1.request_id, 1u);
  EXPECT_EQ(r1.kv_blocks, std::vector<int32_t>({0, 1, 2}));
  EXPECT_EQ(seen->plans[1].rows[1].position, 10);
  EXPECT_EQ(seen->plans[2].rows[0].tokens, std::vector<int32_t>({3004}));
  EXPECT_EQ(seen->plans[2].rows[0].position, 4);
  EXPECT_EQ(seen->plans[2].rows[1].position, 11);
  const DeviceCounters c = device.counters();
  EXPECT_EQ(c.steps, 3u);
  EXPECT_EQ(c.chained_steps, 2u);
}

TEST(Device, ChainingIsRefusedFromAStepThatDoesNotSampleEveryRow) {
  Device device(std::make_unique<RecordingExecutor>());
  PendingStep prefill = device.launch(StepPlan{{row(1, {4, 5}, 0, false)}});
  EXPECT_THROW(device.launch_chained(prefill), std::logic_error);
  PendingStep decode = device.launch(StepPlan{{row(1, {6}, 2)}});
  PendingStep next = device.launch_chained(decode);
  EXPECT_THROW(device.launch_chained(decode), std::logic_error);  // one successor only
  device.finalize(next);
}

TEST(Device, FinalizeRethrowsTheExecutorsErrorAndAChainedStepFailsWithIt) {
  auto exec = std::make_unique<RecordingExecutor>();
  exec->fail_at = 0;
  Device device(std::move(exec));
  PendingStep a = device.launch(StepPlan{{row(1, {5}, 0)}});
  PendingStep b = device.launch_chained(a);
  PendingStep c = device.launch(StepPlan{{row(2, {5}, 0)}});
  EXPECT_THROW(
      {
        try {
          device.finalize(a);
        } catch (const std::runtime_error& e) {
          EXPECT_STREQ(e.what(), "device fault");
          throw;
        }
      },
      std::runtime_error);
  EXPECT_THROW(device.finalize(b), std::runtime_error);
  EXPECT_EQ(device.finalize(c).tokens.size(), 1u);  // the device keeps serving
}

TEST(Device, TheObserverSeesLaunchesAndFinalizesInCallOrder) {
  Device device(std::make_unique<RecordingExecutor>());
  std::vector<DeviceEvent> events;
  device.set_event_observer([&](const DeviceEvent& e) { events.push_back(e); });
  PendingStep a = device.launch(StepPlan{{row(1, {5}, 0)}});
  PendingStep b = device.launch_chained(a);
  device.finalize(a);
  device.finalize(b);
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[0].kind, DeviceEvent::Kind::kLaunch);
  EXPECT_EQ(events[1].kind, DeviceEvent::Kind::kLaunch);
  EXPECT_TRUE(events[1].chained);
  EXPECT_EQ(events[2].kind, DeviceEvent::Kind::kFinalize);
  EXPECT_EQ(events[2].sequence, 1u);
}

TEST(Device, WaitingForLaunchesIsNotIdleTimeUnlessTheSchedulerSaidItIsActive) {
  Device device(std::make_unique<RecordingExecutor>());
  for (int i = 0; i < 20; ++i) {
    PendingStep a = device.launch(StepPlan{{row(1, {5}, i)}});
    device.finalize(a);  // the worker now waits for the next launch
  }
  EXPECT_EQ(device.counters().idle_seconds, 0.0);
  EXPECT_EQ(device.counters().steps, 20u);
  EXPECT_GE(device.counters().busy_seconds, 0.0);
}

TEST(Device, DestroyingTheDeviceRunsTheStepsStillQueued) {
  auto exec = std::make_unique<RecordingExecutor>();
  RecordingExecutor* seen = exec.get();
  std::vector<StepPlan> plans;
  {
    Device device(std::move(exec));
    for (int i = 0; i < 5; ++i) device.launch(StepPlan{{row(1, {i}, i)}});
    // seen is owned by device: read it before the device goes.
    PendingStep last = device.launch(StepPlan{{row(1, {9}, 9)}});
    device.finalize(last);
    std::lock_guard lock(seen->mutex);
    plans = seen->plans;
  }
  EXPECT_EQ(plans.size(), 6u);
}

}  // namespace
}  // namespace tandem::TANDEM_UNITY_ID
