// min_tokens, stop_token_ids, include_stop_str_in_output and skip_special_tokens, as the
// scheduler honours them (the sampler's ban is tested in tests/runner/sampler).
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "scheduler/scheduler.h"
#include "tests/scheduler/scheduler_test_support.h"

namespace tandem::TANDEM_UNITY_ID {
namespace {

using testing::ByteTokenizer;
using testing::fake_device_info;
using testing::kFakeEos;
using testing::RecordingSink;

// Draws `script(position)`, except that where the row says EOG and stop ids are banned
// (min_tokens) an EOS or a stop id becomes 'b': a device that honours stop_banned_until,
// chained steps included, as the CPU executor's sampler does.
class BanHonouringExecutor : public StepExecutor {
 public:
  explicit BanHonouringExecutor(std::function<int32_t(int32_t)> script)
      : script_(std::move(script)) {}
  DeviceInfo info() const override { return fake_device_info(); }
  void execute(const StepPlan& plan, std::span<int32_t> tokens) override {
    for (size_t i = 0; i < plan.rows.size(); ++i) {
      const StepRow& row = plan.rows[i];
      if (!row.sample) continue;
      const int32_t position = row.position + static_cast<int32_t>(row.tokens.size());
      int32_t token = script_(position);
      const auto& ids = row.sampling.stop_token_ids;
      const bool stop_like =
          token == kFakeEos || std::find(ids.begin(), ids.end(), token) != ids.end();
      if (stop_like && position < row.stop_banned_until) token = 'b';
      tokens[i] = token;
    }
  }

