// Progress under KV pressure: whenever the pool runs dry, what preemption frees (with the
// blocks only a waiting n-choice share still holds) lets the oldest running request step,
// so every request finishes, within a bounded number of turns, with the output it gives
// alone. Before release_pinned_shares a share pinned its preempted leader's blocks and the
// one running request preempted itself every step, forever (QA's livelock).
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "runner/device/simulated_executor.h"
#include "scheduler/scheduler.h"
#include "tests/scheduler/scheduler_test_support.h"

namespace tandem::TANDEM_UNITY_ID {
namespace {

using testing::ByteTokenizer;
using testing::RecordingSink;

struct Job {
  std::string prompt;
  int n = 1;  // choices, submitted as one list (their prompt is shared)
  int32_t max_tokens = 0;
  uint64_t seed = 0;  // choice i has seed + i
};

struct Harness {
  Harness(SchedulerOptions options, int32_t kv_blocks)
      : device(std::make_unique<SimulatedExecutor>(testing::letters_device(kv_blocks))),
        scheduler(device, tokenizer, std::move(options)) {}

  // One sink per choice, in order.
  std::vector<std::shared_ptr<RecordingSink>> submit(const Job& job) {
    std::vector<std::shared_ptr<RecordingSink>> sinks;
    std::vector<GenerationRequest> list;
    for (int i = 0; i < job.n; ++i) {
      sinks.push_back(std::make_shared<RecordingSink>());
      GenerationRequest r;
      r.prompt.assign(job.prompt.begin(), job.prompt.end());
      r.sampling.temperature = 1.0f;
      r.sampling.seed = job.seed + static_cast<uint64_t>(i);
      r.max_tokens = job.max_tokens;
      r.sink = sinks.back();
      list.push_back(std::move(r));
    }
    EXPECT_TRUE(scheduler.submit(std::move(list)).accepted());
    return sinks;
  }
  // Runs at most `turns` turns of the loop; true when everything finished. A livelock
  // runs out of turns instead of hanging the suite.
  bool drain_within(int turns) {
    for (int i = 0; i < turns && !scheduler.drained(); ++i) scheduler.run_once();
    return scheduler.drained();
  }

  ByteTokenizer tokenizer;
  Device device;
  Scheduler scheduler;
};

// Each choice's text when it runs alone in a roomy pool.
std::vector<std::string> alone(const Job& job) {
  std::vector<std::string> texts;
  for (int i = 0; i < job.n; ++i) {
    Job one = job;
    one.n = 1;
    one.seed = job.seed + static_cast<uint64_t>(i);
    Harness solo({}, 64);
    auto sinks = solo.submit(one);
    EXPECT_TRUE(solo.drain_within(100000));
    texts.push_back(sinks[0]->text());
  }
  return texts;
}

// QA's cycle, made small. An 8-block pool; B (90-token prompt, 30 tokens: all 8 blocks
// alone) is admitted, then the leader of two choices of a 20-token prompt (108 tokens: all
// 8 blocks alone), whose prefill fills the pool, so the other choice waits and the share
// holds the leader's two blocks. B's 7th block preempts the leader before it fills its
// partly filled prompt block; the share's references are then the only ones left on both
// blocks. Before the fix B preempted itself next, was readmitted, recomputed its last
// block and hit the same wall, every turn.
TEST(KvProgress, ASharesPinnedBlocksDoNotStopTheLoneRunningRequest) {
  const Job b{std::string(90, 'b'), 1, 30, 7};
  const Job a{"abcdefghijklmnopqrst", 2, 108, 1000};
  const std::vector<std::string> b_alone = alone(b), a_alone = alone(a);
  for (bool overlap : {false, true}) {
    for (bool cache : {false, true}) {
      SchedulerOptions options;
      options.overlap = overlap;
      options.prefix_cache = cache;
      Harness h(options, 8);
      auto b_sinks = h.submit(b);
      auto a_sinks = h.submit(a);
      // Alone these take about 30 + 2 x 108 decode steps; recomputes add a few.
      ASSERT_TRUE(h.drain_within(1000)) << "overlap " << overlap << " cache " << cache;
      EXPECT_EQ(b_sinks[0]->text(), b_alone[0]);
      for (int i = 0; i < 2; ++i) {
        EXPECT_EQ(a_sinks[i]->text(), a_alone[i]) << "choice " << i;
        EXPECT_EQ(a_sinks[i]->usage().completion_tokens, 108);
      }
      const SchedulerMetrics m = h.scheduler.metrics();
      EXPECT_GT(m.preemptions, 0u);
      EXPECT_LT(m.preemptions, 20u);  // not once a step
      EXPECT_EQ(m.kv_blocks_used, 0);
    }
  }
}

// Random lists of n = 1-3 choices over prompts sharing prefixes, through pools of 5-9
// blocks (each request still fits alone), chunk sizes, overlap and the cache on and off:
// every request finishes within a bound on the loop's turns (a livelock never does), with
// the text it gives alone, and every block comes back.
TEST(KvProgress, RandomChoicesWithSharedPrefixesInATinyPoolAllFinish) {
  for (uint32_t trial = 0; trial < 60; ++trial) {
    std::mt19937 rng(trial);
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    const int32_t kv_blocks = pick(5, 9);
    const int capacity = kv_blocks * 16;
    std::string base;
    for (int i = 0; i < 60; ++i) base += static_cast<char>('a' + pick(0, 3));
    std::vector<Job> jobs;
    int64_t tokens = 0;
    for (int j = pick(2, 4); j > 0; --j) {
      Job job;
      job.prompt = base.substr(0, pick(1, 50)) + std::string(pick(0, 12), 'x');
      const int room = capacity - static_cast<int>(job.prompt.size());
      job.max_tokens = pick(1, std::min(room, 60));
      job.n = pick(1, 3);
      job.seed = 100 * trial + 10 * static_cast<uint64_t>(j);
      tokens += int64_t{job.n} * (static_cast<int64_t>(job.prompt.size()) + job.max_tokens);
      jobs.push_back(job);
    }
    SchedulerOptions options;
    options.overlap = pick(0, 1) == 1;
    options.prefix_cache = pick(0, 1) == 1;
    options.max_step_tokens = std::vector<int32_t>{8, 16, 24, 512}[pick(0, 3)];
    Harness h(options, kv_blocks);
    std::vector<std::vector<std::shared_ptr<RecordingSink>>> sinks;
    for (const Job& job : jobs) sinks.push_back(h.submit(job));
    // Each token's step, each recompute of every request a few times over: far more than
    // the runs need, far fewer than a request preempting itself each turn would take.
    const int bound = static_cast<int>(8 * tokens);
    ASSERT_TRUE(h.drain_within(bound)) << "trial " << trial << " blocks " << kv_blocks;
    for (size_t j = 0; j < jobs.size(); ++j) {
      const std::vector<std::string> texts = alone(jobs[j]);
      for (int i = 0; i < jobs[j].n; ++i) {
        EXPECT_EQ(sinks[j][i]->text(), texts[i]) << "trial " << trial << " job " << j;
        EXPECT_EQ(sinks[j][i]->usage().completion_tokens, jobs[j].max_tokens);
        EXPECT_EQ(sinks[j][i]->events_after_end(), 0);
      }
    }
    EXPECT_EQ(h.scheduler.metrics().kv_blocks_used, 0) << "trial " << trial;
  }
}

}  // namespace
}  // namespace tandem::TANDEM_UNITY_ID
