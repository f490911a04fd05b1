// Several choices and prompts (issue 16, item 2) against a real `tandem serve`: n choices
// each replay alone with their reported seed, prompt lists are indexed prompt_index * n +
// choice, streamed equals whole (interleaved by index, a finish chunk per choice, one usage
// chunk), echo and logprobs per choice, and the same answers with overlap on and off.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "tests/server/server_test_support.h"

namespace tandem::testing::TANDEM_UNITY_ID {
namespace {

using nlohmann::json;

std::string text_of(const json& choice) {
  if (choice.contains("message")) return choice["message"]["content"];
  return choice["text"];
}

// The request alone, n = 1, with the seed a choice reported.
std::string replay(const std::string& route, json body, const json& prompt, uint64_t seed) {
  body.erase("n");
  if (!prompt.is_null()) body["prompt"] = prompt;
  body["seed"] = seed;
  const json one = post_json(route, body);
  EXPECT_EQ(one["choices"].size(), 1u);
  return text_of(one["choices"][0]);
}

void expect_choices_replay(const std::string& route, const json& body, size_t count) {
  const json whole = post_json(route, body);
  ASSERT_EQ(whole["choices"].size(), count);
  std::set<uint64_t> seeds;
  std::set<std::string> texts;
  for (size_t i = 0; i < count; ++i) {
    const json& choice = whole["choices"][i];
    EXPECT_EQ(choice["index"], i);
    const uint64_t seed = choice["seed"];
    EXPECT_LT(seed, uint64_t{1} << 53);
    seeds.insert(seed);
    texts.insert(text_of(choice));
    EXPECT_EQ(text_of(choice), replay(route, body, nullptr, seed)) << "choice " << i;
  }
  EXPECT_EQ(whole["choices"][0]["seed"], body["seed"]);  // choice 0 keeps the request's
  EXPECT_EQ(seeds.size(), count);
  EXPECT_GT(texts.size(), 1u);  // sampled at temperature 1: the choices differ
}

TEST(Choices, EachCompletionChoiceReplaysAloneWithItsSeed) {
  const json body = {{"prompt", "The tiny model says something long enough to span blocks"},
                     {"n", 4},
                     {"seed", 77},
                     {"max_tokens", 12},
                     {"temperature", 1.0},
                     {"ignore_eos", true}};
  expect_choices_replay("/v1/completions", body, 4);
  const json whole = post_json("/v1/completions", body);
  const json single =
      post_json("/v1/completions", json{{"prompt", body["prompt"]}, {"max_tokens", 1}});
  EXPECT_EQ(whole["usage"]["prompt_tokens"], single["usage"]["prompt_tokens"]);  // counted once
  EXPECT_EQ(whole["usage"]["completion_tokens"], 4 * 12);                        // every choice's
  EXPECT_EQ(whole["seed"], 77);
}

TEST(Choices, EachChatChoiceReplaysAloneWithItsSeed) {
  const json body = {{"messages", json::array({{{"role", "user"}, {"content", "Say hi"}}})},
                     {"n", 3},
                     {"seed", 5},
                     {"max_tokens", 10},
                     {"temperature", 1.0}};
  expect_choices_replay("/v1/chat/completions", body, 3);
}

// Two prompts, n = 2: choice i is prompt i / 2's, and replays as that prompt alone.
TEST(Choices, PromptListsAreIndexedPromptTimesNPlusChoice) {
  for (const json& prompts : {json::array({"First prompt here", "A second, longer prompt"}),
                              json::array({json::array({10, 20, 30}), json::array({40, 50})})}) {
    const json body = {{"prompt", prompts},  {"n", 2},
                       {"seed", 11},         {"max_tokens", 8},
                       {"temperature", 1.0}, {"ignore_eos", true}};
    const json whole = post_json("/v1/completions", body);
    ASSERT_EQ(whole["choices"].size(), 4u);
    int64_t prompt_tokens = 0;
    for (size_t p = 0; p < 2; ++p) {
      prompt_tokens +=
          post_json("/v1/completions",
                    json{{"prompt", prompts[p]}, {"max_tokens", 1}})["usage"]["prompt_tokens"]
              .get<int64_t>();
    }
    EXPECT_EQ(whole["usage"]["prompt_tokens"], prompt_tokens);  // each prompt once
    EXPECT_EQ(whole["usage"]["completion_tokens"], 4 * 8);
    for (size_t i = 0; i < 4; ++i) {
      const json& choice = whole["choices"][i];
      EXPECT_EQ(choice["index"], i);
      EXPECT_EQ(text_of(choice), replay("/v1/completions", body, prompts[i / 2], choice["seed"]))
          << "choice " << i;
    }
  }
}

// The stream's chunks, per index: text laid end to end, and the finish chunk last.
TEST(Choices, StreamedChoicesInterleaveByIndexAndEqualTheWholeResponse) {
  json body = {{"prompt", json::array({"One prompt", "Another prompt"})},
               {"n", 3},
               {"seed", 3},
               {"max_tokens", 10},
               {"temperature", 1.0},
               {"logprobs", 2}};
  const json whole = post_json("/v1/completions", body);
  body["stream"] = true;
  body["stream_options"] = {{"include_usage", true}};
  HttpClient client(shared_server().port());
  const HttpResult r =
      client.stream("/v1/completions", body.dump(), [](const std::string&) { return true; });
  ASSERT_EQ(r.status, 200);
  std::map<int, std::string> texts;
  std::map<int, int> finishes;
  std::map<int, size_t> logprob_tokens;
  int usage_chunks = 0;
  for (const std::string& event : sse_data(r.body)) {
    if (event == "[DONE]") continue;
    const json chunk = json::parse(event);
    if (chunk["choices"].empty()) {
      ++usage_chunks;
      EXPECT_EQ(chunk["usage"]["prompt_tokens"], whole["usage"]["prompt_tokens"]);
      EXPECT_EQ(chunk["usage"]["completion_tokens"], whole["usage"]["completion_tokens"]);
      continue;
    }
    ASSERT_EQ(chunk["choices"].size(), 1u);
    const json& c = chunk["choices"][0];
    const int index = c["index"];
    EXPECT_EQ(finishes[index], 0) << "a chunk after choice " << index << " finished";
    EXPECT_EQ(c["seed"], whole["choices"][index]["seed"]);
    texts[index] += c["text"].get<std::string>();
    if (!c["logprobs"].is_null()) logprob_tokens[index] += c["logprobs"]["tokens"].size();
    if (!c["finish_reason"].is_null()) ++finishes[index];
  }
  EXPECT_EQ(usage_chunks, 1);
  ASSERT_EQ(texts.size(), 6u);
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(texts[i], whole["choices"][i]["text"]) << "choice " << i;
    EXPECT_EQ(finishes[i], 1);
    EXPECT_EQ(logprob_tokens[i], whole["choices"][i]["logprobs"]["tokens"].size());
  }
}

TEST(Choices, EchoAndLogprobsArePerChoice) {
  const json body = {{"prompt", "Echo me"}, {"n", 2},        {"seed", 8},         {"max_tokens", 3},
                     {"echo", true},        {"logprobs", 1}, {"ignore_eos", true}};
  const json whole = post_json("/v1/completions", body);
  ASSERT_EQ(whole["choices"].size(), 2u);
  const size_t prompt_tokens = whole["usage"]["prompt_tokens"];
  for (const json& choice : whole["choices"]) {
    EXPECT_EQ(choice["text"].get<std::string>().rfind("Echo me", 0), 0u);
    const size_t generated = 3;
    EXPECT_EQ(choice["logprobs"]["tokens"].size(), prompt_tokens + generated);
    EXPECT_TRUE(choice["logprobs"]["token_logprobs"][0].is_null());
  }
}

// Law 1 for n > 1: a server with overlap off gives the same choices.
TEST(Choices, OverlapOnAndOffGiveTheSameChoices) {
  ServerProcess off(tiny_model(), {"--overlap", "off", "--kv-tokens", "4096"});
  const json body = {{"prompt", json::array({"Overlap law", "for several choices"})},
                     {"n", 4},
                     {"seed", 21},
                     {"max_tokens", 20},
                     {"temperature", 0.9}};
  const json on = post_json("/v1/completions", body);
  const json plain = post_json(off.port(), "/v1/completions", body);
  ASSERT_EQ(on["choices"].size(), 8u);
  ASSERT_EQ(plain["choices"].size(), 8u);
  for (size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(on["choices"][i]["text"], plain["choices"][i]["text"]) << "choice " << i;
    EXPECT_EQ(on["choices"][i]["seed"], plain["choices"][i]["seed"]);
  }
}

TEST(Choices, BestOfAndBadNAreRefusedByName) {
  for (const auto& [extra, param] :
       std::vector<std::pair<json, std::string>>{{{{"best_of", 3}}, "best_of"},
                                                 {{{"n", 0}}, "n"},
                                                 {{{"n", 17}}, "n"},
                                                 {{{"n", 1.5}}, "n"},
                                                 {{{"n", "2"}}, "n"}}) {
    json body = {{"prompt", "x"}};
    body.update(extra);
    const HttpResult r = fetch(shared_server().port(), "POST", "/v1/completions", body.dump());
    EXPECT_EQ(r.status, 400) << body.dump();
    EXPECT_EQ(r.json()["error"]["param"], param) << body.dump();
  }
}

}  // namespace
}  // namespace tandem::testing::TANDEM_UNITY_ID
