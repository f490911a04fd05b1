// ChoiceTimings: llama-server's timings of each choice from its admission, outputs and
// finish at given times, and of the whole generation; off, it gives none.
#include "server/choice_timings.h"

#include <gtest/gtest.h>

#include <chrono>

#include "protocol/llama_timings.h"

namespace tandem::server::TANDEM_UNITY_ID {
namespace {

using Clock = ChoiceTimings::Clock;
using std::chrono::milliseconds;

TEST(ChoiceTimings, CountFromAcceptanceToTheFirstOutputAndFromThereToTheLatest) {
  const Clock::time_point t0{};
  ChoiceTimings timings(t0, {100, 100});
  ASSERT_TRUE(timings.on());
  timings.cached(0, 64);
  timings.output(0, 1, t0 + milliseconds(250));
  timings.output(0, 3, t0 + milliseconds(350));
  const LlamaTimings* a = timings.of(0);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->cache_n, 64);
  EXPECT_EQ(a->prompt_n, 36);
  EXPECT_DOUBLE_EQ(a->prompt_ms, 250);
  EXPECT_EQ(a->predicted_n, 4);
  EXPECT_DOUBLE_EQ(a->predicted_ms, 100);
  // The finish's usage is the last word: its counts replace the running ones.
  timings.finished(0, Usage{100, 5, 64}, t0 + milliseconds(450));
  EXPECT_EQ(timings.of(0)->predicted_n, 5);
  EXPECT_DOUBLE_EQ(timings.of(0)->predicted_ms, 200);
  // A choice with no text: its first output is its end.
  timings.finished(1, Usage{100, 1, 0}, t0 + milliseconds(300));
  EXPECT_DOUBLE_EQ(timings.of(1)->prompt_ms, 300);
  EXPECT_DOUBLE_EQ(timings.of(1)->predicted_ms, 0);
  const auto whole = timings.whole(Usage{100, 6, 64});
  ASSERT_TRUE(whole.has_value());
  EXPECT_EQ(whole->prompt_n, 36);
  EXPECT_EQ(whole->predicted_n, 6);
  EXPECT_DOUBLE_EQ(whole->prompt_ms, 250);     // the first output of any choice
  EXPECT_DOUBLE_EQ(whole->predicted_ms, 200);  // to the latest
}

TEST(ChoiceTimings, OffGivesNone) {
  ChoiceTimings off;
  off.cached(0, 3);
  off.output(0, 1, Clock::now());
  EXPECT_EQ(off.of(0), nullptr);
  EXPECT_FALSE(off.whole(Usage{1, 1, 0}).has_value());
}

TEST(LlamaTimingsJson, DerivesTheRatesAsLlamaServerDoes) {
  const auto t = timings_json(LlamaTimings{64, 36, 250, 4, 100});
  EXPECT_EQ(t["cache_n"], 64);
  EXPECT_DOUBLE_EQ(t["prompt_per_second"].get<double>(), 144);
  EXPECT_DOUBLE_EQ(t["prompt_per_token_ms"].get<double>(), 250.0 / 36);
  EXPECT_DOUBLE_EQ(t["predicted_per_second"].get<double>(), 40);
  EXPECT_DOUBLE_EQ(t["predicted_per_token_ms"].get<double>(), 25);
  const auto none = timings_json(LlamaTimings{});
  EXPECT_EQ(none["predicted_per_second"], 0.0);  // no data: 0, not a division by zero
}

}  // namespace
}  // namespace tandem::server::TANDEM_UNITY_ID
