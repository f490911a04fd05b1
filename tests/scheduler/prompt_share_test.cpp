// n choices of one prompt (a list submitted at once): the prompt's full blocks are
// prefilled once and shared by reference, each choice computes the rest of its prompt in
// blocks of its own, and every choice's text is what the same request gives alone, with
// overlap on and off, the prefix cache on and off, and under preemption. The simulated
// executor checks every KV read against what the reading sequence wrote, so a shared
// block that another choice overwrote would fail the step.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "runner/device/simulated_executor.h"
#include "scheduler/scheduler.h"
#include "tests/scheduler/scheduler_test_support.h"

namespace tandem::TANDEM_UNITY_ID {
namespace {

using testing::ByteTokenizer;
using testing::RecordingSink;

struct Harness {
  Harness(SchedulerOptions options, int32_t kv_blocks)
      : device(std::make_unique<SimulatedExecutor>(testing::letters_device(kv_blocks))),
        scheduler(device, tokenizer, std::move(options)) {}

  GenerationRequest request(const std::string& prompt, uint64_t seed, int32_t max_tokens,
                            std::shared_ptr<RecordingSink> sink) {
    GenerationRequest r;
    r.prompt.assign(prompt.begin(), prompt.end());
    r.sampling.temperature = 1.0f;
    r.sampling.seed = seed;
    r.max_tokens = max_tokens;
    r.sink = std::move(sink);
    return r;
  }
  std::vector<std::shared_ptr<RecordingSink>> submit_choices(const std::string& prompt, int n,
                                                             int32_t max_tokens) {
    std::vector<std::shared_ptr<RecordingSink>> sinks;
    std::vector<GenerationRequest> list;
    for (int i = 0; i < n; ++i) {
      sinks.push_back(std::make_shared<RecordingSink>());
      list.push_back(request(prompt, 1000 + i, max_tokens, sinks.back()));
    }
    EXPECT_TRUE(scheduler.submit(std::move(list)).accepted());
    return sinks;
  }
  // Runs until drained; returns the most KV blocks in use after any turn.
  int32_t drain() {
    int32_t most = 0;
    for (int i = 0; i < 100000 && !scheduler.drained(); ++i) {
      scheduler.run_once();
      most = std::max(most, scheduler.metrics().kv_blocks_used);
    }
    EXPECT_TRUE(scheduler.drained());
    return most;
  }

