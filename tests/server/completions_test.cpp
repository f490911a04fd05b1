// /v1/completions and /v1/chat/completions over loopback against a real `tandem serve`:
// streamed text equals non-streamed text (law 3), seeds replay, usage and finish reasons
// are right, and random byte tokens still give valid UTF-8, JSON and SSE.
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "runner/tokenizer/utf8.h"
#include "tests/server/server_test_support.h"

namespace tandem::testing::TANDEM_UNITY_ID {
namespace {

using nlohmann::json;

// Usage without the prefix-cache hit, which depends on what ran before.
json without_cached(json usage) {
  usage.erase("prompt_tokens_details");
  return usage;
}

struct Streamed {
  std::string text;
  std::vector<json> chunks;  // every data event but [DONE], parsed
  bool done_last = false;    // [DONE] was the last event
  std::string role;          // chat: the first chunk's delta role
};

Streamed read_stream(const HttpResult& result, bool chat) {
  EXPECT_EQ(result.status, 200) << result.body;
  EXPECT_EQ(result.headers.at("content-type"), "text/event-stream");
  EXPECT_TRUE(utf8::is_valid(result.body));
  Streamed out;
  const auto events = sse_data(result.body);
  for (size_t i = 0; i < events.size(); ++i) {
    if (events[i] == "[DONE]") {
      out.done_last = i + 1 == events.size();
      continue;
    }
    json chunk = json::parse(events[i]);  // throws on invalid JSON or UTF-8
    if (!chunk["choices"].empty()) {
      const json& choice = chunk["choices"][0];
      if (chat) {
        if (choice["delta"].contains("role")) out.role = choice["delta"]["role"];
        if (choice["delta"].contains("content")) out.text += choice["delta"]["content"];
      } else {
        out.text += choice["text"].get<std::string>();
      }
    }
    out.chunks.push_back(std::move(chunk));
  }
  return out;
}

json completion_body(bool stream, uint64_t seed, int max_tokens) {
  json body = {{"prompt", "The tiny model says"},
               {"max_tokens", max_tokens},
               {"seed", seed},
               {"temperature", 1.0},
               {"stream", stream}};
  if (stream) body["stream_options"] = {{"include_usage", true}};
  return body;
}

json chat_body(bool stream, uint64_t seed, int max_tokens) {
  json body = {{"messages",
                {{{"role", "system"}, {"content", "Be brief."}},
                 {{"role", "user"}, {"content", "Hello there"}}}},
               {"max_tokens", max_tokens},
               {"seed", seed},
               {"stream", stream}};
  if (stream) body["stream_options"] = {{"include_usage", true}};
  return body;
}

TEST(Completions, StreamedTextEqualsNonStreamedTextForTheSameSeed) {
  const uint16_t port = shared_server().port();
  for (uint64_t seed : {1u, 2u, 3u, 42u}) {
    const HttpResult whole =
        fetch(port, "POST", "/v1/completions", completion_body(false, seed, 40).dump());
    ASSERT_EQ(whole.status, 200) << whole.body;
    ASSERT_TRUE(utf8::is_valid(whole.body));
    const json body = whole.json();
    HttpClient client(port);
    const HttpResult stream =
        client.stream("/v1/completions", completion_body(true, seed, 40).dump(),
                      [](const std::string&) { return true; });
    const Streamed streamed = read_stream(stream, false);
    EXPECT_EQ(streamed.text, body["choices"][0]["text"].get<std::string>()) << "seed " << seed;
    // The response id is also the x-request-id header, which OpenAI's clients read.
    EXPECT_EQ(whole.headers.at("x-request-id"), body["id"].get<std::string>());
    ASSERT_FALSE(streamed.chunks.empty());
    EXPECT_EQ(stream.headers.at("x-request-id"), streamed.chunks[0]["id"].get<std::string>());
    EXPECT_TRUE(streamed.done_last);
    ASSERT_GE(streamed.chunks.size(), 2u);
    const json& last = streamed.chunks[streamed.chunks.size() - 2];
    EXPECT_EQ(last["choices"][0]["finish_reason"], body["choices"][0]["finish_reason"]);
    const json& usage_chunk = streamed.chunks.back();
    EXPECT_TRUE(usage_chunk["choices"].empty());
    // The same counts; the second request found the first's prompt blocks cached.
    EXPECT_EQ(without_cached(usage_chunk["usage"]), without_cached(body["usage"]));
    for (const json& chunk : streamed.chunks) EXPECT_EQ(chunk["seed"], seed);
  }
}

TEST(ChatCompletions, StreamedTextEqualsNonStreamedTextAndStartsWithTheRole) {
  const uint16_t port = shared_server().port();
  for (uint64_t seed : {5u, 6u}) {
    const HttpResult whole =
        fetch(port, "POST", "/v1/chat/completions", chat_body(false, seed, 30).dump());
    ASSERT_EQ(whole.status, 200) << whole.body;
    const json body = whole.json();
    EXPECT_EQ(body["object"], "chat.completion");
    EXPECT_EQ(body["choices"][0]["message"]["role"], "assistant");
    HttpClient client(port);
    const Streamed streamed =
        read_stream(client.stream("/v1/chat/completions", chat_body(true, seed, 30).dump(),
                                  [](const std::string&) { return true; }),
                    true);
    EXPECT_EQ(streamed.text, body["choices"][0]["message"]["content"].get<std::string>());
    ASSERT_FALSE(streamed.chunks.empty());
    EXPECT_EQ(streamed.chunks.front()["choices"][0]["delta"]["role"], "assistant");
    EXPECT_EQ(streamed.role, "assistant");
    EXPECT_EQ(without_cached(streamed.chunks.back()["usage"]), without_cached(body["usage"]));
    EXPECT_TRUE(streamed.done_last);
  }
}

TEST(Completions, ASeededRequestReplaysAndAnUnseededOneReportsItsSeed) {
  const uint16_t port = shared_server().port();
  const json first =
      fetch(port, "POST", "/v1/completions", completion_body(false, 77, 24).dump()).json();
  const json again =
      fetch(port, "POST", "/v1/completions", completion_body(false, 77, 24).dump()).json();
  EXPECT_EQ(first["choices"][0]["text"], again["choices"][0]["text"]);
  EXPECT_EQ(first["seed"], 77);

  json unseeded = completion_body(false, 0, 24);
  unseeded.erase("seed");
  const json drawn = fetch(port, "POST", "/v1/completions", unseeded.dump()).json();
  ASSERT_TRUE(drawn["seed"].is_number_unsigned());
  json replay = unseeded;
  replay["seed"] = drawn["seed"];
  const json replayed = fetch(port, "POST", "/v1/completions", replay.dump()).json();
  EXPECT_EQ(replayed["choices"][0]["text"], drawn["choices"][0]["text"]);
}

TEST(Completions, MaxTokensEndsWithLengthAndUsageCountsEveryToken) {
  const uint16_t port = shared_server().port();
  json request = completion_body(false, 9, 12);
  request["ignore_eos"] = true;
  const json body = fetch(port, "POST", "/v1/completions", request.dump()).json();
  EXPECT_EQ(body["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(body["usage"]["completion_tokens"], 12);
  EXPECT_EQ(body["usage"]["total_tokens"].get<int>(),
            body["usage"]["prompt_tokens"].get<int>() + 12);

  request.erase("max_tokens");  // OpenAI's completions default: 16
  const json by_default = fetch(port, "POST", "/v1/completions", request.dump()).json();
  EXPECT_EQ(by_default["usage"]["completion_tokens"], 16);
}

TEST(ChatCompletions, WithoutMaxTokensChatRunsUntilTheContextEnds) {
  json request = chat_body(false, 5, 0);
  request.erase("max_tokens");
  request["ignore_eos"] = true;
  const json body =
      fetch(shared_server().port(), "POST", "/v1/chat/completions", request.dump()).json();
  EXPECT_EQ(body["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(body["usage"]["total_tokens"], 512);  // the tiny model's context
}

// A KV pool smaller than the context lowers the served context to what it holds: the
// server advertises it, refuses a longer prompt as any too long for the context, and
// generation stops where the pool ends.
TEST(Completions, AKvPoolSmallerThanTheContextBecomesTheServedContext) {
  ServerProcess server(tiny_model(), {"--kv-tokens", "256"});  // context 512
  const json models = fetch(server.port(), "GET", "/v1/models").json();
  EXPECT_EQ(models["data"][0]["max_model_len"], 256) << models.dump();
  EXPECT_NE(server.stderr_text().find("context lowered from 512 to 256 tokens, what the KV cache "
                                      "holds; raise --kv-tokens to at least 512"),
            std::string::npos)
      << server.stderr_text();
  const HttpResult too_long =
      fetch(server.port(), "POST", "/v1/completions",
            json{{"prompt", std::vector<int>(300, 72)}, {"max_tokens", 1}}.dump());
  EXPECT_EQ(too_long.status, 400) << too_long.body;
  EXPECT_EQ(too_long.json()["error"]["code"], "context_length_exceeded") << too_long.body;
  EXPECT_EQ(too_long.json()["error"]["param"], "prompt") << too_long.body;
  EXPECT_NE(too_long.body.find("maximum context length is 256 tokens"), std::string::npos)
      << too_long.body;
  json request = completion_body(false, 5, 1000);
  request["ignore_eos"] = true;
  const json asked = fetch(server.port(), "POST", "/v1/completions", request.dump()).json();
  EXPECT_EQ(asked["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(asked["usage"]["total_tokens"], 256);
  json chat = chat_body(false, 5, 0);
  chat.erase("max_tokens");
  chat["ignore_eos"] = true;
  const json unbounded = fetch(server.port(), "POST", "/v1/chat/completions", chat.dump()).json();
  EXPECT_EQ(unbounded["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(unbounded["usage"]["total_tokens"], 256);
}

TEST(Completions, PromptTokenIdsAreAcceptedAsThePrompt) {
  const uint16_t port = shared_server().port();
  const json body =
      fetch(port, "POST", "/v1/completions",
            json{{"prompt", {72, 101, 108}}, {"max_tokens", 3}, {"temperature", 0}}.dump())
          .json();
  EXPECT_EQ(body["usage"]["prompt_tokens"], 3);
}

// The byte-level vocabulary of make-model's tiny shape samples arbitrary bytes at
// temperature 1: many texts are invalid UTF-8 as bytes, and must still come out valid.
TEST(Completions, RandomByteTokensStillGiveValidUtf8JsonAndSse) {
  const uint16_t port = shared_server().port();
  int replaced = 0;
  for (uint64_t seed = 100; seed < 110; ++seed) {
    json request = completion_body(false, seed, 64);
    request["ignore_eos"] = true;
    const HttpResult whole = fetch(port, "POST", "/v1/completions", request.dump());
    ASSERT_TRUE(utf8::is_valid(whole.body));
    const std::string text = whole.json()["choices"][0]["text"];
    if (text.find("\xEF\xBF\xBD") != std::string::npos) ++replaced;
    request["stream"] = true;
    HttpClient client(port);
    const Streamed streamed = read_stream(
        client.stream("/v1/completions", request.dump(), [](const std::string&) { return true; }),
        false);
    EXPECT_EQ(streamed.text, text);
  }
  EXPECT_GT(replaced, 0) << "no invalid byte sequence was sampled: the test proves nothing";
}

TEST(Completions, TwoHundredConcurrentStreamsAllCompleteWithConsistentUsage) {
  const uint16_t port = shared_server().port();
  constexpr int kRequests = 200;
  constexpr int kMaxTokens = 12;
  std::vector<std::string> bodies(kRequests);
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int i = 0; i < kRequests; ++i) {
    threads.emplace_back([&, i] {
      try {
        HttpClient client(port);
        json request = completion_body(true, 1000 + i, kMaxTokens);
        request["ignore_eos"] = true;
        bodies[i] =
            client
                .stream("/v1/completions", request.dump(), [](const std::string&) { return true; })
                .body;
      } catch (const std::exception&) {
        ++failures;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  ASSERT_EQ(failures.load(), 0);
  for (int i = 0; i < kRequests; ++i) {
    const auto events = sse_data(bodies[i]);
    ASSERT_GE(events.size(), 3u) << bodies[i];
    EXPECT_EQ(events.back(), "[DONE]");
    const json usage = json::parse(events[events.size() - 2])["usage"];
    const json last = json::parse(events[events.size() - 3])["choices"][0];
    const int completion = usage["completion_tokens"];
    EXPECT_EQ(completion, kMaxTokens);
    EXPECT_EQ(last["finish_reason"], "length");
    // Each text chunk carries the text of at least one token.
    EXPECT_LE(static_cast<int>(events.size()) - 3, completion);
  }
}

}  // namespace
}  // namespace tandem::testing::TANDEM_UNITY_ID
