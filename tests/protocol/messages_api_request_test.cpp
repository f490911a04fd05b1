// /v1/messages requests read as the chat requests they amount to: the messages, tools,
// tool choice, output constraint and sampling a Messages body gives equal those of the chat
// body that says the same, and a refusal names the Messages field the client sent.
#include <gtest/gtest.h>

#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "protocol/completion_request.h"
#include "protocol/messages_api_request.h"

namespace tandem::TANDEM_UNITY_ID {
namespace {

MessagesRequest parsed(const std::string& body) {
  auto result = parse_messages_request(body);
  if (auto* error = std::get_if<ApiError>(&result)) {
    ADD_FAILURE() << body << " -> " << error->message;
    return {};
  }
  return std::get<MessagesRequest>(std::move(result));
}

CompletionRequest chat(const std::string& body) {
  auto result = parse_completion_request(body, Endpoint::kChatCompletions);
  if (auto* error = std::get_if<ApiError>(&result)) {
    ADD_FAILURE() << body << " -> " << error->message;
    return {};
  }
  return std::get<CompletionRequest>(std::move(result));
}

ApiError refused(const std::string& body) {
  auto result = parse_messages_request(body);
  if (auto* error = std::get_if<ApiError>(&result)) return *error;
  ADD_FAILURE() << "accepted: " << body;
  return {};
}

TEST(MessagesApiRequest, SystemAndMessagesAreTheChatMessages) {
  const MessagesRequest m = parsed(
      R"({"model": "m", "system": "Be brief.", "messages": [{"role": "user", "content": "Hi"}],
          "max_tokens": 9, "temperature": 0.5, "top_p": 0.9, "top_k": 7, "seed": 4,
          "stop_sequences": ["END"], "stream": true, "metadata": {"user_id": "u1"}})");
  const CompletionRequest c = chat(
      R"({"model": "m", "messages": [{"role": "system", "content": "Be brief."},
          {"role": "user", "content": "Hi"}], "max_tokens": 9, "temperature": 0.5,
          "top_p": 0.9, "top_k": 7, "seed": 4, "stop": ["END"], "stream": true, "user": "u1"})");
  EXPECT_EQ(m.request.endpoint, Endpoint::kMessages);
  EXPECT_EQ(m.request.model, "m");
  EXPECT_EQ(m.request.chat.messages, c.chat.messages);
  EXPECT_EQ(m.request.max_tokens, c.max_tokens);
  EXPECT_EQ(m.request.seed, c.seed);
  EXPECT_EQ(m.request.sampling.temperature, c.sampling.temperature);
  EXPECT_EQ(m.request.sampling.top_p, c.sampling.top_p);
  EXPECT_EQ(m.request.sampling.top_k, c.sampling.top_k);
  EXPECT_EQ(m.request.stop, c.stop);
  EXPECT_EQ(m.request.stream, c.stream);
  EXPECT_EQ(m.request.user, "u1");
  EXPECT_TRUE(m.request.chat.add_generation_prompt);
  EXPECT_FALSE(m.request.chat.continue_final_message);
  EXPECT_FALSE(m.thinking);
}

// Blocks: text parts, an assistant's tool_use as its tool_calls and thinking as its
// reasoning_content, a user's tool_result as a tool message before the user's text (a
// failed one's text saying so); two user turns in a row are one.
TEST(MessagesApiRequest, BlocksAndTurnsBecomeChatsMessages) {
  const MessagesRequest m = parsed(R"({"max_tokens": 5, "system": [{"type": "text", "text": "S"}],
      "messages": [
        {"role": "user", "content": "Q1"},
        {"role": "user", "content": [{"type": "text", "text": "Q2", "cache_control": {"type": "ephemeral"}}]},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "hmm", "signature": "x"},
          {"type": "text", "text": "Calling."},
          {"type": "tool_use", "id": "t1", "name": "f", "input": {"a": 1}},
          {"type": "tool_use", "id": "t2", "name": "g", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "r1"},
          {"type": "tool_result", "tool_use_id": "t2", "is_error": true,
           "content": [{"type": "text", "text": "r2"}, {"type": "text", "text": "r3"}]},
          {"type": "text", "text": "Go on."}]}]})");
  const CompletionRequest c = chat(R"({"messages": [
      {"role": "system", "content": "S"},
      {"role": "user", "content": "Q1\nQ2"},
      {"role": "assistant", "content": "Calling.", "reasoning_content": "hmm", "tool_calls": [
        {"id": "t1", "type": "function", "function": {"name": "f", "arguments": "{\"a\":1}"}},
        {"id": "t2", "type": "function", "function": {"name": "g", "arguments": "{}"}}]},
      {"role": "tool", "tool_call_id": "t1", "content": "r1"},
      {"role": "tool", "tool_call_id": "t2", "content": "Error: r2\nr3"},
      {"role": "user", "content": "Go on."}]})");
  EXPECT_EQ(m.request.chat.messages, c.chat.messages);
}

