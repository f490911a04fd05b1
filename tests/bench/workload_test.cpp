// The workload is a pure function of its settings: arrivals have the statistics asked for,
// prompts have exactly the lengths asked for, and the same seed gives the same requests.
#include "bench/workload.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

namespace tandem::bench::TANDEM_UNITY_ID {
namespace {

struct GapStats {
  double mean = 0, cv = 0;  // coefficient of variation: stddev / mean
};

GapStats gap_stats(const std::vector<double>& arrivals) {
  std::vector<double> gaps(arrivals.size());
  std::adjacent_difference(arrivals.begin(), arrivals.end(), gaps.begin());
  const double n = static_cast<double>(gaps.size());
  const double mean = std::accumulate(gaps.begin(), gaps.end(), 0.0) / n;
  double var = 0;
  for (double g : gaps) var += (g - mean) * (g - mean);
  return {mean, std::sqrt(var / n) / mean};
}

TEST(ArrivalOffsets, PoissonGapsHaveMeanOneOverRateAndUnitVariation) {
  const std::vector<double> arrivals = arrival_offsets(20000, 8.0, 1.0, 7);
  ASSERT_EQ(arrivals.size(), 20000u);
  EXPECT_TRUE(std::is_sorted(arrivals.begin(), arrivals.end()));
  EXPECT_GT(arrivals.front(), 0);
  const GapStats s = gap_stats(arrivals);
  EXPECT_NEAR(s.mean, 1.0 / 8.0, 0.125 * 0.03);
  EXPECT_NEAR(s.cv, 1.0, 0.03);  // exponential gaps: stddev equals mean
  // As vllm bench serve scales them: the last arrives at n / rate, whatever the seed.
  for (uint64_t seed : {1, 2, 3}) {
    EXPECT_DOUBLE_EQ(arrival_offsets(50, 8.0, 1.0, seed).back(), 50 / 8.0);
    EXPECT_DOUBLE_EQ(arrival_offsets(50, 2.0, 0.5, seed).back(), 50 / 2.0);
  }
}

TEST(ArrivalOffsets, BurstinessKeepsTheRateAndSetsTheVariation) {
  // Gamma with shape k: cv = 1 / sqrt(k).
  const GapStats bursty = gap_stats(arrival_offsets(20000, 4.0, 0.25, 3));
  const GapStats steady = gap_stats(arrival_offsets(20000, 4.0, 4.0, 3));
  EXPECT_NEAR(bursty.mean, 0.25, 0.25 * 0.05);
  EXPECT_NEAR(steady.mean, 0.25, 0.25 * 0.03);
  EXPECT_NEAR(bursty.cv, 2.0, 0.1);
  EXPECT_NEAR(steady.cv, 0.5, 0.03);
}

TEST(ArrivalOffsets, InfiniteRateSendsEverythingAtOnce) {
  const auto arrivals = arrival_offsets(5, std::numeric_limits<double>::infinity(), 1.0, 1);
  EXPECT_EQ(arrivals, std::vector<double>(5, 0.0));
}

TEST(ArrivalOffsets, SameSeedSameArrivalsOtherSeedOthers) {
  EXPECT_EQ(arrival_offsets(100, 2.0, 1.0, 5), arrival_offsets(100, 2.0, 1.0, 5));
  EXPECT_NE(arrival_offsets(100, 2.0, 1.0, 5), arrival_offsets(100, 2.0, 1.0, 6));
}

TEST(DistinctIds, KeepsFirstSeenOrderAndDropsNegatives) {
  EXPECT_EQ(distinct_ids({5, 3, 5, -1, 9, 3}), (std::vector<int32_t>{5, 3, 9}));
}

WorkloadSpec spec(int32_t lo, int32_t hi, uint64_t seed) {
  WorkloadSpec s;
  s.requests = 50;
  s.prompt_tokens_min = lo;
  s.prompt_tokens_max = hi;
  s.max_tokens = 17;
  s.seed = seed;
  return s;
}

TEST(PlanWorkload, PromptsHaveExactlyTheAskedLengthFromThePool) {
  const std::vector<int32_t> pool = {11, 22, 33, 44};
  const auto workload = plan_workload(spec(32, 32, 1), pool);
  ASSERT_EQ(workload.size(), 50u);
  for (const PlannedRequest& r : workload) {
    EXPECT_EQ(r.prompt.size(), 32u);
    EXPECT_EQ(r.max_tokens, 17);
    EXPECT_LT(r.seed, uint64_t{1} << 31);
    for (int32_t id : r.prompt) EXPECT_NE(std::find(pool.begin(), pool.end(), id), pool.end());
  }
}

TEST(PlanWorkload, RangesCoverTheirBoundsAndStayInside) {
  const auto workload = plan_workload(spec(3, 6, 2), {1, 2, 3});
  std::vector<int> seen(7, 0);
  for (const PlannedRequest& r : workload) {
    ASSERT_GE(r.prompt.size(), 3u);
    ASSERT_LE(r.prompt.size(), 6u);
    ++seen[r.prompt.size()];
  }
  for (int len = 3; len <= 6; ++len) EXPECT_GT(seen[len], 0) << len;
}

TEST(PlanWorkload, SameSeedRepeatsTheRequestsAndSeedsDiffer) {
  const std::vector<int32_t> pool = {1, 2, 3, 4, 5, 6, 7, 8};
  const auto a = plan_workload(spec(8, 16, 9), pool);
  const auto b = plan_workload(spec(8, 16, 9), pool);
  const auto c = plan_workload(spec(8, 16, 10), pool);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].prompt, b[i].prompt);
    EXPECT_EQ(a[i].seed, b[i].seed);
  }
  EXPECT_NE(a[0].prompt, c[0].prompt);
  EXPECT_NE(a[0].seed, a[1].seed);
}

TEST(PlanWorkload, RequestIDoesNotDependOnHowManyAreSent) {
  WorkloadSpec few = spec(4, 12, 3), many = spec(4, 12, 3);
  few.requests = 3;
  many.requests = 30;
  const auto a = plan_workload(few, {1, 2, 3, 4, 5});
  const auto b = plan_workload(many, {1, 2, 3, 4, 5});
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].prompt, b[i].prompt);
}

TEST(PlanWorkload, RefusesAnEmptyPool) {
  EXPECT_THROW(plan_workload(spec(1, 1, 0), {}), std::invalid_argument);
}

}  // namespace
}  // namespace tandem::bench::TANDEM_UNITY_ID
