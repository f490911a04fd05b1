// Response bodies and stream chunks: the OpenAI shapes, parsed back field by field, and
// valid JSON whatever bytes the generated text holds.
#include "protocol/responses.h"

#include <gtest/gtest.h>

#include <cmath>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace tandem::TANDEM_UNITY_ID {
namespace {

using Json = nlohmann::json;
using namespace std::string_literals;

ResponseHeader header(Endpoint endpoint = Endpoint::kCompletions) {
  return ResponseHeader{make_response_id(endpoint, 0, 0xabc), 1700000000, "tiny",
                        18446744073709551615ull, "fp_0123456789abcdef"};
}

void expect_envelope(const Json& body, const char* object, const char* id_prefix) {
  EXPECT_EQ(body["object"], object);
  EXPECT_EQ(body["id"].get<std::string>().rfind(id_prefix, 0), 0u) << body["id"];
  EXPECT_EQ(body["created"], 1700000000);
  EXPECT_EQ(body["model"], "tiny");
  EXPECT_EQ(body["seed"].get<uint64_t>(), 18446744073709551615ull);
  EXPECT_EQ(body["system_fingerprint"], "fp_0123456789abcdef");
}

TEST(Responses, IdsNameTheEndpointAndAreUniquePerNumber) {
  EXPECT_EQ(make_response_id(Endpoint::kCompletions, 0x1234, 255),
            "cmpl-000000000000123400000000000000ff");
  EXPECT_EQ(make_response_id(Endpoint::kChatCompletions, 0, 1),
            "chatcmpl-00000000000000000000000000000001");
  EXPECT_NE(make_response_id(Endpoint::kCompletions, 7, 1),
            make_response_id(Endpoint::kCompletions, 8, 1));
}

TEST(Responses, CompletionHasTextFinishReasonUsageAndSeed) {
  Json body = Json::parse(
      completion_response_json(header(), "Hello world", FinishReason::kLength, Usage{5, 16}));
  expect_envelope(body, "text_completion", "cmpl-");
  ASSERT_EQ(body["choices"].size(), 1u);
  const Json& choice = body["choices"][0];
  EXPECT_EQ(choice["index"], 0);
  EXPECT_EQ(choice["text"], "Hello world");
  EXPECT_EQ(choice["finish_reason"], "length");
  EXPECT_TRUE(choice["logprobs"].is_null());
  EXPECT_EQ(body["usage"]["prompt_tokens"], 5);
  EXPECT_EQ(body["usage"]["completion_tokens"], 16);
  EXPECT_EQ(body["usage"]["total_tokens"], 21);
  EXPECT_EQ(body["usage"]["prompt_tokens_details"]["cached_tokens"], 0);  // as OpenAI's
}

// vLLM's stop_reason: the stop token's id, else the stop string, else null; on a stream,
// only the choice's last chunk carries it.
TEST(Responses, StopReasonIsTheStopTokenOrStringOrNull) {
  const StopReason by_token{"", 42}, by_string{"###", -1}, none{};
  const StopReason* stops[] = {&by_token, &by_string, &none, nullptr};
  const Json expected[] = {42, "###", nullptr, nullptr};
  for (size_t i = 0; i < 4; ++i) {
    ChoiceResult one{{0, 7}, "x", FinishReason::kStop, nullptr};
    one.stop = stops[i];
    for (const bool chat : {false, true}) {
      const Json whole =
          Json::parse(chat ? chat_completion_response_json(header(Endpoint::kChatCompletions),
                                                           std::span(&one, 1), Usage{1, 1})
                           : completion_response_json(header(), std::span(&one, 1), Usage{1, 1}));
      EXPECT_EQ(whole["choices"][0]["stop_reason"], expected[i]) << i << chat;
      const ResponseHeader h = header(chat ? Endpoint::kChatCompletions : Endpoint::kCompletions);
      const Json last = Json::parse(
          chat
              ? chat_chunk_json(h, "", FinishReason::kStop, nullptr, std::nullopt, {stops[i]})
              : completion_chunk_json(h, "", FinishReason::kStop, nullptr, std::nullopt, {stops[i]}));
      EXPECT_EQ(last["choices"][0]["stop_reason"], expected[i]) << i << chat;
      const Json middle = Json::parse(
          chat ? chat_chunk_json(h, "x", std::nullopt, nullptr, std::nullopt, {stops[i]})
               : completion_chunk_json(h, "x", std::nullopt, nullptr, std::nullopt, {stops[i]}));
      EXPECT_FALSE(middle["choices"][0].contains("stop_reason")) << i << chat;
    }
  }
}

TEST(Responses, ChatCompletionHasAnAssistantMessage) {
  Json body = Json::parse(chat_completion_response_json(header(Endpoint::kChatCompletions), "Hi!",
                                                        FinishReason::kStop, Usage{9, 2}));
  expect_envelope(body, "chat.completion", "chatcmpl-");
  const Json& choice = body["choices"][0];
  EXPECT_EQ(choice["message"]["role"], "assistant");
  EXPECT_EQ(choice["message"]["content"], "Hi!");
  // Always present, as OpenAI and vLLM send it: the SDK types it string | null.
  ASSERT_TRUE(choice["message"].contains("refusal"));
  EXPECT_TRUE(choice["message"]["refusal"].is_null());
  EXPECT_EQ(choice["finish_reason"], "stop");
  EXPECT_EQ(body["usage"]["total_tokens"], 11);
}

TEST(Responses, CompletionChunksCarryTextAndFinishOnlyAtTheEnd) {
  Json middle = Json::parse(completion_chunk_json(header(), "Hel", std::nullopt));
  expect_envelope(middle, "text_completion", "cmpl-");
  EXPECT_EQ(middle["choices"][0]["text"], "Hel");
  EXPECT_TRUE(middle["choices"][0]["finish_reason"].is_null());
  EXPECT_FALSE(middle.contains("usage"));
  Json last = Json::parse(completion_chunk_json(header(), "", FinishReason::kStop));
  EXPECT_EQ(last["choices"][0]["text"], "");
  EXPECT_EQ(last["choices"][0]["finish_reason"], "stop");
}

TEST(Responses, ChatStreamStartsWithARoleDeltaAndEndsWithAnEmptyDelta) {
  ResponseHeader h = header(Endpoint::kChatCompletions);
  Json first = Json::parse(chat_role_chunk_json(h));
  expect_envelope(first, "chat.completion.chunk", "chatcmpl-");
  EXPECT_EQ(first["choices"][0]["delta"], (Json{{"role", "assistant"}, {"content", ""}}));
  EXPECT_TRUE(first["choices"][0]["finish_reason"].is_null());

  Json middle = Json::parse(chat_chunk_json(h, "lo", std::nullopt));
  EXPECT_EQ(middle["choices"][0]["delta"], (Json{{"content", "lo"}}));
  EXPECT_TRUE(middle["choices"][0]["finish_reason"].is_null());

  Json last = Json::parse(chat_chunk_json(h, "", FinishReason::kLength));
  EXPECT_EQ(last["choices"][0]["delta"], Json::object());
  EXPECT_EQ(last["choices"][0]["finish_reason"], "length");

  Json last_with_text = Json::parse(chat_chunk_json(h, "!", FinishReason::kStop));
  EXPECT_EQ(last_with_text["choices"][0]["delta"], (Json{{"content", "!"}}));
}

TEST(Responses, UsageChunkHasNoChoices) {
  for (Endpoint endpoint : {Endpoint::kCompletions, Endpoint::kChatCompletions}) {
    Json body = Json::parse(usage_chunk_json(header(endpoint), endpoint, Usage{3, 4, 2}));
    EXPECT_EQ(body["object"],
              endpoint == Endpoint::kCompletions ? "text_completion" : "chat.completion.chunk");
    EXPECT_TRUE(body["choices"].is_array());
    EXPECT_TRUE(body["choices"].empty());
    EXPECT_EQ(body["usage"]["total_tokens"], 7);
    EXPECT_EQ(body["usage"]["prompt_tokens_details"]["cached_tokens"], 2);
    EXPECT_EQ(body["seed"].get<uint64_t>(), 18446744073709551615ull);
  }
}

TEST(Responses, AnyValidTextRoundTripsExactly) {
  const std::vector<std::string> texts = {
      "quote \" backslash \\ slash /",
      "newline \n return \r tab \t",
      "NUL \0 and \x01\x1f\x7f"s,
      "emoji \xf0\x9f\x98\x80 CJK \xe4\xb8\xad accent \xc3\xa9",
      "</script><|im_end|>data: [DONE]\n\n",
      "\xe2\x80\xa8 line separator",
  };
  for (const std::string& text : texts) {
    std::string chunk = chat_chunk_json(header(), text, std::nullopt);
    EXPECT_EQ(chunk.find('\n'), std::string::npos) << "a raw newline would break SSE framing";
    EXPECT_EQ(Json::parse(chunk)["choices"][0]["delta"]["content"], text);
    EXPECT_EQ(Json::parse(completion_response_json(header(), text, FinishReason::kStop,
                                                   Usage{}))["choices"][0]["text"],
              text);
  }
}

TEST(Responses, InvalidUtf8BecomesReplacementCharactersNotAThrow) {
  const std::string broken = "ok \xff\xfe mid \xe2\x82 end \xc0";
  std::string body;
  ASSERT_NO_THROW(body = completion_chunk_json(header(), broken, std::nullopt));
  std::string text = Json::parse(body)["choices"][0]["text"];
  EXPECT_EQ(text.rfind("ok ", 0), 0u);
  EXPECT_NE(text.find("\xef\xbf\xbd"), std::string::npos);  // U+FFFD
  EXPECT_TRUE(
      Json::accept(chat_completion_response_json(header(), broken, FinishReason::kStop, Usage{})));
}

TEST(Responses, ModelsListNamesTheModelItsContextAndChatTemplate) {
  Json body = Json::parse(models_list_json(
      ServedModel{{"tiny", "alias"}, 1700000000, 2048, "tokenizer.chat_template"}));
  EXPECT_EQ(body["object"], "list");
  ASSERT_EQ(body["data"].size(), 2u);
  const Json& model = body["data"][0];
  EXPECT_EQ(model["id"], "tiny");
  EXPECT_EQ(model["object"], "model");
  EXPECT_EQ(model["created"], 1700000000);
  EXPECT_EQ(model["owned_by"], "tandem");
  EXPECT_EQ(model["max_model_len"], 2048);
  EXPECT_EQ(model["chat_template"], "tokenizer.chat_template");
  EXPECT_EQ(body["data"][1]["id"], "alias");
  EXPECT_EQ(body["data"][1]["root"], "tiny");
  const Json none = Json::parse(models_list_json(ServedModel{{"tiny"}, 0, 16, std::nullopt}));
  EXPECT_TRUE(none["data"][0]["chat_template"].is_null());
}

TEST(Responses, CompletionLogprobsListTokensValuesTopsAndCharacterOffsets) {
  const std::vector<TokenLogprobs> tokens = {
      {{"<s>", std::nanf("")}, {}},
      {{" Hi", -0.5f}, {{" Hi", -0.5f}, {" Yo", -1.5f}}},
      {{"!", -2.0f}, {{".", -0.25f}, {"!", -2.0f}}},
      {{" \xd0\xba", -0.1f}, {}},  // " к": two characters in three bytes
      {{"\xe2\x82", -0.2f}, {}},   // the first two bytes of "€", which the next ends
      {{"\xac", -0.3f}, {}},
      {{"x", -0.4f}, {}},
  };
  const LogprobsPiece piece{tokens, {10}};
  const std::string body_text =
      completion_response_json(header(), "x", FinishReason::kStop, Usage{1, 2}, &piece);
  const Json body = Json::parse(body_text);
  const Json& lp = body["choices"][0]["logprobs"];
  EXPECT_EQ(lp["tokens"][1], " Hi");
  EXPECT_EQ(lp["tokens"][2], "!");
  EXPECT_TRUE(lp["token_logprobs"][0].is_null());
  EXPECT_TRUE(lp["top_logprobs"][0].is_null());
  EXPECT_EQ(lp["token_logprobs"][1], -0.5);
  EXPECT_EQ(lp["top_logprobs"][2], (Json{{".", -0.25}, {"!", -2.0}}));
  // Characters, as Python's text[offset:] indexes them: "<s>" 3, " Hi" 3, "!" 1, " к" 2,
  // the euro sign's first bytes 1 (the character they begin), its last byte 0.
  EXPECT_EQ(lp["text_offset"], Json::array({10, 13, 16, 17, 19, 20, 20}));
  // The most likely first, in the body's own order (a JSON object's keys keep no order
  // once parsed into a sorted map, so the text is read).
  EXPECT_LT(body_text.find(R"({".":-0.25,"!":-2.0})"), std::string::npos);
}

// Offsets index the text as Python decodes the tokens' bytes laid end to end
// (bytes.decode("utf-8", "replace")): a stray continuation byte, an overlong or surrogate
// lead, or a sequence cut short is one U+FFFD. The expected offsets are Python's
// len(b"".join(tokens[:k]).decode("utf-8", "replace")) for random byte-fallback tokens.
TEST(Responses, CompletionOffsetsCountInvalidBytesAsPythonDecodesThem) {
  struct Case {
    std::vector<std::string> tokens;
    std::vector<int64_t> offsets;  // before each token, then after the last
  };
  const std::vector<Case> cases = {
      {{"\xac", "\xa0", "\xf0", " ", "\xe2"}, {0, 1, 2, 3, 4, 5}},
      {{"\x82", "\xed", "\xc0", " ", "\x90", "\xf0\x9f", " "}, {0, 1, 2, 3, 4, 5, 6, 7}},
      {{"\xe0", "\xe0", "\xe2"}, {0, 1, 2, 3}},
      {{"\xe2", "\xff", "\xe0", " "}, {0, 1, 2, 3, 4}},
      {{"\x82", "\x91\x8d", "\xf0", "\xf0", "\xc0", " ", "\xc0"}, {0, 1, 3, 4, 5, 6, 7, 8}},
      {{"\xa0", " ", "\x91\x8d", " ", "\xff", "\xac", "\xc3"}, {0, 1, 2, 4, 5, 6, 7, 8}},
      {{"\xac", "\xff", "\x82", "\xc0", "\xc3", "\xff"}, {0, 1, 2, 3, 4, 5, 6}},
      {{"\xe2\x82", "\x82", "\xc0", "\xc0", "\xf0", "\xf0\x9f", "\xed", "\x82"},
       {0, 1, 1, 2, 3, 4, 5, 6, 6}},
      {{"ok", "\xe2", "\xc0", " ", "\xaf", "\xf0\x9f", "\xf4"}, {0, 2, 3, 4, 5, 6, 7, 8}},
      {{"\xff", "\xe0", "\xa9", "\x80", "\xc0", "\x80", "\xed", "\xc3"},
       {0, 1, 2, 2, 2, 3, 4, 5, 6}},
      {{"\xe2\x82", "ok", "\x91\x8d", "\xe2"}, {0, 1, 3, 5, 6}},
      {{"\xc3", "\x90", "\xf4", "\xa9", "\xd0\xba", "\x80", "\xc3"}, {0, 1, 1, 2, 3, 4, 5, 6}},
      // QA's: "A", a stray continuation byte, "A", two more, "A" (text "A\ufffdA\ufffd\ufffdA").
      {{"A", "\x91", "A", "\x91", "\x91", "A"}, {0, 1, 2, 3, 4, 5, 6}},
  };
  for (const Case& c : cases) {
    std::vector<TokenLogprobs> tokens;
    for (const std::string& t : c.tokens) tokens.push_back({{t, -1.0f}, {}});
    // Whole, then split into pieces at every point (a stream's chunks), which must agree.
    for (size_t split = 0; split <= tokens.size(); ++split) {
      const std::span<const TokenLogprobs> all(tokens);
      const LogprobsPiece head{all.first(split), {}};
      const LogprobsPiece tail{all.subspan(split), advanced({}, head.tokens)};
      std::vector<int64_t> offsets;
      for (const LogprobsPiece* piece : {&head, &tail}) {
        const Json lp = Json::parse(completion_response_json(
            header(), "x", FinishReason::kStop, Usage{1, 1}, piece))["choices"][0]["logprobs"];
        for (const Json& o : lp["text_offset"]) offsets.push_back(o.get<int64_t>());
      }
      offsets.push_back(advanced({}, all).offset);
      EXPECT_EQ(offsets, c.offsets) << "split at " << split;
    }
  }
}

// Two parts of characters both show as U+FFFD: one key, the more likely one's value.
TEST(Responses, CompletionTopLogprobsNeverRepeatAKey) {
  const std::vector<TokenLogprobs> tokens = {
      {{"\xe2\x82", -2.0f}, {{"\xe6\x97", -0.5f}, {"\xe2\x82", -2.0f}, {"a", -3.0f}}}};
  const LogprobsPiece piece{tokens, {}};
  const std::string text =
      completion_response_json(header(), "x", FinishReason::kStop, Usage{1, 1}, &piece);
  EXPECT_LT(text.find("[{\"\xef\xbf\xbd\":-0.5,\"a\":-3.0}]"), std::string::npos) << text;
}

TEST(Responses, CompletionTopLogprobsHoldTheSampledTokenAtItsRank) {
  const std::vector<TokenLogprobs> tokens = {
      {{" c", -1.0f}, {{" a", -0.5f}, {" b", -2.0f}}},  // between the two best
      {{" z", -9.0f}, {{" a", -0.5f}}},                 // below every listed one
      {{" a", -0.5f}, {{" a", -0.5f}, {" b", -2.0f}}},  // already listed
      {{" q", -3.0f}, {}},                              // logprobs: 0
  };
  const LogprobsPiece piece{tokens, {}};
  const std::string text =
      completion_response_json(header(), "x", FinishReason::kStop, Usage{1, 4}, &piece);
  EXPECT_LT(text.find(R"([{" a":-0.5," c":-1.0," b":-2.0},{" a":-0.5," z":-9.0},)"
                      R"({" a":-0.5," b":-2.0},{" q":-3.0}])"),
            std::string::npos)
      << text;
}

TEST(Responses, ChatLogprobsCarryBytesAndOrderedTops) {
  const std::vector<TokenLogprobs> tokens = {{{"\xe2\x82", -1.0f}, {{"a", -0.5f}, {"b", -0.75f}}}};
  const LogprobsPiece piece{tokens, {}};
  const Json chunk =
      Json::parse(chat_chunk_json(header(Endpoint::kChatCompletions), "a", std::nullopt, &piece));
  const Json& entry = chunk["choices"][0]["logprobs"]["content"][0];
  EXPECT_EQ(entry["logprob"], -1.0);
  EXPECT_EQ(entry["bytes"].size(), std::string("\xe2\x82").size());
  EXPECT_EQ(entry["top_logprobs"][0]["token"], "a");
  EXPECT_EQ(entry["top_logprobs"][1]["logprob"], -0.75);
  EXPECT_EQ(entry["top_logprobs"][1]["bytes"], Json::array({98}));
  // Without a piece, logprobs is null.
  EXPECT_TRUE(Json::parse(chat_chunk_json(header(Endpoint::kChatCompletions), "a",
                                          std::nullopt))["choices"][0]["logprobs"]
                  .is_null());
}

}  // namespace
}  // namespace tandem::TANDEM_UNITY_ID