// A failed call's result with no text still says it failed.
TEST(MessagesApiRequest, AFailedResultWithoutTextSaysError) {
  const MessagesRequest m = parsed(R"({"max_tokens": 5, "messages": [
      {"role": "user", "content": "Hi"},
      {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}]},
      {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "is_error": true}]}]})");
  EXPECT_EQ(m.request.chat.messages.back()["content"], "Error");
}

// Anthropic's prefill: a final assistant message with text is continued; one with nothing
// to continue (blank, or only thinking) is answered as if it were not there.
TEST(MessagesApiRequest, AFinalAssistantMessageIsContinued) {
  const MessagesRequest m = parsed(R"({"max_tokens": 5, "messages": [
      {"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Well,"}]})");
  EXPECT_TRUE(m.request.chat.continue_final_message);
  EXPECT_FALSE(m.request.chat.add_generation_prompt);
  EXPECT_EQ(m.request.chat.messages.back()["content"], "Well,");
  for (const char* last :
       {R"("  ")", R"([])", R"([{"type": "thinking", "thinking": "hm", "signature": ""}])"}) {
    const MessagesRequest empty =
        parsed(std::string(R"({"max_tokens": 5, "messages": [{"role": "user", "content": "Hi"},
            {"role": "assistant", "content": )") +
               last + "}]}");
    EXPECT_FALSE(empty.request.chat.continue_final_message) << last;
    EXPECT_TRUE(empty.request.chat.add_generation_prompt) << last;
    ASSERT_EQ(empty.request.chat.messages.size(), 1u) << last;
    EXPECT_EQ(empty.request.chat.messages[0]["role"], "user");
  }
}

TEST(MessagesApiRequest, ToolsAndToolChoiceTakeTheirChatForms) {
  const std::string tools =
      R"("tools": [{"name": "f", "description": "F", "input_schema": {"type": "object"},
          "cache_control": {"type": "ephemeral"}}])";
  const std::string chat_tools =
      R"("tools": [{"type": "function", "function": {"name": "f", "description": "F",
          "parameters": {"type": "object"}}}])";
  const std::string hi = R"("messages": [{"role": "user", "content": "Hi"}], "max_tokens": 5)";
  const std::pair<std::string, std::string> choices[] = {
      {R"({"type": "auto"})", R"("auto")"},
      {R"({"type": "any"})", R"("required")"},
      {R"({"type": "none"})", R"("none")"},
      {R"({"type": "tool", "name": "f"})", R"({"type": "function", "function": {"name": "f"}})"}};
  for (const auto& [anthropic, openai] : choices) {
    const MessagesRequest m =
        parsed("{" + hi + ", " + tools + R"(, "tool_choice": )" + anthropic + "}");
    const CompletionRequest c =
        chat("{" + hi + ", " + chat_tools + R"(, "tool_choice": )" + openai + "}");
    EXPECT_EQ(m.request.tools.choice.mode, c.tools.choice.mode) << anthropic;
    EXPECT_EQ(m.request.tools.choice.name, c.tools.choice.name) << anthropic;
    EXPECT_EQ(m.request.chat.tools, c.chat.tools) << anthropic;
    EXPECT_TRUE(m.request.tools.parallel);
  }
  EXPECT_FALSE(parsed("{" + hi + ", " + tools +
                      R"(, "tool_choice": {"type": "auto", "disable_parallel_tool_use": true}})")
                   .request.tools.parallel);
}

