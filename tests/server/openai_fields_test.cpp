// The OpenAI surface beyond text (issue 16) against a real `tandem serve`: logprobs
// (completions and chat, streamed equal to whole), echo with max_tokens 0, penalties, DRY,
// ids and system_fingerprint, the seeds the server draws, and `user` in
// the access log.
#include <signal.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/server/server_test_support.h"

namespace tandem::testing::TANDEM_UNITY_ID {
namespace {

using nlohmann::json;

// The choice's logprobs, whole, and the streamed chunks' logprobs laid end to end.
std::vector<json> streamed_chunks(const std::string& route, json body) {
  body["stream"] = true;
  HttpClient client(shared_server().port());
  const HttpResult r = client.stream(route, body.dump(), [](const std::string&) { return true; });
  EXPECT_EQ(r.status, 200) << r.body;
  std::vector<json> chunks;
  for (const std::string& event : sse_data(r.body)) {
    if (event != "[DONE]") chunks.push_back(json::parse(event));
  }
  return chunks;
}

TEST(Logprobs, CompletionsCarryTokensLogprobsTopAndOffsetsAndStreamTheSame) {
  const json body = {{"prompt", "The tiny model says"},
                     {"max_tokens", 12},
                     {"seed", 9},
                     {"logprobs", 3},
                     {"temperature", 0.8}};
  const json whole = post_json("/v1/completions", body);
  const json& lp = whole["choices"][0]["logprobs"];
  const size_t n = lp["tokens"].size();
  EXPECT_EQ(n, whole["usage"]["completion_tokens"].get<size_t>());
  ASSERT_EQ(lp["token_logprobs"].size(), n);
  ASSERT_EQ(lp["top_logprobs"].size(), n);
  ASSERT_EQ(lp["text_offset"].size(), n);
  int64_t offset = 0;
  for (size_t i = 0; i < n; ++i) {
    const double chosen = lp["token_logprobs"][i];
    EXPECT_LE(chosen, 0.0);
    const json& top = lp["top_logprobs"][i];
    // The 3 best and the sampled token, which is among them or joins them (fewer keys where
    // tokens that are parts of characters all show as U+FFFD).
    EXPECT_LE(top.size(), 4u);
    const std::string token = lp["tokens"][i];
    if (token.find("\xEF\xBF\xBD") == std::string::npos) {
      ASSERT_TRUE(top.contains(token)) << top.dump();
      EXPECT_EQ(top[token].get<double>(), chosen);
    }
    double best = -INFINITY;
    for (const auto& [token, value] : top.items()) best = std::max(best, value.get<double>());
    EXPECT_LE(chosen, best + 1e-6);  // nothing beats the most likely
    // Offsets count characters (a token that ends inside one counts it, the token holding
    // the rest nothing), so they only grow.
    EXPECT_GE(lp["text_offset"][i].get<int64_t>(), offset);
    offset = lp["text_offset"][i].get<int64_t>();
  }
  json streamed_tokens = json::array(), streamed_values = json::array(),
       streamed_offsets = json::array();
  for (const json& chunk : streamed_chunks("/v1/completions", body)) {
    if (chunk["choices"].empty() || chunk["choices"][0]["logprobs"].is_null()) continue;
    const json& part = chunk["choices"][0]["logprobs"];
    for (size_t i = 0; i < part["tokens"].size(); ++i) {
      streamed_tokens.push_back(part["tokens"][i]);
      streamed_values.push_back(part["token_logprobs"][i]);
      streamed_offsets.push_back(part["text_offset"][i]);
    }
  }
  EXPECT_EQ(streamed_tokens, lp["tokens"]);
  EXPECT_EQ(streamed_values, lp["token_logprobs"]);
  EXPECT_EQ(streamed_offsets, lp["text_offset"]);
}

TEST(Logprobs, ChatContentHasTokenLogprobBytesAndSortedTopLogprobs) {
  const json body = {{"messages", {{{"role", "user"}, {"content", "Hello there"}}}},
                     {"max_tokens", 10},
                     {"seed", 4},
                     {"logprobs", true},
                     {"top_logprobs", 2}};
  const json whole = post_json("/v1/chat/completions", body);
  const json& content = whole["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(content.size(), whole["usage"]["completion_tokens"].get<size_t>());
  for (const json& entry : content) {
    const std::string token = entry["token"];
    // bytes are the token's raw bytes; the token string shows them as UTF-8, with U+FFFD
    // for a token that is part of a character.
    ASSERT_FALSE(entry["bytes"].empty());
    if (token.find("\xEF\xBF\xBD") == std::string::npos) {
      std::string raw;
      for (const json& b : entry["bytes"]) raw += static_cast<char>(b.get<int>());
      EXPECT_EQ(raw, token);
    }
    ASSERT_EQ(entry["top_logprobs"].size(), 2u);
    EXPECT_GE(entry["top_logprobs"][0]["logprob"].get<double>(),
              entry["top_logprobs"][1]["logprob"].get<double>());
    EXPECT_LE(entry["logprob"].get<double>(),
              entry["top_logprobs"][0]["logprob"].get<double>() + 1e-6);
  }
  json streamed = json::array();
  for (const json& chunk : streamed_chunks("/v1/chat/completions", body)) {
    if (chunk["choices"].empty() || chunk["choices"][0]["logprobs"].is_null()) continue;
    for (const json& entry : chunk["choices"][0]["logprobs"]["content"]) streamed.push_back(entry);
  }
  EXPECT_EQ(streamed, content);
}

// A token prompt's echo shows its control tokens as the output shows them: only with
// skip_special_tokens false (vLLM decodes the ids with the same flag).
TEST(Logprobs, ATokenPromptsEchoShowsControlTokensOnlyWhenAskedTo) {
  const json tokenized = post_json("/tokenize", json{{"content", "A"}, {"add_special", true}});
  ASSERT_EQ(tokenized["tokens"].size(), 2u) << tokenized;  // BOS, "A"
  json body = {{"prompt", tokenized["tokens"]}, {"max_tokens", 0}, {"echo", true}, {"logprobs", 0}};
  EXPECT_EQ(post_json("/v1/completions", body)["choices"][0]["text"], "A");
  body["skip_special_tokens"] = false;
  const json choice = post_json("/v1/completions", body)["choices"][0];
  const std::string bos = choice["logprobs"]["tokens"][0];
  EXPECT_FALSE(bos.empty());
  EXPECT_EQ(choice["text"], bos + "A");
  // A list of token prompts echoes each one. (The echo read a prompt text that token
  // prompts do not have, past an empty vector: UBSan killed the server on this request.)
  const json listed = post_json(
      "/v1/completions", json{{"prompt", {{65, 66}, {67, 68}}}, {"max_tokens", 0}, {"echo", true}});
  ASSERT_EQ(listed["choices"].size(), 2u) << listed;
  EXPECT_EQ(listed["choices"][0]["text"], "AB");
  EXPECT_EQ(listed["choices"][1]["text"], "CD");
}

TEST(Logprobs, EchoWithMaxTokensZeroScoresThePromptAndGeneratesNothing) {
  const json body = {
      {"prompt", "The tiny model says hello"}, {"max_tokens", 0}, {"echo", true}, {"logprobs", 1}};
  const json whole = post_json("/v1/completions", body);
  const json& choice = whole["choices"][0];
  EXPECT_EQ(choice["text"], "The tiny model says hello");
  EXPECT_EQ(choice["finish_reason"], "length");
  EXPECT_EQ(whole["usage"]["completion_tokens"], 0);
  const json& lp = choice["logprobs"];
  ASSERT_EQ(lp["tokens"].size(), whole["usage"]["prompt_tokens"].get<size_t>());
  EXPECT_TRUE(lp["token_logprobs"][0].is_null());
  EXPECT_TRUE(lp["top_logprobs"][0].is_null());
  for (size_t i = 1; i < lp["token_logprobs"].size(); ++i) {
    EXPECT_LE(lp["token_logprobs"][i].get<double>(), 0.0);
    // The best token, and the prompt's own where it is another.
    const json& top = lp["top_logprobs"][i];
    EXPECT_GE(top.size(), 1u);
    EXPECT_LE(top.size(), 2u);
    EXPECT_TRUE(top.contains(lp["tokens"][i].get<std::string>()));
  }
  // Streamed: the same entries, and the prompt's text.
  json tokens = json::array(), values = json::array();
  std::string text;
  for (const json& chunk : streamed_chunks("/v1/completions", body)) {
    if (chunk["choices"].empty()) continue;
    text += chunk["choices"][0]["text"].get<std::string>();
    const json& part = chunk["choices"][0]["logprobs"];
    if (part.is_null()) continue;
    for (size_t i = 0; i < part["tokens"].size(); ++i) {
      tokens.push_back(part["tokens"][i]);
      values.push_back(part["token_logprobs"][i]);
    }
  }
  EXPECT_EQ(text, "The tiny model says hello");
  EXPECT_EQ(tokens, lp["tokens"]);
  EXPECT_EQ(values, lp["token_logprobs"]);
  // The prompt's scores do not depend on what is generated after it.
  json longer = body;
  longer["max_tokens"] = 5;
  const json with_output = post_json("/v1/completions", longer)["choices"][0];
  EXPECT_EQ(with_output["text"].get<std::string>().rfind("The tiny model says hello", 0), 0u);
  for (size_t i = 0; i < lp["tokens"].size(); ++i) {
    EXPECT_EQ(with_output["logprobs"]["token_logprobs"][i], lp["token_logprobs"][i]);
  }
}

// vLLM's return_tokens_as_token_ids: the same logprobs, each token named "token_id:N" by
// its id (the prompt's are the ids sent), chat's bytes and the offsets still the text's.
TEST(Logprobs, TokensAsIdsNameEachTokenByItsId) {
  const json ids =
      post_json("/tokenize", json{{"content", "The tiny model"}, {"add_special", true}});
  json body = {{"prompt", ids["tokens"]}, {"max_tokens", 6}, {"seed", 3},
               {"temperature", 0.9},      {"echo", true},    {"logprobs", 2}};
  const json plain = post_json("/v1/completions", body)["choices"][0]["logprobs"];
  body["return_tokens_as_token_ids"] = true;
  const json named = post_json("/v1/completions", body)["choices"][0]["logprobs"];
  ASSERT_EQ(named["tokens"].size(), plain["tokens"].size());
  EXPECT_EQ(named["token_logprobs"], plain["token_logprobs"]);
  EXPECT_EQ(named["text_offset"], plain["text_offset"]);
  const auto id_of = [](const json& name) {
    const std::string text = name.get<std::string>();
    EXPECT_EQ(text.rfind("token_id:", 0), 0u) << text;
    return std::stoi(text.substr(9));
  };
  for (size_t i = 0; i < named["tokens"].size(); ++i) {
    const int id = id_of(named["tokens"][i]);
    if (i < ids["tokens"].size()) {
      EXPECT_EQ(id, ids["tokens"][i].get<int>());
    }
    const json text = post_json("/detokenize", json{{"tokens", {id}}});
    EXPECT_EQ(text["content"], plain["tokens"][i]) << i;
    if (named["top_logprobs"][i].is_null()) continue;
    for (const auto& [key, value] : named["top_logprobs"][i].items()) id_of(json(key));
    // The 2 best and the sampled token: by text, tokens that show alike share a key.
    EXPECT_GE(named["top_logprobs"][i].size(), plain["top_logprobs"][i].size());
    EXPECT_LE(named["top_logprobs"][i].size(), 3u);
    EXPECT_EQ(named["top_logprobs"][i]["token_id:" + std::to_string(id)],
              named["token_logprobs"][i]);
  }
  // Chat: each entry's token and its alternatives' are named; bytes stay the token's own.
  json chat = {{"messages", {{{"role", "user"}, {"content", "Hi"}}}},
               {"max_tokens", 5},
               {"seed", 2},
               {"logprobs", true},
               {"top_logprobs", 2}};
  const json chat_plain = post_json("/v1/chat/completions", chat)["choices"][0]["logprobs"];
  chat["return_tokens_as_token_ids"] = true;
  const json chat_named = post_json("/v1/chat/completions", chat)["choices"][0]["logprobs"];
  ASSERT_EQ(chat_named["content"].size(), chat_plain["content"].size());
  for (size_t i = 0; i < chat_named["content"].size(); ++i) {
    const json& a = chat_named["content"][i];
    const json& b = chat_plain["content"][i];
    id_of(a["token"]);
    EXPECT_EQ(a["bytes"], b["bytes"]);
    EXPECT_EQ(a["logprob"], b["logprob"]);
    for (const json& top : a["top_logprobs"]) id_of(top["token"]);
  }
  json streamed = json::array();
  for (const json& chunk : streamed_chunks("/v1/chat/completions", chat)) {
    if (chunk["choices"].empty() || chunk["choices"][0]["logprobs"].is_null()) continue;
    for (const json& entry : chunk["choices"][0]["logprobs"]["content"]) streamed.push_back(entry);
  }
  EXPECT_EQ(streamed, chat_named["content"]);
}

TEST(Penalties, ChangeTheOutputAndReplayWithTheSeed) {
  json body = {{"prompt", "The tiny model says"}, {"max_tokens", 24}, {"temperature", 0}};
  const std::string plain = post_json("/v1/completions", body)["choices"][0]["text"];
  body["repetition_penalty"] = 1.8;
  body["frequency_penalty"] = 1.5;
  body["presence_penalty"] = 1.0;
  const std::string penalized = post_json("/v1/completions", body)["choices"][0]["text"];
  EXPECT_NE(plain, penalized);
  EXPECT_EQ(post_json("/v1/completions", body)["choices"][0]["text"], penalized);
  // Streamed equals whole with penalties too (the chained steps carry the counts).
  std::string streamed;
  for (const json& chunk : streamed_chunks("/v1/completions", body)) {
    if (!chunk["choices"].empty()) streamed += chunk["choices"][0]["text"].get<std::string>();
  }
  EXPECT_EQ(streamed, penalized);
}

// Violations of greedy's choice under llama.cpp's penalties over the window `last_n` of
// `counted` (the prompt and the output, or the output alone): a listed alternative whose
// penalized raw log-probability beats the chosen token's.
int window_violations(const json& logprobs, const std::vector<int32_t>& prompt, size_t last_n,
                      bool prompt_counted) {
  const auto id_of = [](const std::string& key) { return std::stoi(key.substr(9)); };
  std::vector<int32_t> history = prompt_counted ? prompt : std::vector<int32_t>{};
  int violations = 0;
  for (size_t i = 0; i < logprobs["tokens"].size(); ++i) {
    const std::vector<int32_t> window(
        history.end() - static_cast<std::ptrdiff_t>(std::min(last_n, history.size())),
        history.end());
    const auto penalty = [&](int32_t id) {
      const auto count = std::count(window.begin(), window.end(), id);
      return 1.5 * static_cast<double>(count) + (count > 0 ? 0.5 : 0.0);
    };
    const int32_t chosen = id_of(logprobs["tokens"][i]);
    const double score = logprobs["token_logprobs"][i].get<double>() - penalty(chosen);
    for (const auto& [key, value] : logprobs["top_logprobs"][i].items()) {
      violations += value.get<double>() - penalty(id_of(key)) > score + 1e-4;
    }
    history.push_back(chosen);
  }
  return violations;
}

// llama.cpp's penalties end to end: greedy picks, among the 20 listed alternatives, the
// best raw log-probability less count * frequency + presence over the last 12 tokens of
// the prompt and the output, which counting the output alone (vLLM's definitions) would
// contradict on this prompt.
TEST(Penalties, LlamaCppsWindowCountsThePromptsLastTokens) {
  const std::vector<int32_t> prompt = {89, 148, 256, 64, 153, 138, 156, 162, 129, 253};
  json body = {{"prompt", prompt},
               {"max_tokens", 16},
               {"temperature", 0},
               {"logprobs", 20},
               {"return_tokens_as_token_ids", true},
               {"frequency_penalty", 1.5},
               {"presence_penalty", 0.5},
               {"repeat_last_n", 12}};
  const json whole = post_json("/v1/completions", body);
  const json& logprobs = whole["choices"][0]["logprobs"];
  ASSERT_EQ(logprobs["tokens"].size(), 16u);
  EXPECT_EQ(window_violations(logprobs, prompt, 12, true), 0);
  EXPECT_GT(window_violations(logprobs, prompt, 12, false), 0);
  std::string streamed;
  for (const json& chunk : streamed_chunks("/v1/completions", body)) {
    if (!chunk["choices"].empty()) streamed += chunk["choices"][0]["text"].get<std::string>();
  }
  EXPECT_EQ(streamed, whole["choices"][0]["text"]);
  body.erase("repeat_last_n");
  EXPECT_NE(post_json("/v1/completions", body)["choices"][0]["text"], whole["choices"][0]["text"]);
}

// Greedy choices that extend a repeat DRY forbids: a generated token that, with the two
// tokens before it, repeats an earlier stretch of the prompt and the output (allowed length
// 2, no breaker in the history).
int dry_violations(const std::vector<int32_t>& prompt, const json& logprobs) {
  std::vector<int32_t> h = prompt;
  int violations = 0;
  for (const json& name : logprobs["tokens"]) {
    const int32_t next = std::stoi(name.get<std::string>().substr(9));
    const auto p = static_cast<int>(h.size());
    for (int e = 1; e + 1 < p; ++e) {
      violations += h[e - 1] == h[p - 2] && h[e] == h[p - 1] && h[e + 1] == next;
    }
    h.push_back(next);
  }
  return violations;
}

// DRY end to end: a multiplier far above any logit gap keeps greedy off every repeat longer
// than the allowed length, which greedy without it makes on this prompt; streamed equals
// whole, and /completion reports the settings as llama-server does.
TEST(Dry, GreedyNeverExtendsARepeatPastTheAllowedLength) {
  const std::vector<int32_t> prompt = {89, 148, 256, 64, 153, 138, 89, 148, 256, 64, 153};
  json body = {{"prompt", prompt},
               {"max_tokens", 40},
               {"temperature", 0},
               {"logprobs", 0},
               {"return_tokens_as_token_ids", true}};
  const json plain = post_json("/v1/completions", body)["choices"][0]["logprobs"];
  ASSERT_EQ(plain["tokens"].size(), 40u);
  EXPECT_GT(dry_violations(prompt, plain), 0);
  body["dry_multiplier"] = 1000;
  body["dry_allowed_length"] = 2;
  body["dry_sequence_breakers"] = json::array({"\x01"});  // a byte that appears in neither
  const json whole = post_json("/v1/completions", body);
  const json& logprobs = whole["choices"][0]["logprobs"];
  ASSERT_EQ(logprobs["tokens"].size(), 40u);
  EXPECT_EQ(dry_violations(prompt, logprobs), 0);
  std::string streamed;
  for (const json& chunk : streamed_chunks("/v1/completions", body)) {
    if (!chunk["choices"].empty()) streamed += chunk["choices"][0]["text"].get<std::string>();
  }
  EXPECT_EQ(streamed, whole["choices"][0]["text"]);
  // A window no longer than the allowed length holds no repeat to extend: greedy's choice.
  body["dry_penalty_last_n"] = 2;
  EXPECT_EQ(post_json("/v1/completions", body)["choices"][0]["logprobs"]["tokens"],
            plain["tokens"]);
  const json native = post_json("/completion", json{{"prompt", "Once upon"},
                                                    {"n_predict", 4},
                                                    {"dry_multiplier", 0.8},
                                                    {"dry_sequence_breakers", {"\n", "###"}}});
  const json& settings = native["generation_settings"];
  EXPECT_FLOAT_EQ(settings["dry_multiplier"].get<float>(), 0.8f);
  EXPECT_EQ(settings["dry_allowed_length"], 2);
  EXPECT_GT(settings["dry_penalty_last_n"].get<int>(), 0);  // the context, as llama-server's
  EXPECT_EQ(settings["dry_sequence_breakers"], json({"\n", "###"}));
}

TEST(Responses, IdsAreLongAndUniqueAndFingerprintsNameTheModel) {
  const json body = {{"prompt", "x"}, {"max_tokens", 1}};
  std::set<std::string> ids;
  std::string fingerprint;
  const std::regex id_form("cmpl-[0-9a-f]{32}");
  for (int i = 0; i < 5; ++i) {
    const json r = post_json("/v1/completions", body);
    EXPECT_TRUE(std::regex_match(r["id"].get<std::string>(), id_form)) << r["id"];
    ids.insert(r["id"]);
    EXPECT_TRUE(std::regex_match(r["system_fingerprint"].get<std::string>(),
                                 std::regex("fp_[0-9a-f]{16}")));
    if (fingerprint.empty()) fingerprint = r["system_fingerprint"];
    EXPECT_EQ(r["system_fingerprint"], fingerprint);
  }
  EXPECT_EQ(ids.size(), 5u);
  // A restarted server (another process on the same file) gives new ids, the same print.
  ServerProcess again(tiny_model());
  const json other = fetch(again.port(), "POST", "/v1/completions", body.dump()).json();
  EXPECT_EQ(ids.count(other["id"]), 0u);
  EXPECT_EQ(ids.begin()->substr(0, 21), ids.rbegin()->substr(0, 21));  // one run's prefix
  EXPECT_NE(other["id"].get<std::string>().substr(0, 21), ids.begin()->substr(0, 21));
  EXPECT_EQ(other["system_fingerprint"], fingerprint);
  // A different model file: a different print.
  ServerProcess demo(demo_model());
  const json demo_answer = fetch(demo.port(), "POST", "/v1/completions", body.dump()).json();
  EXPECT_NE(demo_answer["system_fingerprint"], fingerprint);
  // Chat chunks carry it too.
  for (const json& chunk : streamed_chunks(
           "/v1/chat/completions",
           {{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"max_tokens", 2}})) {
    EXPECT_EQ(chunk["system_fingerprint"], fingerprint);
    EXPECT_TRUE(
        std::regex_match(chunk["id"].get<std::string>(), std::regex("chatcmpl-[0-9a-f]{32}")));
  }
}

TEST(Responses, SeedsTheServerDrawsFitADouble) {
  for (int i = 0; i < 40; ++i) {
    const json r = post_json("/v1/completions", {{"prompt", "x"}, {"max_tokens", 1}});
    EXPECT_LT(r["seed"].get<uint64_t>(), uint64_t{1} << 53);
  }
}

// A seed sent negative comes back as sent, and one at or above 2^63 as the negative number of
// its bits, so that both replay (QA: -1 came back as 18446744073709551615, which the openai
// JavaScript SDK reads as 2^64 and the server then refuses).
TEST(Responses, ANegativeSeedIsReportedAsSentAndReplays) {
  const json sent = {{"prompt", "x"}, {"max_tokens", 8}, {"seed", -5}, {"temperature", 1.0}};
  const json a = post_json("/v1/completions", sent);
  EXPECT_EQ(a["seed"].dump(), "-5");
  json wrapped = sent;
  wrapped["seed"] = uint64_t{18446744073709551611u};
  const json b = post_json("/v1/completions", wrapped);
  EXPECT_EQ(b["seed"].dump(), "-5");
  EXPECT_EQ(b["choices"][0]["text"], a["choices"][0]["text"]);
  json replay = sent;
  replay["seed"] = b["seed"];
  EXPECT_EQ(post_json("/v1/completions", replay)["choices"][0]["text"], a["choices"][0]["text"]);
  const json chat = post_json(
      "/v1/chat/completions",
      {{"messages", {{{"role", "user"}, {"content", "x"}}}}, {"max_tokens", 2}, {"seed", -1}});
  EXPECT_EQ(chat["seed"].dump(), "-1");
}

TEST(AccessLog, RecordsTheUserAndTheResponseIdOnOneJsonLine) {
  ScratchDir dir;
  const auto log = dir.path() / "access.log";
  ServerProcess server(tiny_model(), {"--access-log", log.string()});
  const json body = {{"prompt", "x"}, {"max_tokens", 1}, {"user", "alice\n\"bob\""}};
  const json r = fetch(server.port(), "POST", "/v1/completions", body.dump()).json();
  ASSERT_TRUE(r.contains("id"));
  std::ifstream in(log);
  std::string line;
  ASSERT_TRUE(std::getline(in, line));
  const json entry = json::parse(line);
  EXPECT_EQ(entry["user"], "alice\n\"bob\"");
  EXPECT_EQ(entry["id"], r["id"]);
  EXPECT_EQ(entry["route"], "/v1/completions");
  EXPECT_EQ(entry["prompt_tokens"], r["usage"]["prompt_tokens"]);
  EXPECT_FALSE(std::getline(in, line));  // one request, one line
}

// A client's X-Request-Id (a proxy's, a tracing client's) comes back as the x-request-id of
// every answer in its place of the response id (as vLLM's --enable-request-id-headers and
// proxies echo it), whole, streamed or refused, and the access log records it beside the
// response id, so both sides' logs meet. One that is not a plain token is no id.
TEST(AccessLog, AClientsRequestIdIsEchoedAndRecorded) {
  ScratchDir dir;
  const auto log = dir.path() / "access.log";
  ServerProcess server(tiny_model(), {"--access-log", log.string()});
  const HeaderList traced = {{"X-Request-Id", "trace-7f3a"}};
  const json body = {{"prompt", "x"}, {"max_tokens", 1}};
  const HttpResult whole = fetch(server.port(), "POST", "/v1/completions", body.dump(), traced);
  ASSERT_EQ(whole.status, 200);
  EXPECT_EQ(whole.headers.at("x-request-id"), "trace-7f3a");
  // The response's id is made from it, as vLLM makes it.
  EXPECT_EQ(whole.json()["id"], "cmpl-trace-7f3a");
  json streamed_body = body;
  streamed_body["stream"] = true;
  const HttpResult streamed =
      fetch(server.port(), "POST", "/v1/completions", streamed_body.dump(), traced);
  EXPECT_EQ(streamed.headers.at("x-request-id"), "trace-7f3a");
  const HttpResult refused =
      fetch(server.port(), "POST", "/v1/completions", R"({"prompt": 5})", traced);
  EXPECT_EQ(refused.status, 400);
  EXPECT_EQ(refused.headers.at("x-request-id"), "trace-7f3a");
  // Not a token: the response id, as without one.
  const HttpResult odd =
      fetch(server.port(), "POST", "/v1/completions", body.dump(), {{"X-Request-Id", "two words"}});
  EXPECT_EQ(odd.headers.at("x-request-id"), odd.json()["id"]);
  std::ifstream in(log);
  std::vector<json> entries;
  for (std::string line; std::getline(in, line);) entries.push_back(json::parse(line));
  ASSERT_EQ(entries.size(), 3u);  // the refused request was never accepted
  EXPECT_EQ(entries[0]["request_id"], "trace-7f3a");
  EXPECT_EQ(entries[0]["id"], whole.json()["id"]);
  EXPECT_EQ(entries[1]["request_id"], "trace-7f3a");
  EXPECT_EQ(entries[2]["request_id"], "");
}

// vLLM's body field request_id names the response ("chatcmpl-" + it), and the client's
// X-Request-Id comes before it; an id a header could not carry is a 400 naming it.
TEST(OpenAiFields, ARequestIdInTheBodyNamesTheResponse) {
  const uint16_t port = shared_server().port();
  const json chat = {{"messages", {{{"role", "user"}, {"content", "x"}}}},
                     {"max_tokens", 1},
                     {"request_id", "job-42"}};
  EXPECT_EQ(post_json("/v1/chat/completions", chat)["id"], "chatcmpl-job-42");
  const HttpResult both =
      fetch(port, "POST", "/v1/chat/completions", chat.dump(), {{"X-Request-Id", "hdr-1"}});
  EXPECT_EQ(both.json()["id"], "chatcmpl-hdr-1");
  json streamed = chat;
  streamed["stream"] = true;
  EXPECT_NE(fetch(port, "POST", "/v1/chat/completions", streamed.dump())
                .body.find("\"id\":\"chatcmpl-job-42\""),
            std::string::npos);
  for (const json& bad : {json(""), json("two words"), json(std::string(129, 'a')), json(7)}) {
    json body = chat;
    body["request_id"] = bad;
    const HttpResult refused = fetch(port, "POST", "/v1/chat/completions", body.dump());
    EXPECT_EQ(refused.status, 400) << bad;
    EXPECT_EQ(refused.json()["error"]["param"], "request_id") << refused.body;
  }
}

size_t lines_in(const std::filesystem::path& path) {
  std::ifstream in(path);
  size_t n = 0;
  for (std::string line; std::getline(in, line);) ++n;
  return n;
}

// logrotate's default rotation: rename the file, then SIGHUP. The server reopens the path
// and goes on serving; the records after the signal are in the new file, none in the
// renamed one. (Before, SIGHUP's default action killed the server, and without it every
// later record went into the renamed file.)
TEST(AccessLog, SighupAfterARenameReopensThePath) {
  ScratchDir dir;
  const auto log = dir.path() / "access.log";
  const auto rotated = dir.path() / "access.log.1";
  ServerProcess server(tiny_model(), {"--access-log", log.string()});
  const std::string body = json{{"prompt", "x"}, {"max_tokens", 1}}.dump();
  ASSERT_EQ(fetch(server.port(), "POST", "/v1/completions", body).status, 200);
  std::filesystem::rename(log, rotated);
  ::kill(server.pid(), SIGHUP);
  bool reopened = false;
  for (int i = 0; i < 200000 && !reopened; ++i)  // bounded poll of the server's note
    reopened = server.stderr_text().find("access log reopened") != std::string::npos;
  ASSERT_TRUE(reopened) << server.stderr_text();
  ASSERT_EQ(fetch(server.port(), "POST", "/v1/completions", body).status, 200);
  ASSERT_EQ(fetch(server.port(), "POST", "/v1/completions", body).status, 200);
  EXPECT_EQ(lines_in(rotated), 1u);
  EXPECT_EQ(lines_in(log), 2u);
}

}  // namespace
}  // namespace tandem::testing::TANDEM_UNITY_ID
