// llama.cpp's stateful samplers over HTTP, replayed here token by token from the model's own
// probabilities of every token (the tiny model's vocabulary is 258 tokens, under n_probs'
// 1024): Mirostat's kept sets follow mu as llama_sampler_mirostat_v2_apply moves it, and
// adaptive-p's draw follows its running average; answers replay by seed, streamed as whole,
// and the routes read the fields.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/server/server_test_support.h"

namespace tandem::testing::TANDEM_UNITY_ID {
namespace {

using json = nlohmann::json;

json mirostat_body() {
  return json{{"prompt", "Once upon a time"}, {"n_predict", 24}, {"seed", 8},
              {"temperature", 0.9},           {"mirostat", 2},   {"mirostat_tau", 3.0},
              {"mirostat_eta", 0.5},          {"n_probs", 1024}};
}

TEST(MirostatHttp, V2sKeptSetsFollowMuFromTokenToToken) {
  const uint16_t port = shared_server().port();
  const json model = post_json(port, "/completion", mirostat_body());
  json body = mirostat_body();
  body["post_sampling_probs"] = true;
  const json drawn = post_json(port, "/completion", body);
  EXPECT_EQ(drawn["content"], model["content"]);
  const json& rows = model["completion_probabilities"];
  const json& kept = drawn["completion_probabilities"];
  ASSERT_EQ(rows.size(), kept.size());
  ASSERT_GT(rows.size(), 5u) << model.dump();
  double mu = 2 * 3.0;
  int checked = 0;
  std::vector<size_t> sizes;
  for (size_t step = 0; step < rows.size(); ++step) {
    // The tempered row's softmax, in rank order, from the model's log-probabilities.
    std::vector<std::pair<double, int32_t>> z;
    for (const json& t : rows[step]["top_logprobs"])
      z.emplace_back(t["logprob"].get<double>() / 0.9, t["id"].get<int32_t>());
    ASSERT_EQ(z.size(), 258u);
    std::sort(z.begin(), z.end(), [](const auto& a, const auto& b) {
      return a.first > b.first || (a.first == b.first && a.second < b.second);
    });
    double sum = 0;
    for (const auto& [v, id] : z) sum += std::exp(v - z[0].first);
    size_t count = 0;
    bool near = false;
    for (const auto& [v, id] : z) {
      const double surprise = -(v - z[0].first - std::log(sum)) / std::log(2.0);
      if (std::fabs(surprise - mu) < 1e-3) near = true;
      if (surprise > mu) break;
      ++count;
    }
    count = std::max<size_t>(count, 1);
    const json& listed = kept[step]["top_probs"];
    const int32_t token = rows[step]["id"];
    EXPECT_EQ(kept[step]["id"], token);
    if (!near) {
      ++checked;
      ASSERT_EQ(listed.size(), count) << "step " << step << " mu " << mu;
      for (size_t i = 0; i < count; ++i) EXPECT_EQ(listed[i]["id"], z[i].second) << step;
    }
    sizes.push_back(listed.size());
    // mu moves by the chosen token's surprise under the kept set, as llama.cpp moves it.
    double kept_sum = 0, chosen = 0;
    for (size_t i = 0; i < count; ++i) {
      kept_sum += std::exp(z[i].first - z[0].first);
      if (z[i].second == token) chosen = std::exp(z[i].first - z[0].first);
    }
    ASSERT_GT(chosen, 0.0) << "the token was not in the kept set at step " << step;
    mu -= 0.5 * (-std::log2(chosen / kept_sum) - 3.0);
  }
  EXPECT_GT(checked, 5);
  // mu moved: the kept sets did not all have one size.
  EXPECT_NE(*std::min_element(sizes.begin(), sizes.end()),
            *std::max_element(sizes.begin(), sizes.end()));
}

TEST(MirostatHttp, ReplaysBySeedStreamedAsWholeOnEveryRoute) {
  const uint16_t port = shared_server().port();
  for (int version : {1, 2}) {
    json body = mirostat_body();
    body.erase("n_probs");
    body["mirostat"] = version;
    const json whole = post_json(port, "/completion", body);
    EXPECT_EQ(post_json(port, "/completion", body)["content"], whole["content"]);
    EXPECT_EQ(whole["generation_settings"]["mirostat"], version);
    body["stream"] = true;
    std::string text;
    for (const std::string& data : sse_data(fetch(port, "POST", "/completion", body.dump()).body))
      text += json::parse(data)["content"].get<std::string>();
    EXPECT_EQ(text, whole["content"]);
    // /v1/completions reads the same fields and draws the same tokens.
    const json openai = post_json(port, "/v1/completions",
                                  json{{"prompt", "Once upon a time"},
                                       {"max_tokens", 24},
                                       {"seed", 8},
                                       {"temperature", 0.9},
                                       {"mirostat", version},
                                       {"mirostat_tau", 3.0},
                                       {"mirostat_eta", 0.5}});
    EXPECT_EQ(openai["choices"][0]["text"], whole["content"]) << version;
  }
  const HttpResult refused =
      fetch(port, "POST", "/v1/chat/completions",
            json{{"messages", json::array({{{"role", "user"}, {"content", "x"}}})}, {"mirostat", 3}}
                .dump());
  EXPECT_EQ(refused.status, 400);
  EXPECT_EQ(refused.json()["error"]["param"], "mirostat");
}

// adaptive-p at the end of a chain of the temperature alone: each step's draw is the
// transform of the row's softmax at the temperature around the adapted target, the average
// moved by the chosen token's probability, as llama.cpp's apply and accept do.
TEST(AdaptivePHttp, TheDrawFollowsTheRunningAverage) {
  const uint16_t port = shared_server().port();
  json body = {{"prompt", "Once upon a time"},
               {"n_predict", 20},
               {"seed", 4},
               {"temperature", 0.15},
               {"n_probs", 1024},
               {"adaptive_target", 0.2},
               {"adaptive_decay", 0.6},
               {"samplers", {"temperature", "adaptive_p"}}};
  const json model = post_json(port, "/completion", body);
  body["post_sampling_probs"] = true;
  const json drawn = post_json(port, "/completion", body);
  EXPECT_EQ(drawn["content"], model["content"]);
  const json& rows = model["completion_probabilities"];
  const json& listed = drawn["completion_probabilities"];
  ASSERT_EQ(rows.size(), listed.size());
  ASSERT_GT(rows.size(), 5u);
  double sum = 0.2 / 0.4, weight = 1 / 0.4;
  double moved = 0;  // how far the adapted target went from the target: the state at work
  for (size_t step = 0; step < rows.size(); ++step) {
    std::vector<double> z(258, 0.0);
    double z_max = -1e30;
    for (const json& t : rows[step]["top_logprobs"]) {
      z[t["id"].get<size_t>()] = t["logprob"].get<double>() / 0.15;
      z_max = std::max(z_max, z[t["id"].get<size_t>()]);
    }
    double total = 0;
    for (double v : z) total += std::exp(v - z_max);
    const double adapted = std::clamp(2 * 0.2 - sum / weight, 0.0, 1.0);
    moved = std::max(moved, std::fabs(adapted - 0.2));
    std::vector<double> q(258);
    double q_total = 0;
    for (size_t id = 0; id < 258; ++id) {
      const double d = std::fabs((std::exp(z[id] - z_max) / total - adapted) / 0.3);
      q_total += q[id] = std::exp(5.0 - 10.0 * d * d / (1 + d));
    }
    const json& entry = listed[step];
    for (const json& t : entry["top_probs"]) {
      const double expected = q[t["id"].get<size_t>()] / q_total;
      EXPECT_NEAR(t["prob"].get<double>(), expected, 1e-6 + 1e-3 * expected) << step;
    }
    const size_t token = entry["id"].get<size_t>();
    sum = std::exp(z[token] - z_max) / total + 0.6 * sum;
    weight = 1 + 0.6 * weight;
  }
  EXPECT_GT(moved, 0.05);
  // Without the stage in the chain the target does nothing (llama.cpp's).
  body.erase("post_sampling_probs");
  body["samplers"] = {"temperature"};
  const json plain = post_json(port, "/completion", body);
  body["adaptive_target"] = -1;
  EXPECT_EQ(post_json(port, "/completion", body)["content"], plain["content"]);
}

}  // namespace
}  // namespace tandem::testing::TANDEM_UNITY_ID
