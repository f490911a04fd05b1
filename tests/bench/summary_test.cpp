// The report's arithmetic on data whose answers are known by hand.
#include "bench/summary.h"

#include <gtest/gtest.h>

namespace tandem::bench::TANDEM_UNITY_ID {
namespace {

TEST(Percentile, InterpolatesBetweenClosestRanksLikeNumpy) {
  const std::vector<double> sorted = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  EXPECT_DOUBLE_EQ(percentile(sorted, 0), 1);
  EXPECT_DOUBLE_EQ(percentile(sorted, 50), 5.5);
  EXPECT_DOUBLE_EQ(percentile(sorted, 90), 9.1);
  EXPECT_DOUBLE_EQ(percentile(sorted, 99), 9.91);
  EXPECT_DOUBLE_EQ(percentile(sorted, 100), 10);
}

TEST(Percentile, OfOneValueIsThatValueAndOfNoneIsZero) {
  EXPECT_DOUBLE_EQ(percentile({7}, 99), 7);
  EXPECT_DOUBLE_EQ(percentile({}, 50), 0);
}

TEST(Distribution, SortsItsSampleAndReportsMeanAndTails) {
  const Distribution d = distribution({10, 0, 30, 20});
  EXPECT_EQ(d.count, 4);
  EXPECT_DOUBLE_EQ(d.mean, 15);
  EXPECT_DOUBLE_EQ(d.p50, 15);
  EXPECT_DOUBLE_EQ(d.p90, 27);
  EXPECT_DOUBLE_EQ(d.min, 0);
  EXPECT_DOUBLE_EQ(d.max, 30);
}

RequestRecord streamed(double ttft, double e2e, int64_t out, std::vector<double> itl) {
  RequestRecord r;
  r.ok = true;
  r.streamed = true;
  r.ttft = ttft;
  r.e2e = e2e;
  r.prompt_tokens = 10;
  r.output_tokens = out;
  r.itl = std::move(itl);
  return r;
}

TEST(Summarize, TpotLeavesOutTheFirstTokenAndItlPoolsEveryGap) {
  // 0.1 s to the first token, then 4 more tokens over 0.4 s: 100 ms per output token.
  const RequestRecord a = streamed(0.1, 0.5, 5, {0.1, 0.1, 0.1, 0.1});
  // 0.2 s, then 2 more over 0.1 s: 50 ms.
  const RequestRecord b = streamed(0.2, 0.3, 3, {0.04, 0.06});
  const RunSummary s = summarize({a, b}, 2.0);
  EXPECT_EQ(s.completed, 2);
  EXPECT_EQ(s.failed, 0);
  EXPECT_EQ(s.output_tokens, 8);
  EXPECT_EQ(s.prompt_tokens, 20);
  EXPECT_DOUBLE_EQ(s.requests_per_second, 1.0);
  EXPECT_DOUBLE_EQ(s.output_tokens_per_second, 4.0);
  EXPECT_DOUBLE_EQ(s.total_tokens_per_second, 14.0);
  EXPECT_NEAR(s.tpot_ms.mean, 75, 1e-9);
  EXPECT_NEAR(s.ttft_ms.mean, 150, 1e-9);
  EXPECT_EQ(s.itl_ms.count, 6);
  EXPECT_NEAR(s.itl_ms.max, 100, 1e-9);
  EXPECT_NEAR(s.itl_ms.min, 40, 1e-9);
  EXPECT_NEAR(s.e2e_ms.mean, 400, 1e-9);
}

TEST(Summarize, FailedRequestsCountButAddNoTokensOrTimings) {
  RequestRecord failed;
  failed.error = "HTTP 503";
  failed.output_tokens = 99;
  failed.e2e = 9;
  const RunSummary s = summarize({streamed(0.1, 0.2, 2, {0.1}), failed}, 1.0);
  EXPECT_EQ(s.completed, 1);
  EXPECT_EQ(s.failed, 1);
  EXPECT_EQ(s.output_tokens, 2);
  EXPECT_EQ(s.e2e_ms.count, 1);
  EXPECT_EQ(s.first_error, "HTTP 503");
}

// The prompt tokens the server's cache served, summed over completed requests; -1 (shown
// as "-") when no response said, so a server without the field is not reported as 0.
TEST(Summarize, CachedPromptTokensAddUpOnlyWhereReported) {
  RequestRecord a = streamed(0.1, 0.2, 2, {0.1}), b = a, silent = a, failed;
  a.cached_tokens = 16;
  b.cached_tokens = 0;
  failed.cached_tokens = 99;
  EXPECT_EQ(summarize({a, b, silent, failed}, 1.0).cached_prompt_tokens, 16);
  EXPECT_EQ(summarize({silent, failed}, 1.0).cached_prompt_tokens, -1);
}

TEST(Summarize, WholeResponsesHaveLatencyButNoTokenTimings) {
  RequestRecord whole;
  whole.ok = true;
  whole.e2e = 0.5;
  whole.output_tokens = 10;
  const RunSummary s = summarize({whole}, 1.0);
  EXPECT_EQ(s.e2e_ms.count, 1);
  EXPECT_EQ(s.ttft_ms.count, 0);
  EXPECT_EQ(s.tpot_ms.count, 0);
  EXPECT_EQ(s.output_tokens, 10);
}

TEST(Summarize, ASingleTokenResponseHasNoTpot) {
  const RunSummary s = summarize({streamed(0.1, 0.1, 1, {})}, 1.0);
  EXPECT_EQ(s.ttft_ms.count, 1);
  EXPECT_EQ(s.tpot_ms.count, 0);
}

}  // namespace
}  // namespace tandem::bench::TANDEM_UNITY_ID