TEST(MessagesApiRequest, OutputFormatIsAJsonSchemaConstraint) {
  const std::string hi = R"("messages": [{"role": "user", "content": "Hi"}], "max_tokens": 5)";
  const std::string schema = R"({"type": "object", "properties": {"a": {"type": "integer"}}})";
  const CompletionRequest c = chat("{" + hi +
                                   R"(, "response_format": {"type": "json_schema", "json_schema":
                                       {"name": "output", "schema": )" +
                                   schema + "}}}");
  for (const std::string& field :
       {R"("output_format": {"type": "json_schema", "schema": )" + schema + "}",
        R"("output_config": {"format": {"type": "json_schema", "schema": )" + schema +
            R"(}, "effort": "high"})"}) {
    const MessagesRequest m = parsed("{" + hi + ", " + field + "}");
    EXPECT_EQ(m.request.constraint.kind, OutputConstraint::Kind::kJsonSchema) << field;
    EXPECT_EQ(m.request.constraint.text, c.constraint.text) << field;
  }
}

// thinking: the template's enable_thinking (absent is off, Anthropic's default); a request's
// own chat_template_kwargs.enable_thinking wins. The reasoning is always split off, so that
// a model that thinks anyway never puts its markers in a text block.
TEST(MessagesApiRequest, ThinkingSetsTheTemplateSwitchAndTheSplit) {
  const std::string hi = R"("messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2000)";
  const MessagesRequest on =
      parsed("{" + hi + R"(, "thinking": {"type": "enabled", "budget_tokens": 1024}})");
  EXPECT_TRUE(on.thinking);
  EXPECT_EQ(on.request.chat.template_kwargs["enable_thinking"], true);
  EXPECT_EQ(on.request.split_reasoning, std::optional<bool>(true));
  for (const std::string& off_body :
       {"{" + hi + R"(, "thinking": {"type": "disabled"}})", "{" + hi + "}"}) {
    const MessagesRequest off = parsed(off_body);
    EXPECT_FALSE(off.thinking) << off_body;
    EXPECT_EQ(off.request.chat.template_kwargs["enable_thinking"], false) << off_body;
    EXPECT_EQ(off.request.split_reasoning, std::optional<bool>(true)) << off_body;
  }
  const MessagesRequest own = parsed(
      "{" + hi +
      R"(, "thinking": {"type": "adaptive"}, "chat_template_kwargs": {"enable_thinking": false}})");
  EXPECT_EQ(own.request.chat.template_kwargs["enable_thinking"], false);
  EXPECT_EQ(parsed("{" + hi + R"(, "reasoning_format": "none"})").request.split_reasoning,
            std::optional<bool>(false));
}

// A forced call or a JSON schema holds the answer from its first token: no room to think,
// so thinking is refused beside them (Anthropic refuses it beside a forced tool).
TEST(MessagesApiRequest, ThinkingIsRefusedWhereTheAnswerIsForcedFromItsFirstToken) {
  const std::string base =
      R"("messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2000,
         "thinking": {"type": "adaptive"},
         "tools": [{"name": "f", "input_schema": {"type": "object"}}])";
  for (const char* field :
       {R"("tool_choice": {"type": "any"})", R"("tool_choice": {"type": "tool", "name": "f"})",
        R"("output_format": {"type": "json_schema", "schema": {}})",
        R"("output_config": {"format": {"type": "json_schema", "schema": {}}})"}) {
    EXPECT_EQ(refused("{" + base + ", " + field + "}").param, "thinking") << field;
  }
  EXPECT_TRUE(parsed("{" + base + R"(, "tool_choice": {"type": "auto"}})").thinking);
}