 private:
  std::function<int32_t(int32_t)> script_;
};

struct Outcome {
  std::string text;
  std::optional<FinishReason> reason;
  int64_t completion_tokens = 0;
};

Outcome generate(std::function<int32_t(int32_t)> script, GenerationRequest request, bool overlap,
                 std::function<double()> clock = {}) {
  ByteTokenizer tokenizer;
  Device device(std::make_unique<BanHonouringExecutor>(std::move(script)));
  SchedulerOptions options;
  options.overlap = overlap;
  options.clock = std::move(clock);
  Scheduler scheduler(device, tokenizer, options);
  auto sink = std::make_shared<RecordingSink>();
  if (request.prompt.empty()) request.prompt.assign(4, 'p');
  request.sink = sink;
  EXPECT_TRUE(scheduler.submit(std::move(request)).accepted());
  for (int i = 0; i < 10000 && !scheduler.drained(); ++i) scheduler.run_once();
  EXPECT_TRUE(scheduler.drained());
  return Outcome{sink->text(), sink->reason(), sink->usage().completion_tokens};
}

// The prompt is 4 tokens, so generated token k (from 1) sits at position 3 + k.
int32_t at_token(int32_t position) { return position - 3; }

TEST(StopControls, MinTokensKeepsEosAndStopIdsOutUntilItIsReached) {
  for (bool overlap : {true, false}) {
    GenerationRequest r;
    r.max_tokens = 20;
    r.sampling.min_tokens = 5;
    r.sampling.stop_token_ids = {'s'};
    // The device would end at once: EOS at token 1, 's' at token 2, then EOS.
    const Outcome run =
        generate([](int32_t p) { return at_token(p) == 2 ? int32_t{'s'} : kFakeEos; }, r, overlap);
    // Tokens 1..5 were banned from being EOS or 's' (so 'b'); token 6 is EOS.
    EXPECT_EQ(run.text, "bbbbb") << overlap;
    EXPECT_EQ(run.reason, FinishReason::kStop);
    EXPECT_EQ(run.completion_tokens, 6);
  }
}

TEST(StopControls, MinTokensHoldsStopStringsBackUntilItIsReached) {
  GenerationRequest r;
  r.max_tokens = 20;
  r.sampling.min_tokens = 4;
  r.stop = {"x"};
  const Outcome run = generate([](int32_t) { return int32_t{'x'}; }, r, true);
  // "x" completes at tokens 1..3 but min_tokens is 4: the 4th token's "x" ends it.
  EXPECT_EQ(run.text, "xxx");
  EXPECT_EQ(run.reason, FinishReason::kStop);
  EXPECT_EQ(run.completion_tokens, 4);
}

TEST(StopControls, AStopTokenIdEndsWithStopAndItsTextIsLeftOut) {
  for (bool include : {false, true}) {
    GenerationRequest r;
    r.max_tokens = 20;
    r.sampling.stop_token_ids = {'!'};
    r.include_stop_str_in_output = include;
    const Outcome run =
        generate([](int32_t p) { return at_token(p) == 3 ? int32_t{'!'} : int32_t{'a'}; }, r, true);
    EXPECT_EQ(run.text, include ? "aa!" : "aa");
    EXPECT_EQ(run.reason, FinishReason::kStop);
    EXPECT_EQ(run.completion_tokens, 3);
  }
}

TEST(StopControls, AStopTokenIdEndsEvenWithIgnoreEos) {
  GenerationRequest r;
  r.max_tokens = 20;
  r.sampling.ignore_eos = true;
  r.sampling.stop_token_ids = {kFakeEos};
  const Outcome run =
      generate([](int32_t p) { return at_token(p) == 2 ? kFakeEos : int32_t{'a'}; }, r, true);
  EXPECT_EQ(run.text, "a");
  EXPECT_EQ(run.reason, FinishReason::kStop);
}

TEST(StopControls, IncludeStopStrInOutputKeepsTheStopString) {
  for (bool include : {false, true}) {
    GenerationRequest r;
    r.max_tokens = 20;
    r.stop = {"cd"};
    r.include_stop_str_in_output = include;
    const Outcome run =
        generate([](int32_t p) { return int32_t{"abcdef"[(at_token(p) - 1) % 6]}; }, r, true);
    EXPECT_EQ(run.text, include ? "abcd" : "ab");
    EXPECT_EQ(run.reason, FinishReason::kStop);
  }
}

TEST(StopControls, SkipSpecialTokensFalseEmitsTheirText) {
  for (bool skip : {true, false}) {
    GenerationRequest r;
    r.max_tokens = 3;
    r.sampling.ignore_eos = true;  // EOS is generated as a token, not an end
    r.skip_special_tokens = skip;
    const Outcome run =
        generate([](int32_t p) { return at_token(p) == 2 ? kFakeEos : int32_t{'a'}; }, r, true);
    EXPECT_EQ(run.text, skip ? "aa" : "a</s>a");
    EXPECT_EQ(run.reason, FinishReason::kLength);
  }
}

TEST(StopControls, MaxTokensZeroPrefillsAndFinishesWithLengthWithoutAToken) {
  GenerationRequest r;
  r.max_tokens = 0;
  r.prompt.assign(40, 'p');  // more than one chunk with max_step_tokens 16
  ByteTokenizer tokenizer;
  Device device(std::make_unique<BanHonouringExecutor>([](int32_t) { return int32_t{'x'}; }));
  SchedulerOptions options;
  options.max_step_tokens = 16;
  Scheduler scheduler(device, tokenizer, options);
  auto sink = std::make_shared<RecordingSink>();
  r.sink = sink;
  ASSERT_TRUE(scheduler.submit(std::move(r)).accepted());
  for (int i = 0; i < 100 && !scheduler.drained(); ++i) scheduler.run_once();
  ASSERT_TRUE(scheduler.drained());
  EXPECT_EQ(sink->text(), "");
  EXPECT_EQ(sink->reason(), FinishReason::kLength);
  EXPECT_EQ(sink->usage().prompt_tokens, 40);
  EXPECT_EQ(sink->usage().completion_tokens, 0);
  const SchedulerMetrics m = scheduler.metrics();
  EXPECT_EQ(m.steps, 3u);  // 16 + 16 + 8 prompt tokens, no decode step
  EXPECT_EQ(m.kv_blocks_used, 0);
}

// Generated token k (from 1) is text[k - 1], then 'z' past its end.
std::function<int32_t(int32_t)> spelling(std::string text) {
  return [text](int32_t position) {
    const int32_t k = at_token(position);
    return k <= static_cast<int32_t>(text.size()) ? int32_t{static_cast<unsigned char>(text[k - 1])}
                                                  : int32_t{'z'};
  };
}

TEST(StopControls, IndentLimitCutsTheFirstShortLineAndCountsItsTokens) {
  for (bool overlap : {true, false}) {
    GenerationRequest r;
    r.max_tokens = 40;
    r.min_indent = 4;
    const Outcome run = generate(spelling("a\n    b\n  c\nd\n"), r, overlap);
    EXPECT_EQ(run.text, "a\n    b\n  ") << overlap;
    EXPECT_EQ(run.reason, FinishReason::kLength) << overlap;
    EXPECT_EQ(run.completion_tokens, 11) << overlap;  // through the 'c' that decided it
    r.min_indent = 0;
    EXPECT_EQ(generate(spelling("a\n    b\n  c\nd\n"), r, overlap).text.substr(0, 14),
              "a\n    b\n  c\nd\n")
        << overlap;
  }
}

TEST(StopControls, TimeLimitEndsAtTheNextNewlineAfterIt) {
  for (bool overlap : {true, false}) {
    // A clock one second further on at every reading: from the second token on, the
    // generation has run past any limit of a millisecond or more.
    auto ticking = [] {
      auto now = std::make_shared<double>(0.0);
      return [now] { return *now += 1.0; };
    };
    GenerationRequest r;
    r.max_tokens = 20;
    r.time_limit_ms = 5;
    const Outcome run = generate(spelling("ab\ncd\nef"), r, overlap, ticking());
    EXPECT_EQ(run.text, "ab\n") << overlap;
    EXPECT_EQ(run.reason, FinishReason::kLength) << overlap;
    r.time_limit_ms = 0;
    const Outcome untimed = generate(spelling("ab\ncd\nef"), r, overlap, ticking());
    EXPECT_EQ(untimed.completion_tokens, 20) << overlap;
  }
}

// What vLLM's stop_reason reports: the stop token (not when it is also an end of generation,
// nor when a stop string ended the output) or the stop string, just before the finish.
class StopCauseSink : public RecordingSink {
 public:
  void on_stop_token(int32_t token) override { tokens.push_back(token); }
  void on_stop_string(std::string_view stop) override { strings.emplace_back(stop); }
  std::vector<int32_t> tokens;
  std::vector<std::string> strings;
};

std::shared_ptr<StopCauseSink> stop_cause(std::function<int32_t(int32_t)> script,
                                          GenerationRequest request) {
  ByteTokenizer tokenizer;
  Device device(std::make_unique<BanHonouringExecutor>(std::move(script)));
  Scheduler scheduler(device, tokenizer);
  auto sink = std::make_shared<StopCauseSink>();
  request.prompt.assign(4, 'p');
  request.max_tokens = 20;
  request.sink = sink;
  EXPECT_TRUE(scheduler.submit(std::move(request)).accepted());
  for (int i = 0; i < 10000 && !scheduler.drained(); ++i) scheduler.run_once();
  EXPECT_TRUE(sink->ended());
  return sink;
}

TEST(StopControls, TheStopTokenOrStringThatEndedTheOutputIsReported) {
  auto bang_at_3 = [](int32_t p) { return at_token(p) == 3 ? int32_t{'!'} : int32_t{'a'}; };
  for (bool include : {false, true}) {
    GenerationRequest r;
    r.sampling.stop_token_ids = {'!'};
    r.include_stop_str_in_output = include;
    const auto sink = stop_cause(bang_at_3, r);
    EXPECT_EQ(sink->tokens, std::vector<int32_t>{'!'}) << include;
    EXPECT_TRUE(sink->strings.empty());
  }
  GenerationRequest by_string;
  by_string.stop = {"a!"};
  by_string.sampling.stop_token_ids = {'z'};
  const auto string_sink = stop_cause(bang_at_3, by_string);
  EXPECT_EQ(string_sink->strings, std::vector<std::string>{"a!"});
  EXPECT_TRUE(string_sink->tokens.empty());
  // EOS listed as a stop token is still EOS: no reason, as vLLM reports none for EOS.
  GenerationRequest eos;
  eos.sampling.stop_token_ids = {kFakeEos};
  const auto eos_sink =
      stop_cause([](int32_t p) { return at_token(p) == 2 ? kFakeEos : int32_t{'a'}; }, eos);
  EXPECT_EQ(eos_sink->reason(), FinishReason::kStop);
  EXPECT_TRUE(eos_sink->tokens.empty());
  // ...unless EOS is ignored: then only the stop token ends the output.
  eos.sampling.ignore_eos = true;
  const auto ignored =
      stop_cause([](int32_t p) { return at_token(p) == 2 ? kFakeEos : int32_t{'a'}; }, eos);
  EXPECT_EQ(ignored->tokens, std::vector<int32_t>{kFakeEos});
}

}  // namespace
}  // namespace tandem::TANDEM_UNITY_ID
