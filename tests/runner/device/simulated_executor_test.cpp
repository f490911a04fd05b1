#include "runner/device/simulated_executor.h"

#include <stdexcept>

#include <gtest/gtest.h>

namespace tandem::TANDEM_UNITY_ID {
namespace {

StepRow row(uint64_t id, std::vector<int32_t> tokens, int32_t position,
            std::vector<int32_t> blocks) {
  StepRow r;
  r.request_id = id;
  r.tokens = std::move(tokens);
  r.position = position;
  r.kv_blocks = std::move(blocks);
  return r;
}

TEST(SimulatedExecutor, ARowsTokenDoesNotDependOnTheRestOfTheBatch) {
  SimulatedDeviceConfig config;
  config.eos_probability = 0.2;
  SimulatedExecutor alone(config), crowded(config);
  std::vector<int32_t> one(1), three(3);
  alone.execute(StepPlan{{row(7, {11, 12}, 0, {0})}}, one);
  crowded.execute(StepPlan{{row(3, {5}, 0, {1}), row(7, {11, 12}, 0, {0}), row(9, {8}, 0, {2})}},
                  three);
  EXPECT_EQ(one[0], three[1]);
  EXPECT_EQ(one[0], alone.next_token(12, 1, SamplingParams{}));
}

TEST(SimulatedExecutor, SeedsChangeSampledTokensButNotGreedyOnes) {
  SimulatedExecutor sim(SimulatedDeviceConfig{});
  SamplingParams greedy, s1, s2;
  greedy.temperature = 0;
  s1.seed = 1;
  s2.seed = 2;
  int differ = 0;
  for (int pos = 0; pos < 64; ++pos) {
    SamplingParams g2 = greedy;
    g2.seed = 99;
    EXPECT_EQ(sim.next_token(3, pos, greedy), sim.next_token(3, pos, g2));
    differ += sim.next_token(3, pos, s1) != sim.next_token(3, pos, s2);
  }
  EXPECT_GT(differ, 32);
}

TEST(SimulatedExecutor, EmitsEosAtTheConfiguredRateUnlessIgnored) {
  SimulatedDeviceConfig config;
  config.eos_probability = 0.25;
  SimulatedExecutor sim(config);
  SamplingParams params, ignore;
  ignore.ignore_eos = true;
  int eos = 0, eos_ignored = 0;
  for (int pos = 0; pos < 4000; ++pos) {
    eos += sim.next_token(pos % 7, pos, params) == config.eog_ids[0];
    eos_ignored += sim.next_token(pos % 7, pos, ignore) == config.eog_ids[0];
  }
  EXPECT_GT(eos, 800);
  EXPECT_LT(eos, 1200);
  EXPECT_EQ(eos_ignored, 0);
}

TEST(SimulatedExecutor, DrawsOnlyFromItsAlphabet) {
  SimulatedDeviceConfig config;
  config.alphabet = {'a', 'b'};
  config.eos_probability = 0;
  SimulatedExecutor sim(config);
  for (int pos = 0; pos < 100; ++pos) {
    const int32_t t = sim.next_token(1, pos, SamplingParams{});
    EXPECT_TRUE(t == 'a' || t == 'b');
  }
}

TEST(SimulatedExecutor, CatchesABlockTableThatDoesNotCoverTheRow) {
  SimulatedExecutor sim(SimulatedDeviceConfig{});
  std::vector<int32_t> out(1);
  EXPECT_THROW(sim.execute(StepPlan{{row(1, std::vector<int32_t>(17, 3), 0, {0})}}, out),
               std::runtime_error);
  EXPECT_THROW(sim.execute(StepPlan{{row(1, {3}, 0, {99999})}}, out), std::runtime_error);
}

TEST(SimulatedExecutor, CatchesKvOverwrittenByAnotherRequest) {
  SimulatedExecutor sim(SimulatedDeviceConfig{});
  std::vector<int32_t> out(1);
  sim.execute(StepPlan{{row(1, {3, 4, 5}, 0, {4})}}, out);
  sim.execute(StepPlan{{row(1, {6}, 3, {4})}}, out);     // request 1 goes on: fine
  sim.execute(StepPlan{{row(2, {7, 7}, 0, {4})}}, out);  // block 4 handed to request 2
  EXPECT_THROW(sim.execute(StepPlan{{row(1, {8}, 4, {4})}}, out), std::runtime_error);
}

// The local (sliding-window) table: a local block inside the window that another
// sequence overwrote (freed early, handed out again) fails, as does one dropped inside
// the window; blocks wholly before the window may be dropped.
TEST(SimulatedExecutor, CatchesALocalBlockReusedOrDroppedInsideTheWindow) {
  SimulatedDeviceConfig config;
  config.kv_block_size = 4;
  config.kv_local_blocks = 8;
  config.sliding_window = 6;
  SimulatedExecutor sim(config);
  std::vector<int32_t> out(1);
  auto local_row = [](uint64_t id, std::vector<int32_t> tokens, int32_t position,
                      std::vector<int32_t> blocks, std::vector<int32_t> local) {
    StepRow r = row(id, std::move(tokens), position, std::move(blocks));
    r.kv_local_blocks = std::move(local);
    return r;
  };
  sim.execute(StepPlan{{local_row(1, {1, 2, 3, 4, 5, 6, 7, 8}, 0, {0, 1}, {0, 1})}}, out);
  // Query at 8 sees 3..8: local block 0 (0..3) is still inside the window.
  EXPECT_THROW(sim.execute(StepPlan{{local_row(1, {9}, 8, {0, 1, 2}, {kNoBlock, 1, 2})}}, out),
               std::runtime_error);
  sim.execute(StepPlan{{local_row(1, {9}, 8, {0, 1, 2}, {0, 1, 2})}}, out);
  // Query at 9 sees 4..9: block 0 may go. Then local blocks 0 and 1 are handed to request
  // 2 while request 1's window still sees block 1 (positions 4..7).
  sim.execute(StepPlan{{local_row(1, {10}, 9, {0, 1, 2}, {kNoBlock, 1, 2})}}, out);
  sim.execute(StepPlan{{local_row(2, {5, 5, 5, 5, 5, 5, 5, 5}, 0, {3, 4}, {0, 1})}}, out);
  EXPECT_THROW(sim.execute(StepPlan{{local_row(1, {11}, 10, {0, 1, 2}, {kNoBlock, 1, 2})}}, out),
               std::runtime_error);
}

}  // namespace
}  // namespace tandem::TANDEM_UNITY_ID