// Anthropic's temperature is at most 1 (chat's 2): its API refuses 1.5, and so does this.
TEST(MessagesApiRequest, TemperatureAboveOneIsRefused) {
  const std::string head = R"({"max_tokens": 5, "messages": [{"role": "user", "content": "Hi"}], )";
  const ApiError error = refused(head + R"("temperature": 1.5})");
  EXPECT_EQ(error.param, "temperature");
  EXPECT_EQ(error.status, 400);
  auto read = parse_messages_request(head + R"("temperature": 1})");
  ASSERT_TRUE(std::holds_alternative<MessagesRequest>(read));
}

// As Anthropic does, fields it does not define are refused by name, at the top and inside
// the objects it reads; tandem's chat extensions pass.
// Anthropic's max_tokens is at least 1: the chat form's -1 (llama-server's "no limit") is
// not a value this API has.
TEST(MessagesApiRequest, MaxTokensBelowOneIsRefused) {
  for (const char* max : {"-1", "0"}) {
    const ApiError error = refused(std::string(R"({"max_tokens": )") + max +
                                   R"(, "messages": [{"role": "user", "content": "Hi"}]})");
    EXPECT_EQ(error.param, "max_tokens") << max;
    EXPECT_EQ(error.status, 400);
  }
}

TEST(MessagesApiRequest, UnknownFieldsAreRefusedByName) {
  const std::string hi = R"("messages": [{"role": "user", "content": "Hi"}], "max_tokens": 5)";
  const std::pair<std::string, std::string> cases[] = {
      {R"("temprature": 1)", "temprature"},
      {R"("stop_sequence": ["x"])", "stop_sequence"},
      {R"("echo": true)", "echo"},
      {R"("thinking": {"type": "disabled", "foo": 1})", "thinking.foo"},
      {R"("tool_choice": {"type": "auto", "parallel": false})", "tool_choice.parallel"},
      {R"("tools": [{"name": "f", "input_schema": {}, "defer_loading": true}])",
       "tools[0].defer_loading"},
      {R"("tools": [{"type": "function", "function": {"name": "f"}}])", "tools[0].type"},
      {R"("output_format": {"type": "json_schema", "schema": {}, "name": "x"})",
       "output_format.name"},
  };
  for (const auto& [field, param] : cases) {
    const ApiError error = refused("{" + hi + ", " + field + "}");
    EXPECT_EQ(error.param, param) << field << ": " << error.message;
  }
  const std::pair<std::string, std::string> blocks[] = {
      {R"({"role": "user", "content": "Hi", "name": "bob"})", "messages[0].name"},
      {R"({"role": "user", "content": [{"type": "text", "text": "Hi", "x": 1}]})",
       "messages[0].content[0].x"},
      {R"({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "y": 1}]})",
       "messages[0].content[0].y"},
  };
  for (const auto& [message, param] : blocks) {
    const ApiError error = refused(R"({"max_tokens": 5, "messages": [)" + message + "]}");
    EXPECT_EQ(error.param, param) << message << ": " << error.message;
  }
  // What Anthropic's clients send that changes nothing here, or means what happens anyway.
  for (const char* field :
       {R"("cache_control": {"type": "ephemeral"})",
        R"("thinking": {"type": "adaptive", "display": "summarized"})",
        R"("tools": [{"name": "f", "input_schema": {}, "eager_input_streaming": true,
            "allowed_callers": ["direct"]}])"}) {
    parsed("{" + hi + ", " + field + "}");
  }
  parsed(R"({"max_tokens": 5, "messages": [{"role": "user", "content": "Hi"},
      {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "f", "input": {},
       "caller": {"type": "direct"}}]}, {"role": "user", "content": [{"type": "tool_result",
       "tool_use_id": "a", "content": "ok"}]}]})");
  const std::pair<std::string, std::string> not_served[] = {
      {R"("thinking": {"type": "adaptive", "display": "omitted"})", "thinking.display"},
      {R"("tools": [{"name": "f", "input_schema": {},
          "allowed_callers": ["code_execution_20250825"]}])",
       "tools[0].allowed_callers[0]"}};
  for (const auto& [field, param] : not_served) {
    EXPECT_EQ(refused("{" + hi + ", " + field + "}").param, param) << field;
  }
  const ApiError thread = refused("{" + hi + R"(, "thread": {"type": "create"}})");
  EXPECT_EQ(thread.param, "thread");
  EXPECT_EQ(thread.code, "thread_unsupported_request");
  const MessagesRequest extended =
      parsed("{" + hi +
             R"(, "seed": 5, "min_p": 0.1, "repetition_penalty": 1.1, "guided_regex": "a+",
          "cache_salt": "s", "unknown_but_null": null})");
  EXPECT_EQ(extended.request.seed, std::optional<uint64_t>(5));
  EXPECT_EQ(extended.request.cache_salt, "s");
  const MessagesRequest llama =
      parsed("{" + hi + R"(, "repeat_penalty": 1.1, "repeat_last_n": 32, "penalty_last_n": 32})");
  EXPECT_FLOAT_EQ(llama.request.sampling.repetition_penalty, 1.1f);
  EXPECT_EQ(llama.request.sampling.penalty_last_n, 32);
  const MessagesRequest samplers = parsed(
      "{" + hi +
      R"(, "xtc_probability": 0.5, "xtc_threshold": 0.2, "dry_multiplier": 0.8, "dry_base": 2,
          "dry_allowed_length": 3, "dry_penalty_last_n": 64, "dry_sequence_breakers": ["\n"]})");
  EXPECT_TRUE(samplers.request.sampling.xtc_on());
  EXPECT_TRUE(samplers.request.sampling.dry_on());
  EXPECT_EQ(samplers.request.sampling.dry_last_n, 64);
  EXPECT_EQ(samplers.request.dry_sequence_breakers, std::vector<std::string>{"\n"});
}

