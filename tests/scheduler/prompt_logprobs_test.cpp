// Prompt logprobs (echo with logprobs) reach the sink once per prompt position, in order,
// however the prefill is chunked and even when the request is preempted mid-prefill and
// recomputes its prompt: before, the positions scored before the preemption stayed and
// the whole prompt came again (a second null first entry), so the response's token list
// was longer than the prompt and its offsets ran past the text.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "scheduler/scheduler.h"
#include "tests/scheduler/scheduler_test_support.h"

namespace tandem::TANDEM_UNITY_ID {
namespace {

using testing::ByteTokenizer;
using testing::fake_device_info;
using testing::RecordingSink;
using testing::ScriptedExecutor;

int32_t letter(uint64_t id, int32_t position) {
  return 'a' + static_cast<int32_t>((id * 5 + static_cast<uint64_t>(position) * 11) % 26);
}

// Scores each prompt position from (position, token) alone, as the laws make the real
// model's scores independent of the batch and the chunking: a position scored twice gets
// the same value, and a value from the wrong position differs.
class ScoringExecutor : public ScriptedExecutor {
 public:
  explicit ScoringExecutor(DeviceInfo info) : ScriptedExecutor(letter, info) {}
  static float score(int64_t position, int32_t token) {
    return -0.001f * static_cast<float>(position) - 1e-6f * static_cast<float>(token);
  }
  void execute_step(const StepPlan& plan, StepResult& result) override {
    execute(plan, result.tokens);
    result.prompt_logprobs.assign(plan.rows.size(), {});
    for (size_t i = 0; i < plan.rows.size(); ++i) {
      const StepRow& row = plan.rows[i];
      if (row.sampling.prompt_logprobs < 0) continue;
      const auto count = static_cast<int64_t>(row.tokens.size());
      for (int64_t j = 0; j < count; ++j) {  // token j's logits score token j + 1
        const int32_t target =
            j + 1 < count ? row.tokens[j + 1] : (row.sample ? -1 : row.next_prompt_token);
        if (target < 0) continue;
        RowLogprobs scored;
        scored.chosen = {target, score(row.position + j + 1, target)};
        result.prompt_logprobs[i].push_back(scored);
      }
    }
  }
};

class ScoreSink : public RecordingSink {
 public:
  void on_prompt_logprobs(std::span<const TokenLogprobs> logprobs) override {
    entries.insert(entries.end(), logprobs.begin(), logprobs.end());
  }
  std::vector<TokenLogprobs> entries;  // read once the scheduler has drained
};

// window > 0: the model has sliding-window layers of that window, in a local KV group of
// kv_blocks blocks.
DeviceInfo scoring_device(int32_t kv_blocks, int32_t window) {
  DeviceInfo info = fake_device_info(256, kv_blocks);
  if (window > 0) {
    info.kv_local_blocks = kv_blocks;
    info.sliding_window = window;
  }
  return info;
}

struct Harness {
  Harness(SchedulerOptions options, int32_t kv_blocks, int32_t window = 0)
      : device(std::make_unique<ScoringExecutor>(scoring_device(kv_blocks, window))),
        scheduler(device, tokenizer, std::move(options)) {}
  std::shared_ptr<ScoreSink> submit(const std::string& prompt, int32_t max_tokens, bool score) {
    auto sink = std::make_shared<ScoreSink>();
    GenerationRequest r;
    r.prompt.assign(prompt.begin(), prompt.end());
    r.max_tokens = max_tokens;
    if (score) r.sampling.prompt_logprobs = 0;
    r.sink = sink;
    EXPECT_TRUE(scheduler.submit(std::move(r)).accepted());
    return sink;
  }
  // n requests of one submit (n choices) with the same scored prompt, top count `top`
  // for all but the last, which asks `last_top`.
  std::vector<std::shared_ptr<ScoreSink>> submit_choices(const std::string& prompt, int n,
                                                         int32_t top, int32_t last_top,
                                                         std::vector<uint64_t>* ids = nullptr) {
    std::vector<std::shared_ptr<ScoreSink>> sinks;
    std::vector<GenerationRequest> list;
    for (int i = 0; i < n; ++i) {
      sinks.push_back(std::make_shared<ScoreSink>());
      GenerationRequest r;
      r.prompt.assign(prompt.begin(), prompt.end());
      r.max_tokens = 4;
      r.sampling.seed = 1000 + static_cast<uint64_t>(i);
      r.sampling.prompt_logprobs = i + 1 < n ? top : last_top;
      r.sink = sinks.back();
      list.push_back(std::move(r));
    }
    const SubmitResult accepted = scheduler.submit(std::move(list));
    EXPECT_TRUE(accepted.accepted());
    if (ids) *ids = accepted.ids;
    return sinks;
  }
  void drain() {
    for (int i = 0; i < 100000 && !scheduler.drained(); ++i) scheduler.run_once();
    ASSERT_TRUE(scheduler.drained());
  }

