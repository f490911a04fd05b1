// llama-server's timings on the OpenAI routes (timings_per_token: true), which its clients
// read for token rates: every chunk of a stream carries them, counting the tokens so far,
// the last chunk and the whole body the finished counts; the prompt's split between the
// prefix cache and computed tokens is known from admission on; without the field nothing
// changes; the routes with writers of their own refuse it by name. The values themselves
// (rates from counts and times) are ChoiceTimings' and timings_json's, tested apart.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/server/server_test_support.h"

namespace tandem::testing::TANDEM_UNITY_ID {
namespace {

using json = nlohmann::json;

std::vector<json> chunks_of(const HttpResult& streamed) {
  std::vector<json> out;
  for (const std::string& data : sse_data(streamed.body)) {
    if (data != "[DONE]") out.push_back(json::parse(data));
  }
  return out;
}

void expect_timings_shape(const json& t) {
  for (const char* key :
       {"cache_n", "prompt_n", "prompt_ms", "prompt_per_token_ms", "prompt_per_second",
        "predicted_n", "predicted_ms", "predicted_per_token_ms", "predicted_per_second"}) {
    EXPECT_TRUE(t.contains(key)) << key << " in " << t.dump();
  }
  EXPECT_GE(t["prompt_ms"].get<double>(), 0.0);
  EXPECT_GE(t["predicted_ms"].get<double>(), 0.0);
}

TEST(LlamaTimingsHttp, EveryChunkCountsTheTokensSoFarAndTheLastTheWhole) {
  const uint16_t port = shared_server().port();
  const json body = {{"messages", {{{"role", "user"}, {"content", "timings, streamed"}}}},
                     {"max_tokens", 12},
                     {"ignore_eos", true},
                     {"seed", 3},
                     {"stream", true},
                     {"stream_options", {{"include_usage", true}}},
                     {"timings_per_token", true}};
  const std::vector<json> chunks =
      chunks_of(fetch(port, "POST", "/v1/chat/completions", body.dump()));
  ASSERT_GE(chunks.size(), 3u);
  const json usage = chunks.back()["usage"];
  const int64_t prompt = usage["prompt_tokens"];
  int64_t last_predicted = 0;
  int timed = 0;
  for (const json& chunk : chunks) {
    if (chunk["choices"].empty()) continue;  // the usage chunk
    const json& delta = chunk["choices"][0]["delta"];
    if (delta.contains("role")) continue;  // the role chunk comes before any token
    ASSERT_TRUE(chunk.contains("timings")) << chunk.dump();
    const json& t = chunk["timings"];
    expect_timings_shape(t);
    EXPECT_EQ(t["prompt_n"].get<int64_t>() + t["cache_n"].get<int64_t>(), prompt);
    EXPECT_GE(t["predicted_n"].get<int64_t>(), last_predicted) << "counts only grow";
    last_predicted = t["predicted_n"];
    ++timed;
  }
  EXPECT_GE(timed, 2);
  EXPECT_EQ(last_predicted, usage["completion_tokens"].get<int64_t>());
  EXPECT_EQ(last_predicted, 12);
}

TEST(LlamaTimingsHttp, TheWholeBodyCarriesThemAndAPrefixHitShowsAsCacheN) {
  const uint16_t port = shared_server().port();
  // Long enough for full KV blocks the second request finds in the prefix cache.
  std::string prompt;
  for (int i = 0; i < 8; ++i) prompt += "timings and the prefix cache " + std::to_string(i) + ". ";
  json body = {{"prompt", prompt}, {"max_tokens", 4}, {"timings_per_token", true}};
  const json first = post_json(port, "/v1/completions", body);
  ASSERT_TRUE(first.contains("timings")) << first.dump();
  expect_timings_shape(first["timings"]);
  EXPECT_EQ(first["timings"]["predicted_n"], first["usage"]["completion_tokens"]);
  EXPECT_EQ(first["timings"]["cache_n"], first["usage"]["prompt_tokens_details"]["cached_tokens"]);
  body["stream"] = true;
  const std::vector<json> chunks = chunks_of(fetch(port, "POST", "/v1/completions", body.dump()));
  ASSERT_FALSE(chunks.empty());
  // Known from admission: the first chunk already splits the prompt.
  EXPECT_GT(chunks.front()["timings"]["cache_n"].get<int64_t>(), 0) << chunks.front().dump();
  EXPECT_EQ(chunks.front()["timings"]["prompt_n"].get<int64_t>() +
                chunks.front()["timings"]["cache_n"].get<int64_t>(),
            first["usage"]["prompt_tokens"].get<int64_t>());
}

TEST(LlamaTimingsHttp, WithoutTheFieldNothingChangesAndWritersRoutesRefuseIt) {
  const uint16_t port = shared_server().port();
  const json plain = post_json(port, "/v1/completions",
                               json{{"prompt", "no timings"}, {"max_tokens", 3}, {"seed", 1}});
  EXPECT_FALSE(plain.contains("timings"));
  const json timed = post_json(
      port, "/v1/completions",
      json{{"prompt", "no timings"}, {"max_tokens", 3}, {"seed", 1}, {"timings_per_token", true}});
  EXPECT_EQ(timed["choices"][0]["text"], plain["choices"][0]["text"]);
  const HttpResult streamed =
      fetch(port, "POST", "/v1/completions",
            json{{"prompt", "no timings"}, {"max_tokens", 3}, {"stream", true}}.dump());
  for (const json& chunk : chunks_of(streamed)) EXPECT_FALSE(chunk.contains("timings"));
  const HttpResult responses =
      fetch(port, "POST", "/v1/responses",
            json{{"input", "hi"}, {"max_output_tokens", 16}, {"timings_per_token", true}}.dump());
  EXPECT_EQ(responses.status, 400) << responses.body;
  EXPECT_EQ(responses.json()["error"]["param"], "timings_per_token");
  const HttpResult wrong =
      fetch(port, "POST", "/v1/completions",
            json{{"prompt", "x"}, {"max_tokens", 1}, {"timings_per_token", "yes"}}.dump());
  EXPECT_EQ(wrong.status, 400);
  EXPECT_EQ(wrong.json()["error"]["param"], "timings_per_token");
}

}  // namespace
}  // namespace tandem::testing::TANDEM_UNITY_ID
