// llama.cpp's Mirostat over HTTP: a request's kept sets follow mu from token to token as
// llama_sampler_mirostat_v2_apply does, replayed here from the model's own probabilities of
// every token (the tiny model's vocabulary is 258 tokens, under n_probs' 1024); the answer
// replays by seed, streamed as whole, and the routes read the fields.
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

}  // namespace
}  // namespace tandem::testing::TANDEM_UNITY_ID
