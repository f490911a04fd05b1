// The non-generating endpoints end to end: /health, /v1/models, /tokenize and
// /detokenize (llama-server's shapes), and /metrics (valid Prometheus text).
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/server/server_test_support.h"

namespace tandem::testing::TANDEM_UNITY_ID {
namespace {

using nlohmann::json;

TEST(Endpoints, HealthIsOkWhileServing) {
  const HttpResult health = fetch(shared_server().port(), "GET", "/health");
  EXPECT_EQ(health.status, 200);
  EXPECT_EQ(health.json()["status"], "ok");
}

TEST(Endpoints, ModelsListsTheServedModelAndItsChatTemplate) {
  const json models = fetch(shared_server().port(), "GET", "/v1/models").json();
  EXPECT_EQ(models["object"], "list");
  ASSERT_EQ(models["data"].size(), 1u);
  EXPECT_EQ(models["data"][0]["id"], "tiny");
  EXPECT_EQ(models["data"][0]["max_model_len"], 512);
  EXPECT_EQ(models["data"][0]["chat_template"], "tokenizer.chat_template");
}

TEST(Endpoints, ServedModelNameIsTheIdListedAndAnswered) {
  ServerProcess server(tiny_model(), {"--served-model-name", "team/tiny-v2"});
  const json models = fetch(server.port(), "GET", "/v1/models").json();
  ASSERT_EQ(models["data"].size(), 1u);
  EXPECT_EQ(models["data"][0]["id"], "team/tiny-v2");
  const HttpResult named = fetch(server.port(), "POST", "/v1/completions",
                                 R"({"model": "team/tiny-v2", "prompt": "a", "max_tokens": 1})");
  ASSERT_EQ(named.status, 200) << named.body;
  EXPECT_EQ(named.json()["model"], "team/tiny-v2");
  EXPECT_EQ(fetch(server.port(), "POST", "/v1/completions",
                  R"({"model": "tiny", "prompt": "a", "max_tokens": 1})")
                .status,
            404);
}

// OpenAI's "retrieve model" (the SDKs' models.retrieve): the list's entry for a served
// name, a 404 model_not_found for another, GET only.
TEST(Endpoints, EachServedNameIsRetrievedAsTheListsEntry) {
  ServerProcess server(tiny_model(), {"--served-model-name", "team/tiny-v2", "alias"});
  const json list = fetch(server.port(), "GET", "/v1/models").json();
  ASSERT_EQ(list["data"].size(), 2u);
  for (const json& entry : list["data"]) {
    const std::string id = entry["id"];
    const HttpResult one = fetch(server.port(), "GET", "/v1/models/" + id);
    ASSERT_EQ(one.status, 200) << one.body;
    EXPECT_EQ(one.json(), entry);
  }
  EXPECT_EQ(fetch(server.port(), "GET", "/v1/models/team%2Ftiny-v2").json()["id"], "team/tiny-v2");
  const HttpResult missing = fetch(server.port(), "GET", "/v1/models/tiny");
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.json()["error"]["code"], "model_not_found");
  EXPECT_EQ(fetch(server.port(), "POST", "/v1/models/alias", "{}").status, 405);
}

// CORS, as vLLM and llama-server answer browsers by default: any origin, preflights
// answered on every route without the key (they carry none), and streams marked too.
TEST(Endpoints, BrowsersMayCallFromAnyOriginByDefault) {
  HttpClient client(shared_server().port());
  const HttpResult preflight =
      client.send("OPTIONS", "/v1/chat/completions", "",
                  {{"Origin", "http://localhost:3000"},
                   {"Access-Control-Request-Method", "POST"},
                   {"Access-Control-Request-Headers", "content-type, authorization"}});
  EXPECT_EQ(preflight.status, 204);
  EXPECT_EQ(preflight.headers.at("access-control-allow-origin"), "*");
  EXPECT_EQ(preflight.headers.at("access-control-allow-headers"), "content-type, authorization");
  EXPECT_NE(preflight.headers.at("access-control-allow-methods").find("POST"), std::string::npos);
  EXPECT_EQ(preflight.headers.count("content-length"), 0u);  // RFC 9110: none on a 204
  // The same connection goes on: the next answer, streamed, is marked as well.
  const HttpResult streamed =
      client.send("POST", "/v1/completions", R"({"prompt": "a", "max_tokens": 2, "stream": true})",
                  {{"Origin", "http://localhost:3000"}});
  EXPECT_EQ(streamed.status, 200);
  EXPECT_EQ(streamed.headers.at("access-control-allow-origin"), "*");
  // A script may read the response's id (the OpenAI SDK's request_id).
  EXPECT_EQ(streamed.headers.at("access-control-expose-headers"), "x-request-id");
}

TEST(Endpoints, OnlyTheListedOriginsAreAllowedWhenSomeAreNamed) {
  ServerProcess server(tiny_model(),
                       {"--allowed-origins", "https://app.example, http://localhost:5173"});
  for (const char* origin : {"https://app.example", "http://localhost:5173"}) {
    const HttpResult listed = fetch(server.port(), "GET", "/v1/models", "", {{"Origin", origin}});
    EXPECT_EQ(listed.headers.at("access-control-allow-origin"), origin);
    EXPECT_EQ(listed.headers.at("vary"), "Origin");
  }
  const HttpResult other =
      fetch(server.port(), "GET", "/v1/models", "", {{"Origin", "https://evil.example"}});
  EXPECT_EQ(other.status, 200);
  EXPECT_EQ(other.headers.count("access-control-allow-origin"), 0u);
  EXPECT_EQ(other.headers.at("vary"), "Origin");  // the answer depends on the Origin
  // A refusal before the body is read carries the header too, so the browser can read it.
  HttpClient too_big(server.port());
  too_big.write_raw(
      "POST /v1/completions HTTP/1.1\r\nHost: x\r\nOrigin: https://app.example\r\n"
      "Content-Length: 10485760\r\n\r\n");
  const std::string refusal = too_big.read_until_closed();
  EXPECT_EQ(refusal.rfind("HTTP/1.1 413", 0), 0u) << refusal;
  EXPECT_NE(refusal.find("Access-Control-Allow-Origin: https://app.example\r\n"), std::string::npos)
      << refusal;
  // /metrics files it under its route, read from the request line before the fields.
  EXPECT_EQ(metric_value(fetch(server.port(), "GET", "/metrics").body,
                         "tandem_http_requests_total{endpoint=\"/v1/completions\",status=\"413\"}"),
            1);
  // CORS off: no headers, and OPTIONS is a method no route takes.
  ServerProcess closed(tiny_model(), {"--allowed-origins", ""});
  const HttpResult plain =
      fetch(closed.port(), "GET", "/v1/models", "", {{"Origin", "https://app.example"}});
  EXPECT_EQ(plain.headers.count("access-control-allow-origin"), 0u);
  EXPECT_EQ(plain.headers.count("vary"), 0u);
  const HttpResult preflight =
      fetch(closed.port(), "OPTIONS", "/v1/models", "", {{"Origin", "https://app.example"}});
  EXPECT_EQ(preflight.status, 405);
  EXPECT_EQ(preflight.headers.count("access-control-allow-methods"), 0u);
}

TEST(Endpoints, TokenizeAndDetokenizeRoundTrip) {
  const uint16_t port = shared_server().port();
  const std::string text = "Hello, wörld! 123";
  const json plain =
      fetch(port, "POST", "/tokenize", json{{"content", text}, {"add_special", false}}.dump())
          .json();
  ASSERT_TRUE(plain["tokens"].is_array());
  EXPECT_FALSE(plain["tokens"].empty());
  // Without add_special, as llama-server's default is, no BOS; with it, BOS as a completion
  // prompt has: one more token.
  EXPECT_EQ(fetch(port, "POST", "/tokenize", json{{"content", text}}.dump()).json(), plain);
  const json with_bos =
      fetch(port, "POST", "/tokenize", json{{"content", text}, {"add_special", true}}.dump())
          .json();
  EXPECT_EQ(with_bos["tokens"].size(), plain["tokens"].size() + 1);
  // with_pieces: each id with its text; the pieces laid end to end are the text.
  const json pieces =
      fetch(port, "POST", "/tokenize", json{{"content", text}, {"with_pieces", true}}.dump())
          .json();
  ASSERT_EQ(pieces["tokens"].size(), plain["tokens"].size());
  std::string joined;
  for (size_t i = 0; i < pieces["tokens"].size(); ++i) {
    const json& entry = pieces["tokens"][i];
    EXPECT_EQ(entry["id"], plain["tokens"][i]);
    if (entry["piece"].is_string()) {
      joined += entry["piece"].get<std::string>();
    } else {  // part of a character: its bytes
      for (const json& byte : entry["piece"]) joined += static_cast<char>(byte.get<int>());
    }
  }
  // /detokenize joins the pieces as they are, as llama-server does (a SentencePiece leading
  // space stays), so one token at a time gives the same text in parts. It had dropped the
  // space, so per-token clients got "Helloworld".
  const json back =
      fetch(port, "POST", "/detokenize", json{{"tokens", plain["tokens"]}}.dump()).json();
  EXPECT_EQ(back["content"], joined);
  const json ascii =
      fetch(port, "POST", "/tokenize", json{{"content", "Hello world 123"}}.dump()).json();
  std::string one_by_one;  // whole characters only: a split one is U+FFFD alone
  for (const json& id : ascii["tokens"])
    one_by_one +=
        fetch(port, "POST", "/detokenize", json{{"tokens", {id}}}.dump()).json()["content"];
  EXPECT_EQ(one_by_one, fetch(port, "POST", "/detokenize", json{{"tokens", ascii["tokens"]}}.dump())
                            .json()["content"]);
  EXPECT_NE(one_by_one.find("Hello world 123"), std::string::npos);
  // SentencePiece's first piece keeps the space its encoding put in front.
  if (joined.size() == text.size() + 1 && joined.front() == ' ') joined.erase(0, 1);
  EXPECT_EQ(joined, text);
  // A control token comes back as its text, as llama-server renders it: BOS here.
  const json bos =
      fetch(port, "POST", "/tokenize",
            json{{"content", text}, {"add_special", true}, {"with_pieces", true}}.dump())
          .json()["tokens"][0];
  ASSERT_FALSE(bos["piece"].get<std::string>().empty());
  EXPECT_EQ(
      fetch(port, "POST", "/detokenize", json{{"tokens", {bos["id"]}}}.dump()).json()["content"],
      bos["piece"]);
  const json usage =
      fetch(port, "POST", "/v1/completions", json{{"prompt", text}, {"max_tokens", 1}}.dump())
          .json()["usage"];
  EXPECT_EQ(usage["prompt_tokens"], with_bos["tokens"].size());
}

// vLLM's /tokenize form: {"prompt"} with its special tokens added by default, answered
// with count, max_model_len and, when asked, each id's vocabulary text.
TEST(Endpoints, TokenizeAnswersVllmsFormInVllmsShape) {
  const uint16_t port = shared_server().port();
  const std::string text = "Hello, world";
  const json llama =
      fetch(port, "POST", "/tokenize", json{{"content", text}, {"add_special", true}}.dump())
          .json();
  const json vllm =
      fetch(port, "POST", "/tokenize",
            json{{"model", "x"}, {"prompt", text}, {"return_token_strs", true}}.dump())
          .json();
  EXPECT_EQ(vllm["tokens"], llama["tokens"]);
  EXPECT_EQ(vllm["count"], llama["tokens"].size());
  EXPECT_EQ(vllm["max_model_len"],
            fetch(port, "GET", "/v1/models").json()["data"][0]["max_model_len"]);
  ASSERT_EQ(vllm["token_strs"].size(), llama["tokens"].size());
  EXPECT_EQ(fetch(port, "POST", "/detokenize", json{{"tokens", vllm["tokens"]}}.dump())
                    .json()["prompt"]
                    .get<std::string>()
                    .find("Hello, world") != std::string::npos,
            true);
}

// vLLM's chat form of /tokenize: the prompt a chat completion of the same messages feeds
// the model (the chat template's text, its markers parsed as special tokens, the user's
// text not, and BOS as the model's rule adds it). It was refused by name before.
TEST(Endpoints, TokenizeReadsVllmsChatForm) {
  const uint16_t port = shared_server().port();
  const json messages = json::array({{{"role", "system"}, {"content", "Be brief."}},
                                     {{"role", "user"}, {"content", "Hello there"}}});
  const json chat =
      fetch(port, "POST", "/tokenize",
            json{{"model", "tiny"}, {"messages", messages}, {"return_token_strs", true}}.dump())
          .json();
  const std::string prompt =
      fetch(port, "POST", "/apply-template", json{{"messages", messages}}.dump()).json()["prompt"];
  const json plain =
      fetch(port, "POST", "/tokenize", json{{"content", prompt}, {"add_special", true}}.dump())
          .json();
  EXPECT_EQ(chat["tokens"], plain["tokens"]);
  EXPECT_EQ(chat["count"], plain["tokens"].size());
  EXPECT_EQ(chat["token_strs"].size(), plain["tokens"].size());
  const json usage = fetch(port, "POST", "/v1/chat/completions",
                           json{{"messages", messages}, {"max_tokens", 1}}.dump())
                         .json()["usage"];
  EXPECT_EQ(usage["prompt_tokens"], chat["count"]);
  // Without the generation prompt: fewer tokens, the same start.
  const json bare = fetch(port, "POST", "/tokenize",
                          json{{"messages", messages}, {"add_generation_prompt", false}}.dump())
                        .json();
  ASSERT_LT(bare["count"].get<size_t>(), chat["count"].get<size_t>());
  for (size_t i = 0; i < bare["tokens"].size(); ++i)
    EXPECT_EQ(bare["tokens"][i], chat["tokens"][i]) << i;
  // add_special_tokens true would add a second BOS: refused by name.
  const auto twice = fetch(port, "POST", "/tokenize",
                           json{{"messages", messages}, {"add_special_tokens", true}}.dump());
  EXPECT_EQ(twice.status, 400);
  EXPECT_EQ(twice.json()["error"]["param"], "add_special_tokens");
  // A bad message is a 400 naming it, as on /v1/chat/completions.
  const auto refused =
      fetch(port, "POST", "/tokenize", json{{"messages", json::array({{{"role", "x"}}})}}.dump());
  EXPECT_EQ(refused.status, 400);
  EXPECT_NE(refused.json()["error"]["param"].get<std::string>().find("messages"),
            std::string::npos);
}

// On a SentencePiece model /detokenize keeps the leading space, as llama-server's does: a
// client detokenizing token by token had got "Helloworld".
TEST(Endpoints, DetokenizeKeepsSentencePiecesLeadingSpace) {
  TANDEM_REQUIRE_SHARED();
  ServerProcess server(*shared_dir() / "models" / "rand-tiny-llama-spm-f16.gguf");
  const json ids =
      fetch(server.port(), "POST", "/tokenize", json{{"content", "Hello world"}}.dump())
          .json()["tokens"];
  ASSERT_EQ(ids.size(), 2u);
  auto detokenize = [&](const json& tokens) {
    return fetch(server.port(), "POST", "/detokenize", json{{"tokens", tokens}}.dump())
        .json()["content"]
        .get<std::string>();
  };
  EXPECT_EQ(detokenize(ids), " Hello world");
  EXPECT_EQ(detokenize(json::array({ids[0]})) + detokenize(json::array({ids[1]})), " Hello world");
}

// The prefix cache as a client sees it: the same long prompt again comes back with the
// blocks it found reported as usage.prompt_tokens_details.cached_tokens, streamed or not,
// and the same text.
TEST(Endpoints, ARepeatedPromptReportsItsCachedTokens) {
  const uint16_t port = shared_server().port();
  const std::string prompt(80, 'k');  // one token per byte at most: several full blocks
  const std::string body =
      json{{"prompt", prompt}, {"max_tokens", 3}, {"seed", 9}, {"temperature", 1}}.dump();
  const json first = fetch(port, "POST", "/v1/completions", body).json();
  const json again = fetch(port, "POST", "/v1/completions", body).json();
  const int64_t prompt_tokens = again["usage"]["prompt_tokens"];
  const int64_t cached = again["usage"]["prompt_tokens_details"]["cached_tokens"];
  EXPECT_GE(cached, 16);
  EXPECT_LT(cached, prompt_tokens);
  EXPECT_EQ(cached % 16, 0);
  EXPECT_EQ(again["choices"][0]["text"], first["choices"][0]["text"]);
  json streamed = json::parse(body);
  streamed["stream"] = true;
  streamed["stream_options"] = {{"include_usage", true}};
  const std::string events = fetch(port, "POST", "/v1/completions", streamed.dump()).body;
  EXPECT_NE(events.find("\"cached_tokens\":" + std::to_string(cached)), std::string::npos)
      << events;
  // The prompt twice in one list: both copies found the blocks (the second through the
  // first, which computes the shared part once), and usage sums them as vLLM would.
  json listed = json::parse(body);
  listed["prompt"] = {prompt, prompt};
  const json both = fetch(port, "POST", "/v1/completions", listed.dump()).json();
  EXPECT_EQ(both["usage"]["prompt_tokens"], 2 * prompt_tokens);
  EXPECT_EQ(both["usage"]["prompt_tokens_details"]["cached_tokens"], 2 * cached) << both;
}

// vLLM's cache_salt over HTTP: a salted prompt finds only its salt's blocks, a chat request's
// as well, and the text is the same with or without a hit.
TEST(Endpoints, ACacheSaltIsolatesThePrefixCache) {
  const uint16_t port = shared_server().port();
  const std::string prompt(80, 's');
  auto cached_of = [&](const char* salt, std::string* text) {
    json body = {{"prompt", prompt}, {"max_tokens", 3}, {"seed", 4}, {"temperature", 1}};
    if (*salt) body["cache_salt"] = salt;
    const json answer = fetch(port, "POST", "/v1/completions", body.dump()).json();
    *text = answer["choices"][0]["text"];
    return answer["usage"]["prompt_tokens_details"]["cached_tokens"].get<int64_t>();
  };
  std::string first, text;
  EXPECT_EQ(cached_of("tenant-1", &first), 0);
  EXPECT_EQ(cached_of("tenant-2", &text), 0);
  EXPECT_EQ(text, first);
  EXPECT_EQ(cached_of("", &text), 0);
  EXPECT_GE(cached_of("tenant-1", &text), 16);
  EXPECT_EQ(text, first);
}

// Latencies are per choice, as vLLM measures each of n choices as a request of its own: one
// first-token time per choice and only gaps within a choice (not from choice 0's token to
// choice 1's in the same step). The prompt counter agrees with usage (each prompt once).
TEST(Endpoints, MetricsTimeEachChoiceAloneAndCountPromptsAsUsageDoes) {
  const uint16_t port = shared_server().port();
  auto scrape = [port](const char* series) {
    return metric_value(fetch(port, "GET", "/metrics").body, series).value_or(-1);
  };
  const double ttft = scrape("tandem_time_to_first_token_seconds_count");
  const double itl = scrape("tandem_inter_token_latency_seconds_count");
  const double prompts = scrape("tandem_prompt_tokens_total");
  // Letters only: every token is a whole character, so each shows as a piece of text.
  const json body = {{"prompt", "metrics"}, {"max_tokens", 6},  {"n", 3},
                     {"seed", 4},           {"temperature", 1}, {"guided_regex", "[a-z]{6}"}};
  const HttpResult r = fetch(port, "POST", "/v1/completions", body.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  const json answer = json::parse(r.body);
  for (const json& choice : answer["choices"])
    EXPECT_EQ(choice["text"].get<std::string>().size(), 6u);
  EXPECT_EQ(scrape("tandem_time_to_first_token_seconds_count") - ttft, 3);
  EXPECT_EQ(scrape("tandem_inter_token_latency_seconds_count") - itl, 3 * 5);
  EXPECT_EQ(scrape("tandem_prompt_tokens_total") - prompts,
            answer["usage"]["prompt_tokens"].get<double>());
}

TEST(Endpoints, MetricsCountRequestsAndPassPromtool) {
  const uint16_t port = shared_server().port();
  ASSERT_EQ(fetch(port, "POST", "/v1/completions",
                  R"({"prompt": "m", "max_tokens": 16, "seed": 3, "temperature": 0.5})")
                .status,
            200);
  ASSERT_EQ(fetch(port, "GET", "/no-such-route").status, 404);
  const HttpResult page = fetch(port, "GET", "/metrics");
  ASSERT_EQ(page.status, 200);
  EXPECT_EQ(page.headers.at("content-type").rfind("text/plain", 0), 0u);
  const std::string& m = page.body;
  EXPECT_GE(metric_value(m,
                         "tandem_http_requests_total{endpoint=\"/v1/completions\",status="
                         "\"200\"}")
                .value_or(0),
            1);
  EXPECT_GE(
      metric_value(m, "tandem_http_requests_total{endpoint=\"other\",status=\"404\"}").value_or(0),
      1);
  EXPECT_GE(metric_value(m, "tandem_generation_tokens_total").value_or(0), 4);
  EXPECT_GE(metric_value(m, "tandem_prompt_tokens_total").value_or(0), 1);
  EXPECT_GE(metric_value(m, "tandem_time_to_first_token_seconds_count").value_or(0), 1);
  EXPECT_GE(metric_value(m, "tandem_e2e_request_latency_seconds_count").value_or(0), 1);
  EXPECT_GE(metric_value(m, "tandem_inter_token_latency_seconds_count").value_or(0), 1);
  EXPECT_GT(metric_value(m, "tandem_kv_blocks_capacity").value_or(0), 0);
  EXPECT_TRUE(metric_value(m, "tandem_kv_blocks_used").has_value());
  EXPECT_TRUE(metric_value(m, "tandem_requests_running").has_value());
  EXPECT_TRUE(metric_value(m, "tandem_requests_waiting").has_value());
  // serve paces prompt chunks by default: between the pacer's floor (one token: on a
  // loaded machine its fitted step times can price a chunk that low) and the step budget.
  EXPECT_GE(metric_value(m, "tandem_prefill_chunk_tokens").value_or(0), 1);
  EXPECT_LE(metric_value(m, "tandem_prefill_chunk_tokens").value_or(1e9), 512);
  EXPECT_GE(metric_value(m, "tandem_prefill_sustained_share").value_or(-1), 0);
  EXPECT_LE(metric_value(m, "tandem_prefill_sustained_share").value_or(2), 1);
  EXPECT_TRUE(metric_value(m, "tandem_device_busy_seconds_total").has_value());
  EXPECT_TRUE(metric_value(m, "tandem_device_idle_seconds_total").has_value());
  EXPECT_TRUE(metric_value(m, "tandem_chain_breaks_total{reason=\"finish\"}").has_value());
  EXPECT_TRUE(metric_value(m, "tandem_discarded_tokens_total").has_value());
  EXPECT_GT(metric_value(m, "tandem_kv_bytes_per_token").value_or(0), 0);
  EXPECT_GT(metric_value(m, "tandem_kv_capacity_tokens").value_or(0), 0);
  EXPECT_GE(metric_value(m, "tandem_prefix_cache_queried_tokens_total").value_or(0), 1);
  EXPECT_TRUE(metric_value(m, "tandem_prefix_cache_hit_tokens_total").has_value());
  EXPECT_TRUE(metric_value(m, "tandem_preemptions_total").has_value());
  EXPECT_TRUE(metric_value(m, "tandem_kv_blocks_cached").has_value());
  // The grammar masks' bound: --grammar-cache-mib's default, 256 MiB.
  EXPECT_EQ(metric_value(m, "tandem_grammar_mask_budget_bytes").value_or(0), 256.0 * (1 << 20));
  EXPECT_TRUE(metric_value(m, "tandem_grammar_mask_bytes").has_value());
  EXPECT_TRUE(metric_value(m, "tandem_grammar_masks_not_kept_total").has_value());

  if (std::system("command -v promtool >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "promtool is absent (Debian's prometheus package): not linted";
  }
  ScratchDir dir;
  const auto path = dir.file("metrics.txt");
  std::ofstream(path) << m;
  const std::string command = "promtool check metrics < " + path.string() + " 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buffer[512];
  while (std::fgets(buffer, sizeof buffer, pipe)) output += buffer;
  EXPECT_EQ(::pclose(pipe), 0) << output;
}

}  // namespace
}  // namespace tandem::testing::TANDEM_UNITY_ID
