// Every error the HTTP surface answers, end to end: its status, its OpenAI error object,
// and the headers that go with it (Allow, Retry-After). The server keeps serving after.
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/server/server_test_support.h"

namespace tandem::testing::TANDEM_UNITY_ID {
namespace {

using nlohmann::json;

// The error object's shape, and its param when one is expected.
void expect_error(const HttpResult& result, int status, const std::string& param = "") {
  EXPECT_EQ(result.status, status) << result.body;
  EXPECT_EQ(result.headers.at("content-type"), "application/json");
  const json body = json::parse(result.body);
  ASSERT_TRUE(body.contains("error")) << result.body;
  const json& error = body["error"];
  EXPECT_TRUE(error["message"].is_string() && !error["message"].get<std::string>().empty());
  EXPECT_TRUE(error["type"].is_string());
  EXPECT_TRUE(error.contains("param"));
  EXPECT_TRUE(error.contains("code"));
  if (!param.empty()) {
    EXPECT_EQ(error["param"], param) << result.body;
  }
}

HttpResult post(const std::string& target, const std::string& body) {
  return fetch(shared_server().port(), "POST", target, body);
}

TEST(HttpErrors, BadRequestsGet400WithTheOffendingField) {
  expect_error(post("/v1/completions", "{\"prompt\": \"hi\""), 400);
  expect_error(post("/v1/completions", "[1, 2]"), 400);
  expect_error(post("/v1/completions", R"({"prompt": 5})"), 400, "prompt");
  expect_error(post("/v1/completions", R"({"prompt": "hi", "temperature": -0.5})"), 400,
               "temperature");
  expect_error(post("/v1/completions", R"({"prompt": "hi", "top_p": 0})"), 400, "top_p");
  expect_error(post("/v1/completions", R"({"prompt": "hi", "max_tokens": 0})"), 400, "max_tokens");
  expect_error(post("/v1/completions", R"({"prompt": "hi", "n": 0})"), 400, "n");
  expect_error(post("/v1/chat/completions", R"({"messages": "hi"})"), 400, "messages");
  expect_error(post("/v1/chat/completions", R"({"messages": []})"), 400, "messages");
}

TEST(HttpErrors, ModelDependentChecksGet400) {
  // Token ids outside the tiny model's 258-entry vocabulary.
  expect_error(post("/v1/completions", R"({"prompt": [1, 2, 999]})"), 400);
  expect_error(post("/v1/completions", R"({"prompt": "hi", "logit_bias": {"4000": 5}})"), 400);
  // A prompt as long as the context (512) leaves no room to generate.
  const HttpResult too_long =
      post("/v1/completions", json{{"prompt", std::vector<int>(600, 65)}}.dump());
  expect_error(too_long, 400, "prompt");
  EXPECT_EQ(json::parse(too_long.body)["error"]["code"], "context_length_exceeded");
  const HttpResult full = post(
      "/v1/completions", json{{"prompt", std::vector<int>(512, 65)}, {"max_tokens", 1}}.dump());
  expect_error(full, 400, "prompt");
  // Scoring generates nothing (echo, max_tokens 0): the whole context may be prompt, as
  // vLLM allows prompt + max_tokens <= max_model_len; one more token is refused.
  const HttpResult scored = post(
      "/v1/completions",
      json{
          {"prompt", std::vector<int>(512, 65)}, {"max_tokens", 0}, {"echo", true}, {"logprobs", 0}}
          .dump());
  ASSERT_EQ(scored.status, 200) << scored.body;
  EXPECT_EQ(json::parse(scored.body)["choices"][0]["logprobs"]["tokens"].size(), 512u);
  expect_error(
      post("/v1/completions",
           json{{"prompt", std::vector<int>(513, 65)}, {"max_tokens", 0}, {"echo", true}}.dump()),
      400, "prompt");
  expect_error(
      post("/v1/chat/completions",
           json{{"messages", {{{"role", "user"}, {"content", std::string(700, 'a')}}}}}.dump()),
      400, "messages");
  expect_error(post("/detokenize", R"({"tokens": [70000]})"), 400);
}

TEST(HttpErrors, UnknownRoutesGet404AndWrongMethods405WithAllow) {
  const uint16_t port = shared_server().port();
  expect_error(fetch(port, "GET", "/v1/nothing"), 404);
  expect_error(fetch(port, "POST", "/"), 404);
  const HttpResult wrong = fetch(port, "GET", "/v1/completions");
  expect_error(wrong, 405);
  EXPECT_EQ(wrong.headers.at("allow"), "POST");
  const HttpResult wrong_get = fetch(port, "DELETE", "/v1/models");
  expect_error(wrong_get, 405);
  EXPECT_EQ(wrong_get.headers.at("allow"), "GET");
}

TEST(HttpErrors, ABodyOverTheLimitGets413) {
  // The default limit is 1 MiB.
  const std::string big = "{\"prompt\": \"" + std::string((1 << 20) + 10, 'a') + "\"}";
  expect_error(post("/v1/completions", big), 413);
  EXPECT_EQ(fetch(shared_server().port(), "GET", "/health").status, 200);
}

TEST(HttpErrors, OversizedHeadersGet431) {
  const HttpResult result =
      fetch(shared_server().port(), "GET", "/health", "", {{"X-Padding", std::string(20000, 'p')}});
  expect_error(result, 431);
}

TEST(HttpErrors, AWrongOrMissingApiKeyGets401AndTheRightOneServes) {
  ServerProcess server(tiny_model(), {"--api-key", "sesame-0123", "--kv-tokens", "4096"});
  const std::string body = R"({"prompt": "hi", "max_tokens": 2})";
  const HttpResult missing = fetch(server.port(), "POST", "/v1/completions", body);
  expect_error(missing, 401);
  EXPECT_EQ(json::parse(missing.body)["error"]["code"], "invalid_api_key");
  expect_error(fetch(server.port(), "POST", "/v1/completions", body,
                     {{"Authorization", "Bearer sesame-0124"}}),
               401);
  expect_error(fetch(server.port(), "POST", "/v1/completions", body,
                     {{"Authorization", "Bearer sesame-0123x"}}),
               401);
  expect_error(fetch(server.port(), "GET", "/v1/models", "", {{"Authorization", "sesame-0123"}}),
               401);
  // llama-server's introspection shows the model's path and the running requests' fields.
  expect_error(fetch(server.port(), "GET", "/props"), 401);
  expect_error(fetch(server.port(), "GET", "/slots"), 401);
  EXPECT_EQ(fetch(server.port(), "POST", "/v1/completions", body,
                  {{"Authorization", "Bearer sesame-0123"}})
                .status,
            200);
  // Probes and scrapers need no key.
  EXPECT_EQ(fetch(server.port(), "GET", "/health").status, 200);
  EXPECT_EQ(fetch(server.port(), "GET", "/metrics").status, 200);
}

// More choices in one request than the queue ever holds is the request's fault, not the
// load's: a 400 naming n (or prompt), never a 503 that a client would retry forever.
TEST(HttpErrors, MoreChoicesThanTheQueueHoldsGet400NotA503) {
  ServerProcess server(tiny_model(), {"--max-queue", "4"});
  const HttpResult many = fetch(server.port(), "POST", "/v1/completions",
                                R"({"prompt": "a", "n": 5, "max_tokens": 1})");
  expect_error(many, 400);
  EXPECT_EQ(json::parse(many.body)["error"]["param"], "n");
  const HttpResult prompts = fetch(server.port(), "POST", "/v1/completions",
                                   R"({"prompt": ["a", "b", "c", "d", "e"], "max_tokens": 1})");
  expect_error(prompts, 400);
  EXPECT_EQ(json::parse(prompts.body)["error"]["param"], "prompt");
  EXPECT_EQ(fetch(server.port(), "POST", "/v1/completions",
                  R"({"prompt": ["a", "b"], "n": 2, "max_tokens": 1})")
                .status,
            200);
}

TEST(HttpErrors, AFullQueueGets503WithRetryAfter) {
  ServerProcess server(demo_model(),
                       {"--max-queue", "1", "--max-batch", "1", "--kv-tokens", "8192"});
  const std::string long_request =
      json{{"prompt", "x"}, {"max_tokens", 2000}, {"ignore_eos", true}, {"stream", true}}.dump();
  // One running (its first chunk seen), one waiting: the queue is full.
  HttpClient running(server.port());
  running.stream("/v1/completions", long_request, [](const std::string& body) {
    return body.find("\"text\"") == std::string::npos;
  });
  HttpClient waiting(server.port());
  waiting.write_raw("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: " +
                    std::to_string(long_request.size()) + "\r\n\r\n" + long_request);
  bool queued = false;
  for (int i = 0; i < 2000 && !queued; ++i) {  // bounded poll of the queue's gauge
    const std::string metrics = fetch(server.port(), "GET", "/metrics").body;
    queued = metric_value(metrics, "tandem_requests_waiting") == 1.0;
  }
  ASSERT_TRUE(queued);
  const HttpResult refused =
      fetch(server.port(), "POST", "/v1/completions", R"({"prompt": "y", "max_tokens": 1})");
  expect_error(refused, 503);
  EXPECT_EQ(refused.headers.at("retry-after"), "1");
  EXPECT_EQ(json::parse(refused.body)["error"]["code"], "overloaded");
  // The connection stays open: deploy/nginx/tandem-proxy.conf resends a 503 that keeps it
  // (a refusal made before any work) to another replica, and never one that closes it (a
  // replica shutting down, which may have started the request).
  EXPECT_TRUE(refused.keep_alive);

  // Both clients leave: the waiting request and the running one are cancelled, and every
  // KV block comes back.
  waiting.close();
  running.close();
  std::string metrics;
  bool drained = false;
  for (int i = 0; i < 2000 && !drained; ++i) {  // bounded poll of the gauges
    metrics = fetch(server.port(), "GET", "/metrics").body;
    drained = metric_value(metrics, "tandem_requests_waiting") == 0.0 &&
              metric_value(metrics, "tandem_requests_running") == 0.0 &&
              metric_value(metrics, "tandem_kv_blocks_used") == 0.0;
  }
  ASSERT_TRUE(drained) << metrics;
  EXPECT_EQ(metric_value(metrics, "tandem_generations_finished_total{reason=\"cancelled\"}"), 2.0)
      << metrics;
}

}  // namespace
}  // namespace tandem::testing::TANDEM_UNITY_ID
