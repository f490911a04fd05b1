// The table shows one column per run and a dash where a figure does not apply; the JSON
// carries every figure; the outputs digest tells runs with different texts apart.
#include "bench/report.h"

#include <gtest/gtest.h>

namespace tandem::bench::TANDEM_UNITY_ID {
namespace {

RunReport run(const std::string& label, double throughput) {
  RunReport r;
  r.label = label;
  r.path = "offline";
  r.overlap = label == "overlap on" ? "on" : "off";
  r.summary.completed = 3;
  r.summary.output_tokens_per_second = throughput;
  return r;
}

TEST(FormatTable, HasAColumnPerRunAndDashesForMissingFigures) {
  RunReport off = run("overlap off", 100.0);
  RunReport on = run("overlap on", 123.4);
  on.device = DeviceFigures{1.5, 0.25, 0.125, 10, 8};
  const std::string table = format_table({off, on});
  EXPECT_NE(table.find("overlap off  overlap on"), std::string::npos) << table;
  EXPECT_NE(table.find("123.4"), std::string::npos) << table;
  EXPECT_NE(table.find("0.125"), std::string::npos) << table;
  EXPECT_NE(table.find("10 (8)"), std::string::npos) << table;
  // No streamed request: no TTFT to show.
  const size_t ttft = table.find("TTFT p50 (ms)");
  ASSERT_NE(ttft, std::string::npos);
  const std::string line = table.substr(ttft, table.find('\n', ttft) - ttft);
  EXPECT_EQ(line.back(), '-') << line;
}

TEST(RunJson, CarriesTheSummaryAndDeviceFigures) {
  RunReport r = run("overlap on", 50.0);
  r.device = DeviceFigures{2.0, 0.5, 0.2, 4, 3};
  r.summary.ttft_ms = distribution({1, 2, 3});
  const nlohmann::json j = run_json(r);
  EXPECT_EQ(j["completed"], 3);
  EXPECT_EQ(j["overlap"], "on");
  EXPECT_DOUBLE_EQ(j["output_throughput"].get<double>(), 50.0);
  EXPECT_DOUBLE_EQ(j["ttft_ms"]["p50"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(j["device"]["idle_fraction"].get<double>(), 0.2);
  EXPECT_EQ(j["device"]["chained_steps"], 3);
}

RequestRecord with_text(const std::string& text) {
  RequestRecord r;
  r.ok = true;
  r.text = text;
  return r;
}

TEST(OutputsDigest, DependsOnEveryTextAndWhereTheyDivide) {
  const std::string ab_c = outputs_digest({with_text("ab"), with_text("c")});
  EXPECT_EQ(ab_c, outputs_digest({with_text("ab"), with_text("c")}));
  EXPECT_NE(ab_c, outputs_digest({with_text("a"), with_text("bc")}));
  EXPECT_NE(ab_c, outputs_digest({with_text("ab"), with_text("d")}));
  RequestRecord failed;
  failed.error = "c";
  EXPECT_NE(ab_c, outputs_digest({with_text("ab"), failed}));
  EXPECT_EQ(ab_c.size(), 16u);
}

}  // namespace
}  // namespace tandem::bench::TANDEM_UNITY_ID