  ByteTokenizer tokenizer;
  Device device;
  Scheduler scheduler;
};

// The text of choice i (seed 1000 + i, as submit_choices gives it) computed alone.
std::vector<std::string> texts_alone(const std::string& prompt, int n, int32_t max_tokens) {
  std::vector<std::string> alone;
  for (int i = 0; i < n; ++i) {
    Harness solo({}, 64);
    auto sink = std::make_shared<RecordingSink>();
    EXPECT_TRUE(solo.scheduler.submit(solo.request(prompt, 1000 + i, max_tokens, sink)).accepted());
    solo.drain();
    alone.push_back(sink->text());
  }
  return alone;
}

// 3 full blocks and one token more: the full blocks are shared, the fourth is each
// choice's own (it holds the prompt's last token and the 4 generated ones).
TEST(PromptShare, NChoicesUseThePromptsFullBlocksOnceAndPrefillThemOnce) {
  for (bool cache : {false, true}) {
    SchedulerOptions options;
    options.prefix_cache = cache;
    Harness h(options, 64);
    const std::string prompt = std::string(48, 'p') + "q";
    auto sinks = h.submit_choices(prompt, 8, 4);
    EXPECT_EQ(h.drain(), 3 + 8 * 1) << "cache " << cache;  // not 8 * 4
    EXPECT_EQ(h.scheduler.metrics().prompt_tokens, 49u + 7u);
    EXPECT_EQ(h.scheduler.metrics().kv_blocks_used, 0);
    // The leader found nothing cached; with the cache on, each member reports the 3 full
    // blocks it took by reference, as a request arriving a step later would.
    for (size_t i = 0; i < sinks.size(); ++i) {
      EXPECT_EQ(sinks[i]->usage().completion_tokens, 4);
      EXPECT_EQ(sinks[i]->usage().prompt_tokens, 49);
      EXPECT_EQ(sinks[i]->usage().cached_tokens, cache && i > 0 ? 48 : 0) << "choice " << i;
    }
    EXPECT_EQ(h.scheduler.metrics().prefix_hit_tokens, cache ? 7u * 48u : 0u);
  }
}

// A prompt shorter than a block (and the part of any prompt past its full blocks) is not
// recomputed by every choice: the leader's partly filled block is copied into each member's
// own, which then prefills only the prompt's last token. Each choice still equals the same
// request alone (the simulated executor checks every KV read against the reader's own
// sequence, so a wrong or missing copy fails the step).
TEST(PromptShare, AShortPromptsPartlyFilledBlockIsCopiedSoEachChoicePrefillsOneToken) {
  for (const std::string& prompt :
       {std::string("abcdefghij"), std::string(16, 's'), std::string(16, 'f') + "abcdefghi"}) {
    const auto p = static_cast<uint64_t>(prompt.size());
    const std::vector<std::string> alone = texts_alone(prompt, 8, 4);
    for (bool overlap : {false, true}) {
      for (bool cache : {false, true}) {
        SchedulerOptions options;
        options.overlap = overlap;
        options.prefix_cache = cache;
        Harness h(options, 64);
        auto sinks = h.submit_choices(prompt, 8, 4);
        const int32_t most = h.drain();
        // 10 tokens: every choice prefilled 10 positions before; now the leader does, and
        // each of the 7 others only its last token.
        EXPECT_EQ(h.scheduler.metrics().prompt_tokens, p + 7u) << prompt;
        const int32_t full = static_cast<int32_t>((p - 1) / 16);  // shared by reference
        const int32_t own = static_cast<int32_t>((p + 4 + 15) / 16) - full;
        EXPECT_EQ(most, full + 8 * own) << prompt;
        EXPECT_EQ(h.scheduler.metrics().kv_blocks_used, 0);
        for (int i = 0; i < 8; ++i) {
          EXPECT_EQ(sinks[i]->text(), alone[i]) << prompt << " choice " << i;
          EXPECT_EQ(sinks[i]->usage().prompt_tokens, static_cast<int32_t>(p));
          EXPECT_EQ(sinks[i]->usage().cached_tokens, cache && i > 0 ? full * 16 : 0);
        }
      }
    }
  }
}

// Every choice is the request it would be alone, whatever the loop, the cache, the step
// budget (chunked prefill of the shared part) or a pool so small that choices are
// preempted and recompute alone.
TEST(PromptShare, EachChoiceEqualsTheSameRequestAlone) {
  const std::string prompt = std::string(40, 'x') + "abcdefghijklmnopqrstuvw";  // 63 tokens
  const std::vector<std::string> alone = texts_alone(prompt, 6, 30);
  for (const std::string& text : alone) ASSERT_EQ(text.size(), 30u);
  for (bool overlap : {false, true}) {
    for (bool cache : {false, true}) {
      for (int32_t kv_blocks : {64, 12}) {
        SchedulerOptions options;
        options.overlap = overlap;
        options.prefix_cache = cache;
        options.max_step_tokens = 24;
        Harness h(options, kv_blocks);
        auto sinks = h.submit_choices(prompt, 6, 30);
        h.drain();
        for (int i = 0; i < 6; ++i) {
          EXPECT_EQ(sinks[i]->text(), alone[i]) << "overlap " << overlap << " cache " << cache
                                                << " blocks " << kv_blocks << " choice " << i;
          EXPECT_EQ(sinks[i]->events_after_end(), 0);
        }
        if (kv_blocks == 12) {
          EXPECT_GT(h.scheduler.metrics().preemptions, 0u);
        }
        EXPECT_EQ(h.scheduler.metrics().kv_blocks_used, 0);
      }
    }
  }
}

// Cancelling members while they wait for the leader, or the leader itself mid-prefill,
// leaves nothing held and the others still finish.
TEST(PromptShare, CancelledMembersAndLeaderGiveEveryBlockBack) {
  SchedulerOptions options;
  options.max_step_tokens = 16;
  options.prefix_cache = false;
  Harness h(options, 64);
  auto sinks = h.submit_choices(std::string(70, 'c'), 4, 5);
  h.scheduler.run_once();  // the leader's first chunk
  h.scheduler.cancel(1);   // the leader
  h.scheduler.cancel(3);   // a member waiting
  h.drain();
  EXPECT_EQ(sinks[0]->reason(), FinishReason::kCancelled);
  EXPECT_EQ(sinks[2]->reason(), FinishReason::kCancelled);
  EXPECT_EQ(sinks[1]->usage().completion_tokens, 5);
  EXPECT_EQ(sinks[3]->usage().completion_tokens, 5);
  EXPECT_EQ(h.scheduler.metrics().kv_blocks_used, 0);
}

TEST(PromptShare, AListIsRefusedWholeWhenTheQueueCannotHoldIt) {
  SchedulerOptions options;
  options.max_queue = 3;
  Harness h(options, 64);
  std::vector<GenerationRequest> list;
  for (int i = 0; i < 4; ++i)
    list.push_back(h.request("abc", i, 2, std::make_shared<RecordingSink>()));
  const SubmitResult refused = h.scheduler.submit(std::move(list));
  EXPECT_EQ(refused.refusal, ErrorKind::kOverloaded);
  EXPECT_TRUE(h.scheduler.drained());
}

}  // namespace
}  // namespace tandem::TANDEM_UNITY_ID
