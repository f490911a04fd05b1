// POST /v1/messages over HTTP (Anthropic's Messages API) against a real `tandem serve`:
// for the same seed a message says what the chat request it amounts to says (text, stop
// reason, usage), whole and streamed; a stop sequence ends it and is named; a final
// assistant message is continued; count_tokens is the rendered prompt's length, with
// Anthropic's blocks and turns read as chat's; thinking blocks are chat's reasoning.
#include <cctype>
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/server/messages_http_support.h"

namespace tandem::testing::TANDEM_UNITY_ID {
namespace {

using namespace messages_http;  // NOLINT(google-build-using-namespace): the tests' own helpers

json message_request(uint64_t seed, int max_tokens) {
  return {{"system", "Be brief."},
          {"messages", {{{"role", "user"}, {"content", "Hello"}}}},
          {"max_tokens", max_tokens},
          {"seed", seed}};
}

json chat_request(uint64_t seed, int max_tokens) {
  return as_messages_send_it(
      {{"messages",
        {{{"role", "system"}, {"content", "Be brief."}}, {{"role", "user"}, {"content", "Hello"}}}},
       {"max_tokens", max_tokens},
       {"seed", seed}});
}

std::string stop_reason_for(const std::string& finish) {
  return finish == "length" ? "max_tokens" : "end_turn";
}

TEST(MessagesHttp, AMessageSaysWhatTheChatRequestSaysWholeAndStreamed) {
  REQUIRE_MESSAGES_SERVER();
  const uint16_t port = messages_server()->port();
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    SCOPED_TRACE(seed);
    const ChatAnswer chat = chat_answer(port, chat_request(seed, 24));
    const Message whole = whole_message(port, message_request(seed, 24));
    EXPECT_EQ(whole.text, chat.content);
    EXPECT_EQ(whole.block_types, std::vector<std::string>{"text"});
    EXPECT_EQ(whole.stop_reason, stop_reason_for(chat.finish));
    EXPECT_EQ(whole.stop_sequence, json());
    EXPECT_EQ(prompt_tokens_of(whole.usage), chat.usage["prompt_tokens"].get<int64_t>());
    EXPECT_EQ(whole.usage["output_tokens"], chat.usage["completion_tokens"]);
    EXPECT_EQ(whole.usage["cache_creation_input_tokens"], 0);

    const Message streamed = streamed_message(port, message_request(seed, 24));
    EXPECT_EQ(streamed.text, whole.text);
    EXPECT_EQ(streamed.block_types, whole.block_types);
    EXPECT_EQ(streamed.stop_reason, whole.stop_reason);
    EXPECT_EQ(streamed.stop_sequence, json());
    EXPECT_EQ(prompt_tokens_of(streamed.usage), prompt_tokens_of(whole.usage));
    EXPECT_EQ(streamed.usage["output_tokens"], whole.usage["output_tokens"]);
    // The same prompt again: the prefix cache holds it, and message_start said so (QA).
    EXPECT_GT(streamed.usage["cache_read_input_tokens"].get<int64_t>(), 0);
  }
  // EOS made certain: "end_turn" after one token.
  json body = message_request(1, 5);
  body["logit_bias"] = {{std::to_string(responses_http::eos_id(port)), 100}};
  const Message eos = whole_message(port, body);
  EXPECT_EQ(eos.stop_reason, "end_turn");
  EXPECT_EQ(eos.usage["output_tokens"], 1);
  EXPECT_EQ(eos.block_types, std::vector<std::string>{"text"});  // empty, but there
}

// The message's text up to a stop sequence taken from its own unstopped answer, and the
// sequence named as the stop; whole and streamed.
TEST(MessagesHttp, AStopSequenceEndsTheMessageAndIsNamed) {
  REQUIRE_MESSAGES_SERVER();
  const uint16_t port = messages_server()->port();
  int stopped = 0;
  for (uint64_t seed = 1; seed <= 6 && stopped < 2; ++seed) {
    const std::string text = whole_message(port, message_request(seed, 30)).text;
    // Two ASCII letters after the first character, first found there.
    size_t at = 1;
    while (at + 1 < text.size() && !(std::isalpha(static_cast<unsigned char>(text[at])) &&
                                     std::isalpha(static_cast<unsigned char>(text[at + 1])) &&
                                     text.find(text.substr(at, 2)) == at)) {
      ++at;
    }
    if (at + 1 >= text.size()) continue;
    const std::string stop = text.substr(at, 2);
    SCOPED_TRACE("seed " + std::to_string(seed) + ", stop " + json(stop).dump() + " in " +
                 json(text).dump());
    json body = message_request(seed, 30);
    body["stop_sequences"] = {"\x01never", stop};
    const Message whole = whole_message(port, body);
    EXPECT_EQ(whole.text, text.substr(0, at));
    EXPECT_EQ(whole.stop_reason, "stop_sequence");
    EXPECT_EQ(whole.stop_sequence, stop);
    const Message streamed = streamed_message(port, body);
    EXPECT_EQ(streamed.text, whole.text);
    EXPECT_EQ(streamed.stop_reason, "stop_sequence");
    EXPECT_EQ(streamed.stop_sequence, stop);
    ++stopped;
  }
  EXPECT_EQ(stopped, 2) << "no answer held two ASCII letters to stop at";
}

// Anthropic's prefill: the rendered prompt ends with the assistant's text, and the answer is
// chat's with continue_final_message for the same seed.
TEST(MessagesHttp, AFinalAssistantMessageIsContinued) {
  REQUIRE_MESSAGES_SERVER();
  const uint16_t port = messages_server()->port();
  const json turns = {{{"role", "user"}, {"content", "Name a colour."}},
                      {{"role", "assistant"}, {"content", "My favourite is"}}};
  const json chat_body =
      as_messages_send_it({{"messages", turns}, {"continue_final_message", true}});
  const HttpResult rendered = fetch(port, "POST", "/apply-template", chat_body.dump());
  ASSERT_EQ(rendered.status, 200) << rendered.body;
  EXPECT_TRUE(rendered.json()["prompt"].get<std::string>().ends_with(
      "<|im_start|>assistant\n<think>\n\n</think>\n\nMy favourite is"))
      << rendered.body;
  for (uint64_t seed : {2u, 5u}) {
    json chat = chat_body;
    chat["seed"] = seed;
    chat["max_tokens"] = 12;
    const ChatAnswer expected = chat_answer(port, chat);
    const json body = {{"messages", turns}, {"seed", seed}, {"max_tokens", 12}};
    const Message message = whole_message(port, body);
    EXPECT_EQ(message.text, expected.content);
    EXPECT_EQ(prompt_tokens_of(message.usage), expected.usage["prompt_tokens"]);
    EXPECT_EQ(counted_tokens(port, body), expected.usage["prompt_tokens"]);
  }
}

// System blocks, several text blocks and two user messages in a row are chat's system
// message and one user turn whose parts are joined with "\n".
TEST(MessagesHttp, CountTokensReadsBlocksAndTurnsAsChatDoes) {
  REQUIRE_MESSAGES_SERVER();
  const uint16_t port = messages_server()->port();
  const json body = {
      {"system",
       {{{"type", "text"}, {"text", "Be kind."}}, {{"type", "text"}, {"text", "Be brief."}}}},
      {"messages",
       {{{"role", "user"},
         {"content",
          {{{"type", "text"}, {"text", "One."}, {"cache_control", {{"type", "ephemeral"}}}},
           {{"type", "text"}, {"text", "Two."}}}}},
        {{"role", "user"}, {"content", "Three."}}}},
      {"max_tokens", 1}};
  const json chat = as_messages_send_it({{"messages",
                                          {{{"role", "system"}, {"content", "Be kind.\nBe brief."}},
                                           {{"role", "user"}, {"content", "One.\nTwo.\nThree."}}}},
                                         {"max_tokens", 1}});
  const int64_t expected = post_json(port, kChat, chat)["usage"]["prompt_tokens"];
  EXPECT_EQ(counted_tokens(port, body), expected);
  EXPECT_EQ(prompt_tokens_of(whole_message(port, body).usage), expected);
}

// Qwen3's template: thinking "disabled" closes an empty reasoning in the prompt, so it
// renders longer than "enabled".
TEST(MessagesHttp, ThinkingSetsTheTemplatesSwitch) {
  REQUIRE_MESSAGES_SERVER();
  const uint16_t port = messages_server()->port();
  json body = {{"messages", {{{"role", "user"}, {"content", "Hi"}}}}};
  body["thinking"] = {{"type", "disabled"}};
  const int64_t disabled = counted_tokens(port, body);
  body["thinking"] = {{"type", "enabled"}, {"budget_tokens", 1024}};
  const int64_t enabled = counted_tokens(port, body);
  EXPECT_GT(disabled, enabled);
}

// With thinking on, the reasoning is split off as chat's deepseek format splits it: the
// thinking block is reasoning_content and the text block the content, whole and streamed,
// the thinking first.
TEST(MessagesHttp, ThinkingBlocksAreChatsReasoning) {
  REQUIRE_MESSAGES_SERVER();
  const uint16_t port = messages_server()->port();
  const json bias = responses_http::steering_bias(port);
  int both = 0;
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    SCOPED_TRACE(seed);
    const json turns = {{{"role", "user"}, {"content", "Think, then answer."}}};
    const json steering = {{"seed", seed},
                           {"max_tokens", 40},
                           {"guided_grammar", responses_http::steering_grammar()},
                           {"logit_bias", bias}};
    json chat = steering;
    chat["messages"] = turns;
    chat["reasoning_format"] = "deepseek";
    chat["chat_template_kwargs"] = {{"enable_thinking", true}};
    const ChatAnswer expected = chat_answer(port, chat);
    json body = steering;
    body["messages"] = turns;
    body["thinking"] = {{"type", "adaptive"}};
    for (const Message& message : {whole_message(port, body), streamed_message(port, body)}) {
      EXPECT_EQ(message.thinking, expected.reasoning);
      EXPECT_EQ(message.text, expected.content);
      EXPECT_EQ(message.stop_reason, stop_reason_for(expected.finish));
      if (!expected.reasoning.empty()) {
        EXPECT_EQ(message.block_types.at(0), "thinking");
      }
    }
    both += !expected.reasoning.empty() && !expected.content.empty();
  }
  EXPECT_GE(both, 1) << "no seed both thought and answered";
}

}  // namespace
}  // namespace tandem::testing::TANDEM_UNITY_ID
