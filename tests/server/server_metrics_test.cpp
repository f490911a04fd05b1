// The finish counters, counted by outcome value and exported under the labels /metrics has
// always had: only reasons that occurred, sorted by label, errors of every kind as "error".
#include "server/server_metrics.h"

#include <gtest/gtest.h>

#include <string>

namespace tandem::server::TANDEM_UNITY_ID {
namespace {

std::string finished_lines(const ServerMetrics& metrics) {
  const std::string page = metrics.render(SchedulerMetrics{});
  const std::string name = "tandem_generations_finished_total{";
  std::string lines;
  for (size_t at = page.find(name); at != std::string::npos; at = page.find(name, at + 1)) {
    lines += page.substr(at, page.find('\n', at) + 1 - at);
  }
  return lines;
}

TEST(ServerMetrics, FinishesAreCountedByOutcomeUnderTheirLabels) {
  ServerMetrics metrics;
  EXPECT_EQ(finished_lines(metrics), "");
  metrics.count_finish(FinishReason::kStop);
  metrics.count_finish(FinishReason::kLength);
  metrics.count_finish(FinishReason::kStop);
  metrics.count_error();
  metrics.count_finish(FinishReason::kCancelled);
  metrics.count_error();
  EXPECT_EQ(finished_lines(metrics),
            "tandem_generations_finished_total{reason=\"cancelled\"} 1\n"
            "tandem_generations_finished_total{reason=\"error\"} 2\n"
            "tandem_generations_finished_total{reason=\"length\"} 1\n"
            "tandem_generations_finished_total{reason=\"stop\"} 2\n");
  metrics.count_finish(FinishReason::kToolCalls);
  EXPECT_NE(finished_lines(metrics).find("{reason=\"tool_calls\"} 1\n"), std::string::npos);
}

// The GPU's own figures appear only where a GPU measured them (gpu_busy_seconds >= 0).
TEST(ServerMetrics, GpuFiguresAppearOnlyWithAGpu) {
  ServerMetrics metrics;
  SchedulerMetrics cpu;
  EXPECT_EQ(metrics.render(cpu).find("tandem_gpu_"), std::string::npos);
  SchedulerMetrics gpu;
  gpu.gpu_busy_seconds = 2.5;
  gpu.chained_gap_median_us = 1.25;
  const std::string page = metrics.render(gpu);
  EXPECT_NE(page.find("\ntandem_gpu_busy_seconds_total 2.5"), std::string::npos) << page;
  EXPECT_NE(page.find("\ntandem_gpu_chained_gap_microseconds 1.25"), std::string::npos) << page;
  EXPECT_NE(page.find("# TYPE tandem_gpu_busy_seconds_total counter"), std::string::npos);
}

}  // namespace
}  // namespace tandem::server::TANDEM_UNITY_ID