  ByteTokenizer tokenizer;
  Device device;
  Scheduler scheduler;
};

// A decoding request admitted first, then a 120-token scored prompt prefilled 12 tokens a
// step. In a 9-block pool the scored prompt's 8 blocks fill it, so the first request's
// second block preempts it mid-prefill; it recomputes its whole prompt once the first one
// is done. Its sink still gets 120 entries, each position's token and score, as a roomy
// pool (no preemption) gives them.
TEST(PromptLogprobs, APromptPreemptedMidPrefillIsScoredOncePerPosition) {
  std::string prompt;
  for (int i = 0; i < 120; ++i) prompt += static_cast<char>('A' + i % 50);
  for (bool overlap : {false, true}) {
    SchedulerOptions options;
    options.overlap = overlap;
    options.max_step_tokens = 12;
    Harness roomy(options, 64), tight(options, 9);
    roomy.submit("0123456789", 40, false);
    tight.submit("0123456789", 40, false);
    auto want = roomy.submit(prompt, 4, true);
    auto got = tight.submit(prompt, 4, true);
    roomy.drain();
    tight.drain();
    EXPECT_EQ(roomy.scheduler.metrics().preemptions, 0u);
    EXPECT_GT(tight.scheduler.metrics().preemptions, 0u);
    // The preempted prompt was computed twice in part: more prompt tokens than 10 + 120.
    EXPECT_GT(tight.scheduler.metrics().prompt_tokens, 130u);
    ASSERT_EQ(want->entries.size(), prompt.size());
    ASSERT_EQ(got->entries.size(), prompt.size()) << "overlap " << overlap;
    EXPECT_TRUE(std::isnan(got->entries[0].chosen.logprob));
    for (size_t p = 0; p < prompt.size(); ++p) {
      EXPECT_EQ(got->entries[p].chosen.token, std::string(1, prompt[p])) << p;
      if (p == 0) continue;
      EXPECT_EQ(got->entries[p].chosen.logprob, want->entries[p].chosen.logprob) << p;
      EXPECT_EQ(got->entries[p].chosen.logprob,
                ScoringExecutor::score(static_cast<int64_t>(p), prompt[p]))
          << p;
    }
    EXPECT_EQ(got->text(), want->text());
    EXPECT_EQ(got->usage().completion_tokens, 4);
  }
}

// Each entry as the request computed alone scores it.
void expect_scores(const std::vector<TokenLogprobs>& got, const std::string& prompt,
                   const std::string& what) {
  ASSERT_EQ(got.size(), prompt.size()) << what;
  EXPECT_TRUE(std::isnan(got[0].chosen.logprob)) << what;
  for (size_t p = 0; p < prompt.size(); ++p) {
    EXPECT_EQ(got[p].chosen.token, std::string(1, prompt[p])) << what << " " << p;
    if (p == 0) continue;
    EXPECT_EQ(got[p].chosen.logprob, ScoringExecutor::score(static_cast<int64_t>(p), prompt[p]))
        << what << " " << p;
  }
}

// n choices of an echoed, scored prompt compute it once (issue 16: "the prompt is prefilled
// once"): the first admitted scores and writes it, the others take its blocks and its
// scores, and compute only their last position. Before, each scoring choice computed the
// whole prompt (QA: n 16 on a 1,900-token prompt took 14 s against 1 s for n 1). A choice
// asking another top count computes alone. Each choice's entries are its prompt's alone (the
// executor's texts depend on the request id here; PromptShare.* holds the texts). With
// sliding-window layers the share ends at the last full block (112 of 120 here): each
// member computes the 8 positions after it and scores 7 of them itself.
TEST(PromptLogprobs, ChoicesOfAScoredPromptComputeItOnce) {
  std::string prompt;
  for (int i = 0; i < 120; ++i) prompt += static_cast<char>('A' + i % 50);
  for (int32_t window : {0, 20})
    for (bool overlap : {false, true}) {
      for (int32_t step_tokens : {12, 512}) {
        SchedulerOptions options;
        options.overlap = overlap;
        options.max_step_tokens = step_tokens;
        const std::string what = "window " + std::to_string(window) + " overlap " +
                                 std::to_string(overlap) + " step " + std::to_string(step_tokens);
        Harness shared(options, 64, window), mixed(options, 64, window);
        auto choices = shared.submit_choices(prompt, 4, 0, 0);
        auto other = mixed.submit_choices(prompt, 3, 0, 1);  // the last asks one top entry
        shared.drain();
        mixed.drain();
        for (size_t i = 0; i < choices.size(); ++i) {
          expect_scores(choices[i]->entries, prompt, what + " choice " + std::to_string(i));
          EXPECT_EQ(choices[i]->usage().completion_tokens, 4) << what;
        }
        for (size_t i = 0; i < other.size(); ++i)
          expect_scores(other[i]->entries, prompt, what + " mixed " + std::to_string(i));
        // 120 positions once, then each member those after the share (its last, for its own
        // logits; with the window, the partly filled block too).
        const uint64_t own = window > 0 ? 120 - 112 : 1;
        EXPECT_EQ(shared.scheduler.metrics().prompt_tokens, 120u + 3 * own) << what;
        EXPECT_EQ(mixed.scheduler.metrics().prompt_tokens, 120u + own + 120u) << what;
      }
    }
}

// A scored share's leader cancelled at any point of its prefill (before it starts, mid-way,
// with its last shared chunk in flight, after publishing) or preempted by a decoding
// request in a tight pool leaves every other choice its prompt's entries exactly once: the
// next member leads from the start, a published share serves its scores, and a member that
// once led resumes from the first entry it had not sent.
TEST(PromptLogprobs, ACancelledOrPreemptedLeaderLeavesEveryChoiceWhole) {
  std::string prompt;
  for (int i = 0; i < 120; ++i) prompt += static_cast<char>('a' + i % 26);
  for (int32_t window : {0, 20}) {
    for (bool overlap : {false, true}) {
      SchedulerOptions options;
      options.overlap = overlap;
      options.max_step_tokens = 12;
      const std::string what =
          "window " + std::to_string(window) + " overlap " + std::to_string(overlap);
      for (int turns = 0; turns < 16; ++turns) {
        Harness h(options, 64, window);
        std::vector<uint64_t> ids;
        auto choices = h.submit_choices(prompt, 3, 2, 2, &ids);
        ASSERT_EQ(ids.size(), 3u);
        for (int i = 0; i < turns; ++i) h.scheduler.run_once();
        h.scheduler.cancel(ids[0]);
        h.drain();
        for (size_t i = 1; i < choices.size(); ++i)
          expect_scores(
              choices[i]->entries, prompt,
              what + " cancel after " + std::to_string(turns) + " choice " + std::to_string(i));
      }
      uint64_t preemptions = 0;
      for (int32_t blocks = 9; blocks <= 20; ++blocks) {
        Harness h(options, blocks, window);
        h.submit("0123456789", 40, false);
        auto choices = h.submit_choices(prompt, 3, 2, 2);
        h.drain();
        preemptions += h.scheduler.metrics().preemptions;
        for (size_t i = 0; i < choices.size(); ++i)
          expect_scores(choices[i]->entries, prompt,
                        what + " pool " + std::to_string(blocks) + " choice " + std::to_string(i));
      }
      EXPECT_GT(preemptions, 0u) << what;
    }
  }
}

}  // namespace
}  // namespace tandem::TANDEM_UNITY_ID
