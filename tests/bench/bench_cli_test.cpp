// `tandem bench` as a user runs it, on the tiny model: --offline and --overlap compare
// complete with identical outputs and write the JSON report; bad flags exit 2 on one line.
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "runner/model/model.h"
#include "tests/common/test_models.h"
#include "tests/common/test_support.h"

namespace tandem::testing::TANDEM_UNITY_ID {
namespace {

class BenchCli : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = write_tiny_llama(dir_.path(), gguf::TensorType::kF16, /*seed=*/0).string();
  }
  nlohmann::json read_json(const std::string& name) {
    std::ifstream in(dir_.file(name));
    return nlohmann::json::parse(in);
  }
  ScratchDir dir_;
  std::string model_;
};

void expect_one_line_usage_error(const CommandResult& r, const std::string& flag) {
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(flag), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

// --embeddings: each prompt pooled by /v1/embeddings (over HTTP) or straight through the
// scheduler (--offline); both paths give the same vectors (the detailed records' texts),
// overlap on and off too, and the throughput is the prompt tokens.
TEST_F(BenchCli, EmbeddingsGiveTheSameVectorsOverHttpAndOffline) {
  std::vector<nlohmann::json> docs;
  for (const bool offline : {false, true}) {
    const std::string json = dir_.file(offline ? "offline.json" : "http.json").string();
    std::vector<std::string> args = {"bench",           "--model", model_,           "--embeddings",
                                     "--overlap",       "compare", "--requests",     "6",
                                     "--prompt-tokens", "4:40",    "--threads",      "1",
                                     "--json",          json,      "--json-detailed"};
    if (offline) args.push_back("--offline");
    const CommandResult r = run_tandem(args);
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
    EXPECT_NE(r.out.find("/v1/embeddings (nothing generated)"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("Overlap on/off total (prompt) throughput"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("Outputs identical: yes (6/6 requests)"), std::string::npos) << r.out;
    docs.push_back(read_json(offline ? "offline.json" : "http.json"));
    EXPECT_EQ(docs.back()["settings"]["embeddings"], true);
    for (const auto& run : docs.back()["runs"]) {
      EXPECT_EQ(run["completed"], 6);
      EXPECT_EQ(run["output_tokens"], 0);
      EXPECT_GT(run["total_token_throughput"].get<double>(), 0);
    }
  }
  const auto& http = docs[0]["runs"][1]["requests"];
  const auto& offline = docs[1]["runs"][1]["requests"];
  ASSERT_EQ(http.size(), 6u);
  ASSERT_EQ(offline.size(), 6u);
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_FALSE(http[i]["text"].get<std::string>().empty());
    EXPECT_EQ(http[i]["text"], offline[i]["text"]) << i;
  }
  expect_one_line_usage_error(
      run_tandem({"bench", "--model", model_, "--embeddings", "--max-tokens", "4"}),
      "--max-tokens");
}

TEST_F(BenchCli, OverlapCompareGivesIdenticalOutputsAndWritesEveryFigure) {
  const std::string json = dir_.file("compare.json").string();
  const CommandResult r = run_tandem(
      {"bench",         "--model", model_,       "--overlap", "compare",         "--offline",
       "--concurrency", "4",       "--requests", "12",        "--prompt-tokens", "4:12",
       "--max-tokens",  "16",      "--threads",  "1",         "--seed",          "3",
       "--json",        json});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("Outputs identical: yes (12/12 requests)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Overlap on/off output throughput"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Device idle fraction"), std::string::npos) << r.out;
  const nlohmann::json doc = read_json("compare.json");
  EXPECT_EQ(doc["comparison"]["identical_outputs"], true);
  EXPECT_GT(doc["comparison"]["throughput_ratio_on_over_off"].get<double>(), 0);
  ASSERT_EQ(doc["runs"].size(), 2u);
  EXPECT_EQ(doc["runs"][0]["overlap"], "off");
  EXPECT_EQ(doc["runs"][1]["overlap"], "on");
  for (const auto& run : doc["runs"]) {
    EXPECT_EQ(run["completed"], 12);
    EXPECT_EQ(run["failed"], 0);
    EXPECT_EQ(run["output_tokens"], 12 * 16);
    for (const char* key : {"duration_s", "request_throughput", "output_throughput",
                            "total_token_throughput", "prompt_tokens"})
      EXPECT_TRUE(run.contains(key)) << key;
    for (const char* key : {"ttft_ms", "tpot_ms", "itl_ms", "e2e_ms"})
      for (const char* stat : {"mean", "p50", "p90", "p99"})
        EXPECT_TRUE(run[key].contains(stat)) << key << " " << stat;
    for (const char* key : {"busy_s", "idle_s", "idle_fraction", "steps"})
      EXPECT_TRUE(run["device"].contains(key)) << key;
  }
  // Each run against the ceilings measured after it, over the run's wall time: the matmul
  // rate is the layers' flops for each token fed plus the output head's for each row whose
  // logits were computed (one per output token here: the prompt's last row, then each
  // decode row), the weight rate the layers' bytes each step plus the head's each step
  // that computed logits. It once charged the head to every prompt token.
  EXPECT_NE(r.out.find("Matmul GFLOP/s (of peak)"), std::string::npos) << r.out;
  ASSERT_TRUE(doc.contains("ceilings"));
  const double bandwidth = doc["ceilings"]["read_gbps_all_threads"].get<double>();
  EXPECT_GT(bandwidth, 0);
  EXPECT_EQ(doc["ceilings"]["threads"], 1);
  const Model::TokenWork work = Model::load(model_)->work_per_token();
  EXPECT_GT(work.head_flops, 0);
  EXPECT_LT(work.head_flops, work.flops);
  for (const auto& run : doc["runs"]) {
    const double seconds = run["duration_s"].get<double>();
    const auto& d = run["device"];
    // Each request's prompt less its cached prefix, and its output but the last token.
    EXPECT_EQ(d["rows_fed"].get<int64_t>(), run["prompt_tokens"].get<int64_t>() -
                                                run["prefix_cache_hit_tokens"].get<int64_t>() +
                                                run["output_tokens"].get<int64_t>() - 12);
    EXPECT_EQ(d["logit_rows"], run["output_tokens"]);
    const double flops = (work.flops - work.head_flops) * d["rows_fed"].get<double>() +
                         work.head_flops * d["logit_rows"].get<double>();
    EXPECT_NEAR(d["matmul_gflops"].get<double>(), flops / seconds / 1e9,
                1e-9 * d["matmul_gflops"].get<double>());
    const double bytes = (work.weight_bytes - work.head_bytes) * d["steps"].get<double>() +
                         work.head_bytes * d["logit_steps"].get<double>();
    EXPECT_NEAR(d["weight_gbps"].get<double>(), bytes / seconds / 1e9,
                1e-9 * d["weight_gbps"].get<double>());
    EXPECT_NEAR(d["bandwidth_fraction"].get<double>(), d["weight_gbps"].get<double>() / bandwidth,
                1e-12);
    EXPECT_GT(d["peak_fraction"].get<double>(), 0);
  }
  EXPECT_EQ(doc["runs"][0]["outputs_digest"], doc["runs"][1]["outputs_digest"]);
  EXPECT_EQ(doc["runs"][0]["device"]["chained_steps"], 0);
  EXPECT_GT(doc["runs"][1]["device"]["chained_steps"].get<int>(), 0);
  EXPECT_EQ(doc["settings"]["requests"], 12);
  EXPECT_EQ(doc["settings"]["seed"], 3);
  EXPECT_EQ(doc["settings"]["max_tokens"], 16);
  EXPECT_EQ(doc["settings"]["ignore_eos"], true);
  // Offline, every token is timed: the TTFT ratio is given.
  EXPECT_GT(doc["comparison"]["ttft_p50_ratio_on_over_off"].get<double>(), 0);
  EXPECT_NE(r.out.find("tok/s); TTFT p50 "), std::string::npos) << r.out;
}

// --spec-compare: a run without speculative decoding, then one with it, over HTTP; greedy
// outputs of the random tiny model repeat, so drafts are found and accepted, and the
// outputs are the same.
TEST_F(BenchCli, SpecCompareGivesIdenticalOutputsAndCountsTheDrafts) {
  const std::string json = dir_.file("spec.json").string();
  const CommandResult r =
      run_tandem({"bench",           "--model", model_,          "--spec-compare",
                  "--spec-tokens",   "4",       "--temperature", "0",
                  "--requests",      "8",       "--concurrency", "1",
                  "--prompt-tokens", "16",      "--max-tokens",  "48",
                  "--threads",       "1",       "--ceilings",    "false",
                  "--json",          json});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("Outputs identical: yes (8/8 requests)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Speculation on/off output throughput"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Speculation: "), std::string::npos) << r.out;
  const nlohmann::json doc = read_json("spec.json");
  EXPECT_EQ(doc["comparison"]["compared"], "Speculation");
  EXPECT_EQ(doc["comparison"]["identical_outputs"], true);
  ASSERT_EQ(doc["runs"].size(), 2u);
  EXPECT_EQ(doc["runs"][0]["spec_tokens"], 0);
  EXPECT_FALSE(doc["runs"][0].contains("speculation"));
  EXPECT_EQ(doc["runs"][1]["spec_tokens"], 4);
  const auto& spec = doc["runs"][1]["speculation"];
  EXPECT_GT(spec["accepted_tokens"].get<int64_t>(), 0);
  EXPECT_LE(spec["accepted_tokens"].get<int64_t>(), spec["draft_tokens"].get<int64_t>());
  EXPECT_LE(spec["draft_tokens"].get<int64_t>(), 4 * spec["verify_rows"].get<int64_t>());
  // Every accepted draft is a token that took no step of its own. One request at a time, so
  // that the count is not a race: with two, how often a step holds both depends on when
  // each arrives (CI once saw 214 steps with drafts against 201 without).
  EXPECT_LT(doc["runs"][1]["device"]["steps"], doc["runs"][0]["device"]["steps"]);
  EXPECT_EQ(doc["settings"]["spec_ngram"], "2:4");
}

// Over HTTP without --stream no TTFT is timed, so no ratio is made of it: it had printed
// "TTFT p50 0.000x" and written 0. The responses' usage reports the cached prompt tokens.
TEST_F(BenchCli, AnUntimedTtftGivesNoRatio) {
  const std::string json = dir_.file("untimed.json").string();
  const CommandResult r = run_tandem({"bench", "--model", model_, "--overlap", "compare",
                                      "--requests", "3", "--prompt-tokens", "20", "--max-tokens",
                                      "3", "--threads", "1", "--ceilings", "off", "--json", json});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const nlohmann::json doc = read_json("untimed.json");
  EXPECT_TRUE(doc["comparison"]["ttft_p50_ratio_on_over_off"].is_null()) << doc["comparison"];
  EXPECT_EQ(r.out.find("; TTFT p50"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("on/off output throughput: "), std::string::npos) << r.out;
  for (const auto& run : doc["runs"]) {
    // The warm-up sent the first prompt, so at least its full blocks were found cached.
    EXPECT_GE(run["cached_prompt_tokens"].get<int64_t>(), 16) << run;
    EXPECT_EQ(run["cached_prompt_tokens"], run["prefix_cache_hit_tokens"]) << run;
  }
}

// --json-schema with --model runs unconstrained (ignore_eos), then constrained (no
// ignore_eos: outputs end where the schema does); the report says which run set it, where
// it had claimed ignore_eos for both.
TEST_F(BenchCli, EachRunSaysWhetherItsRequestsIgnoredEos) {
  const std::string schema = dir_.file("schema.json").string();
  std::ofstream(schema) << R"({"type": "object", "properties": {"a": {"type": "integer"}},
                              "required": ["a"]})";
  const std::string json = dir_.file("schema_runs.json").string();
  const CommandResult r =
      run_tandem({"bench", "--model", model_, "--offline", "--json-schema", schema, "--requests",
                  "2", "--max-tokens", "8", "--threads", "1", "--ceilings", "off", "--json", json});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("(ignore_eos in the unconstrained run only)"), std::string::npos) << r.out;
  const nlohmann::json doc = read_json("schema_runs.json");
  ASSERT_EQ(doc["runs"].size(), 2u);
  EXPECT_EQ(doc["runs"][0]["ignore_eos"], true);
  EXPECT_EQ(doc["runs"][1]["ignore_eos"], false);
  EXPECT_EQ(doc["settings"]["ignore_eos"], false);
  EXPECT_EQ(doc["settings"]["json_schema"], schema);
}

TEST_F(BenchCli, OfflineRunCountsExactPromptTokens) {
  const std::string json = dir_.file("offline.json").string();
  const CommandResult r =
      run_tandem({"bench", "--model", model_, "--offline", "--requests", "5", "--prompt-tokens",
                  "7", "--max-tokens", "3", "--threads", "1", "--ceilings", "off", "--json", json});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("Completed requests"), std::string::npos);
  const nlohmann::json doc = read_json("offline.json");
  ASSERT_EQ(doc["runs"].size(), 1u);
  EXPECT_EQ(doc["runs"][0]["prompt_tokens"], 5 * 7);
  EXPECT_EQ(doc["runs"][0]["output_tokens"], 5 * 3);
  EXPECT_EQ(doc["runs"][0]["path"], "offline");
  EXPECT_FALSE(doc.contains("ceilings"));  // --ceilings off
  EXPECT_FALSE(doc["runs"][0]["device"].contains("peak_fraction"));
}

// --json-detailed writes each request's record beside the run's figures: one per request in
// workload order, whose token counts add up to the run's, timings that fit inside each
// other (first text before the end, gaps summing to at most the time after it), and the
// text the outputs digest was taken from.
TEST_F(BenchCli, JsonDetailedWritesEveryRequestsRecord) {
  const std::string json = dir_.file("detailed.json").string();
  const CommandResult r = run_tandem({"bench",
                                      "--model",
                                      model_,
                                      "--offline",
                                      "--requests",
                                      "6",
                                      "--concurrency",
                                      "3",
                                      "--prompt-tokens",
                                      "3:9",
                                      "--max-tokens",
                                      "5",
                                      "--stream",
                                      "--threads",
                                      "1",
                                      "--ceilings",
                                      "off",
                                      "--json",
                                      json,
                                      "--json-detailed"});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const nlohmann::json doc = read_json("detailed.json");
  ASSERT_EQ(doc["runs"].size(), 1u);
  const nlohmann::json& run = doc["runs"][0];
  ASSERT_EQ(run["requests"].size(), 6u);
  int64_t prompt = 0, output = 0;
  for (const auto& q : run["requests"]) {
    EXPECT_EQ(q["ok"], true);
    EXPECT_EQ(q["output_tokens"], 5);
    EXPECT_GE(q["prompt_tokens"].get<int64_t>(), 3);
    EXPECT_LE(q["prompt_tokens"].get<int64_t>(), 9);
    prompt += q["prompt_tokens"].get<int64_t>();
    output += q["output_tokens"].get<int64_t>();
    EXPECT_EQ(q["finish_reason"], "length");
    const double ttft = q["ttft_ms"].get<double>(), e2e = q["e2e_ms"].get<double>();
    EXPECT_GT(ttft, 0);
    EXPECT_LE(ttft, e2e);
    double gaps = 0;
    for (const auto& g : q["itl_ms"]) gaps += g.get<double>();
    EXPECT_LE(gaps, e2e - ttft + 1e-6);
    EXPECT_GE(q["start_s"].get<double>(), 0);
    EXPECT_TRUE(q["text"].is_string());
    EXPECT_FALSE(q.contains("error"));
  }
  EXPECT_EQ(prompt, run["prompt_tokens"].get<int64_t>());
  EXPECT_EQ(output, run["output_tokens"].get<int64_t>());
  // Without the flag the report holds the figures alone; the flag needs --json.
  const CommandResult plain =
      run_tandem({"bench", "--model", model_, "--offline", "--requests", "2", "--max-tokens", "2",
                  "--threads", "1", "--ceilings", "off", "--json", json});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_FALSE(read_json("detailed.json")["runs"][0].contains("requests"));
  expect_one_line_usage_error(run_tandem({"bench", "--model", model_, "--json-detailed"}),
                              "--json-detailed");
}

TEST_F(BenchCli, BadFlagCombinationsExitTwoNamingTheFlag) {
  expect_one_line_usage_error(
      run_tandem({"bench", "--url", "http://127.0.0.1:1", "--model", model_}), "--url");
  expect_one_line_usage_error(run_tandem({"bench", "--offline"}), "--offline");
  expect_one_line_usage_error(run_tandem({"bench", "--model", model_, "--served-model-name", ""}),
                              "--served-model-name");
  expect_one_line_usage_error(
      run_tandem({"bench", "--url", "http://127.0.0.1:1", "--overlap", "compare"}), "--overlap");
  expect_one_line_usage_error(run_tandem({"bench", "--model", model_, "--overlap", "sideways"}),
                              "--overlap");
  expect_one_line_usage_error(run_tandem({"bench", "--model", model_, "--prompt-tokens", "9:3"}),
                              "--prompt-tokens");
  expect_one_line_usage_error(run_tandem({"bench", "--model", model_, "--concurrency", "0"}),
                              "--concurrency");
  expect_one_line_usage_error(run_tandem({"bench", "--model", model_, "--request-rate", "0"}),
                              "--request-rate");
  // A rate whose gaps overflow the clock sent every request at once, reported as Poisson.
  expect_one_line_usage_error(run_tandem({"bench", "--model", model_, "--request-rate", "1e-300"}),
                              ">= 0.001 or inf");
  expect_one_line_usage_error(run_tandem({"bench", "--model", model_, "--burstiness", "inf"}),
                              "--burstiness");
  expect_one_line_usage_error(run_tandem({"bench", "--url", "ftp://x"}), "--url");
  expect_one_line_usage_error(run_tandem({"bench"}), "--url");
  expect_one_line_usage_error(run_tandem({"bench", "--model", model_, "--spec-compare"}),
                              "--spec-tokens");
  expect_one_line_usage_error(run_tandem({"bench", "--model", model_, "--spec-compare",
                                          "--spec-tokens", "2", "--overlap", "compare"}),
                              "--spec-compare");
  expect_one_line_usage_error(
      run_tandem({"bench", "--model", model_, "--spec-tokens", "2", "--spec-ngram", "3:2"}),
      "--spec-ngram");
  expect_one_line_usage_error(
      run_tandem({"bench", "--url", "http://127.0.0.1:1", "--spec-tokens", "2"}), "--spec-tokens");
  // Refused before the banner: nothing on stdout (QA AA).
  const CommandResult cuda =
      run_tandem({"bench", "--model", model_, "--spec-tokens", "2", "--device", "cuda"});
  expect_one_line_usage_error(cuda, "--spec-tokens");
  EXPECT_EQ(cuda.out, "");
}

}  // namespace
}  // namespace tandem::testing::TANDEM_UNITY_ID