TEST(MessagesApiRequest, CountTokensNeedsNoMaxTokens) {
  const std::string body = R"({"messages": [{"role": "user", "content": "Hi"}]})";
  auto counted = parse_count_tokens_request(body);
  ASSERT_TRUE(std::holds_alternative<MessagesRequest>(counted));
  EXPECT_EQ(refused(body).param, "max_tokens");
}

// Errors the chat parser finds are renamed to the field the client sent.
TEST(MessagesApiRequest, ChatsRefusalsNameTheMessagesField) {
  const std::pair<std::string, std::string> cases[] = {
      {std::string(
           R"({"max_tokens": 5, "messages": [{"role": "user", "content": "Hi"}], "stop_sequences": )") +
           nlohmann::json(std::vector<std::string>(kMaxMessagesStopSequences + 1, "x")).dump() +
           "}",
       "stop_sequences"},
      {R"({"max_tokens": 5, "messages": [{"role": "user", "content": "Hi"}],
           "stop_sequences": ["a", 7]})",
       "stop_sequences[1]"},
      {R"({"max_tokens": 5, "messages": [{"role": "user", "content": "Hi"}],
           "metadata": {"user_id": 7}})",
       "metadata.user_id"},
      {R"({"max_tokens": 5, "messages": [{"role": "user", "content": "Hi"}],
           "tools": [{"name": 7, "input_schema": {}}]})",
       "tools[0].name"},
      {R"({"max_tokens": 5, "system": "S", "messages": [{"role": "user", "content": "Hi"},
           {"role": "assistant", "content": [{"type": "tool_use", "id": 5, "name": "f", "input": {}}]}]})",
       "messages[1].content[0].id"},
      {R"({"max_tokens": 5, "messages": [{"role": "user", "content": "Hi"},
           {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "f", "input": []}]}]})",
       "messages[1].content[0].input"},
      {R"({"max_tokens": 5, "messages": [{"role": "user", "content": []}]})", "messages"},
      {R"({"max_tokens": 5, "messages": [{"role": "user", "content": "Hi"}], "n": 2})", "n"},
      {R"({"max_tokens": 5, "messages": [{"role": "user", "content": "Hi"}], "logprobs": true})",
       "logprobs"},
  };
  for (const auto& [body, param] : cases) {
    const ApiError error = refused(body);
    EXPECT_EQ(error.param, param) << body << ": " << error.message;
    EXPECT_NE(error.message.find("'" + param), std::string::npos) << error.message;
  }
}

}  // namespace
}  // namespace tandem::TANDEM_UNITY_ID
