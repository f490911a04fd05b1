// The scheduler's KV blocks: taken as sequences grow (not reserved for max_tokens up
// front), recompute preemption when the pool runs dry, and the prefix cache (hits skip
// the prefill, usage reports them, a cancelled prefill leaves no half-written block).
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>

#include "scheduler/scheduler.h"
#include "tests/scheduler/scheduler_test_support.h"

namespace tandem::TANDEM_UNITY_ID {
namespace {

using testing::ByteTokenizer;
using testing::fake_device_info;
using testing::RecordingSink;
using testing::ScriptedExecutor;

// Tokens are a function of (request id, position): a letter, never EOS.
int32_t letter(uint64_t id, int32_t position) {
  return 'a' + static_cast<int32_t>((id * 7 + static_cast<uint64_t>(position) * 3) % 26);
}

struct Harness {
  explicit Harness(SchedulerOptions options = {}, DeviceInfo info = fake_device_info())
      : device(std::make_unique<ScriptedExecutor>(letter, info)),
        scheduler(device, tokenizer, std::move(options)) {}
  std::shared_ptr<RecordingSink> submit(std::string prompt, std::optional<int32_t> max_tokens) {
    auto sink = std::make_shared<RecordingSink>();
    GenerationRequest r;
    r.prompt.assign(prompt.begin(), prompt.end());
    r.max_tokens = max_tokens;
    r.sink = sink;
    EXPECT_TRUE(scheduler.submit(std::move(r)).accepted());
    return sink;
  }
  void run_turns(int n) {
    for (int i = 0; i < n; ++i) scheduler.run_once();
  }
  void drain() {
    for (int i = 0; i < 100000 && !scheduler.drained(); ++i) scheduler.run_once();
    ASSERT_TRUE(scheduler.drained());
  }

  ByteTokenizer tokenizer;
  Device device;
  Scheduler scheduler;
};

TEST(SchedulerKv, ARequestWithoutMaxTokensHoldsOnlyTheBlocksItHasWritten) {
  Harness h({}, fake_device_info(/*context=*/256, /*kv_blocks=*/64));
  auto sink = h.submit(std::string(20, 'p'), std::nullopt);  // may run to the context
  h.run_turns(1);
  EXPECT_EQ(h.scheduler.metrics().kv_blocks_used, 2);  // its prompt's, not 256 positions'
  h.run_turns(20);
  EXPECT_EQ(h.scheduler.metrics().kv_blocks_used, 3);  // 40-odd positions written
  h.drain();
  EXPECT_EQ(sink->usage().completion_tokens, 236);
  EXPECT_EQ(h.scheduler.metrics().kv_blocks_used, 0);
}

// The same requests through a pool too small to hold them together: the most recently
// admitted are preempted and recompute later, and every output is what a roomy pool gave.
TEST(SchedulerKv, PreemptionUnderPressureGivesTheSameOutputs) {
  for (bool overlap : {false, true}) {
    for (bool cache : {false, true}) {
      SchedulerOptions options;
      options.overlap = overlap;
      options.prefix_cache = cache;
      options.max_step_tokens = 24;
      Harness roomy(options, fake_device_info(256, 64));
      Harness tight(options, fake_device_info(256, 6));  // 96 positions
      std::vector<std::shared_ptr<RecordingSink>> a, b;
      for (int i = 0; i < 5; ++i) {
        const std::string prompt = std::string(10 + 7 * i, 'p') + static_cast<char>('0' + i);
        a.push_back(roomy.submit(prompt, 40 + 3 * i));
        b.push_back(tight.submit(prompt, 40 + 3 * i));
      }
      roomy.drain();
      tight.drain();
      for (int i = 0; i < 5; ++i) {
        EXPECT_EQ(b[i]->text(), a[i]->text()) << "overlap " << overlap << " request " << i;
        EXPECT_EQ(b[i]->usage().completion_tokens, 40 + 3 * i);
        EXPECT_EQ(b[i]->events_after_end(), 0);
      }
      const SchedulerMetrics m = tight.scheduler.metrics();
      EXPECT_GT(m.preemptions, 0u);
      EXPECT_EQ(roomy.scheduler.metrics().preemptions, 0u);
      EXPECT_EQ(m.kv_blocks_used, 0);
    }
  }
}

// A request preempted for want of a block waits in the queue until a running one frees
// blocks: readmitted in the same step (its own blocks back from the cache, or its prompt
// recomputed), it was preempted again at its next block, over and over (QA R: 14 times in a
// row, 1,134 tokens prefilled for a 128-token sequence with the cache off), each time
// putting a prefill chunk into the other request's decode steps.
TEST(SchedulerKv, APreemptedRequestWaitsForBlocksInsteadOfComingStraightBack) {
  for (bool cache : {false, true}) {
    SchedulerOptions options;
    options.prefix_cache = cache;
    options.max_step_tokens = 64;
    options.overlap = true;
    Harness roomy(options, fake_device_info(256, 64));
    Harness tight(options, fake_device_info(256, 16));  // one sequence of 256 at most
    auto a = tight.submit(std::string(8, 'a'), 240);
    auto b = tight.submit(std::string(120, 'b'), 130);
    auto a_alone = roomy.submit(std::string(8, 'a'), 240);
    auto b_alone = roomy.submit(std::string(120, 'b'), 130);
    roomy.drain();
    uint64_t preemptions = 0;
    for (int i = 0; i < 100000 && !tight.scheduler.drained(); ++i) {
      tight.scheduler.run_once();
      const SchedulerMetrics m = tight.scheduler.metrics();
      if (m.preemptions != preemptions) {
        EXPECT_EQ(m.waiting, 1) << "cache " << cache << ": readmitted in the preempting step";
        preemptions = m.preemptions;
      }
    }
    ASSERT_TRUE(tight.scheduler.drained());
    EXPECT_EQ(preemptions, 1u) << "cache " << cache;
    // 8 + 120 prompt tokens, then b's 120 + (its tokens so far - 1) once more.
    EXPECT_LT(tight.scheduler.metrics().prompt_tokens, 128u + 250u) << "cache " << cache;
    EXPECT_EQ(a->text(), a_alone->text());
    EXPECT_EQ(b->text(), b_alone->text());
    EXPECT_EQ(tight.scheduler.metrics().kv_blocks_used, 0);
    // While b waited, a's steps stayed chained: the chain breaks for a batch change only
    // where b can come back (it broke 14 times while b could not).
    const auto breaks = tight.scheduler.metrics().chain_breaks;
    EXPECT_LE(breaks[static_cast<size_t>(ChainBreak::kBatchChange)], 1u)
        << "cache " << cache << ": " << breaks[static_cast<size_t>(ChainBreak::kBatchChange)];
  }
}

// Cancelled while it waits after a preemption, a request has streamed tokens already: its
// usage counts them (it said 0).
TEST(SchedulerKv, ARequestCancelledWhilePreemptedCountsTheTokensItStreamed) {
  Harness tight({}, fake_device_info(256, 16));
  auto a = tight.submit(std::string(8, 'a'), 240);
  auto b = std::make_shared<RecordingSink>();
  GenerationRequest request;
  request.prompt.assign(120, 'b');
  request.max_tokens = 130;
  request.sink = b;
  const uint64_t b_id = tight.scheduler.submit(std::move(request)).id;
  for (int i = 0; i < 100000 && tight.scheduler.metrics().preemptions == 0; ++i)
    tight.scheduler.run_once();
  ASSERT_EQ(tight.scheduler.metrics().waiting, 1);
  tight.scheduler.cancel(b_id);
  tight.drain();
  EXPECT_GT(b->text().size(), 0u);
  EXPECT_EQ(b->usage().completion_tokens, static_cast<int64_t>(b->text().size()));
  EXPECT_EQ(a->usage().completion_tokens, 240);
}

TEST(SchedulerKv, ACachedPrefixIsNotPrefilledAgainAndUsageSaysSo) {
  Harness h;
  const std::string prompt = std::string(40, 'q');
  auto first = h.submit(prompt, 4);
  h.drain();
  EXPECT_EQ(first->usage().cached_tokens, 0);
  const uint64_t prefilled = h.scheduler.metrics().prompt_tokens;
  auto again = h.submit(prompt, 4);
  auto longer = h.submit(prompt + "rrrrrrrrrrrrrrrrrrrr", 4);
  h.drain();
  EXPECT_EQ(again->usage().cached_tokens, 32);  // two full blocks; the last token recomputed
  EXPECT_EQ(longer->usage().cached_tokens, 32);
  EXPECT_EQ(h.scheduler.metrics().prompt_tokens, prefilled + 8 + 28);
  const SchedulerMetrics m = h.scheduler.metrics();
  EXPECT_EQ(m.prefix_queried_tokens, 40u + 40u + 60u);
  EXPECT_EQ(m.prefix_hit_tokens, 64u);
  EXPECT_EQ(m.kv_blocks_used, 0);
  EXPECT_GT(m.kv_blocks_cached, 0);
}

TEST(SchedulerKv, WithTheCacheOffNothingIsCached) {
  SchedulerOptions options;
  options.prefix_cache = false;
  Harness h(options);
  h.submit(std::string(40, 'q'), 4);
  h.drain();
  auto again = h.submit(std::string(40, 'q'), 4);
  h.drain();
  EXPECT_EQ(again->usage().cached_tokens, 0);
  EXPECT_EQ(h.scheduler.metrics().kv_blocks_cached, 0);
  EXPECT_EQ(h.scheduler.metrics().prefix_queried_tokens, 0u);
}

// A block is registered only once a processed step has written all of it: a request
// cancelled with a chunk in flight that half-fills its second block leaves only the
// first findable.
TEST(SchedulerKv, ACancelledPrefillLeavesNoHalfWrittenBlockFindable) {
  SchedulerOptions options;
  options.max_step_tokens = 8;
  Harness h(options);
  const std::string prompt(40, 'z');
  auto cancelled = h.submit(prompt, 4);
  h.run_turns(3);  // chunks 0-8 and 8-16 processed, 16-24 finalized but unprocessed
  h.scheduler.cancel(1);
  h.drain();
  EXPECT_EQ(cancelled->reason(), FinishReason::kCancelled);
  EXPECT_EQ(h.scheduler.metrics().kv_blocks_cached, 1);
  auto next = h.submit(prompt, 4);
  h.drain();
  EXPECT_EQ(next->usage().cached_tokens, 16);
}

}  // namespace
}  // namespace tandem::TANDEM_UNITY_ID
