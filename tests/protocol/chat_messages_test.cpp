// Chat messages as the template sees them: OpenAI's tool turns, arguments parsed as vLLM
// does, key order kept, and every bad shape a 400 naming the field.
#include "protocol/chat_messages.h"

#include <string>

#include <gtest/gtest.h>

#include "protocol/chat_prompt.h"

namespace tandem::TANDEM_UNITY_ID {
namespace {

ChatInputs parse_ok(const std::string& body) {
  auto parsed = parse_apply_template_request(body);
  if (auto* error = std::get_if<ApiError>(&parsed)) {
    ADD_FAILURE() << error->message;
    return {};
  }
  return std::get<ChatInputs>(std::move(parsed));
}

ApiError parse_error(const std::string& body) {
  auto parsed = parse_apply_template_request(body);
  if (auto* error = std::get_if<ApiError>(&parsed)) return *error;
  ADD_FAILURE() << "accepted: " << body;
  return {};
}

TEST(ChatMessages, ToolTurnsReachTheTemplateAsOpenAIShapesThem) {
  const ChatInputs inputs = parse_ok(R"({"messages": [
      {"role": "user", "content": "weather in Paris?"},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
         "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\", \"unit\": \"c\"}"}}]},
      {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "21"}]})");
  ASSERT_EQ(inputs.messages.size(), 3u);
  // Arguments become an object, keys in the client's order; content null becomes "".
  EXPECT_EQ(inputs.messages[1].dump(),
            R"({"role":"assistant","content":"","tool_calls":[{"id":"call_1","type":"function",)"
            R"("function":{"name":"get_weather","arguments":{"city":"Paris","unit":"c"}}}]})");
  EXPECT_EQ(inputs.messages[2].dump(),
            R"({"role":"tool","content":"21","tool_call_id":"call_1","name":"get_weather"})");
}

// Text parts join with newlines, whatever OpenAI's API names them ("text", the Responses
// API's "input_text" and "output_text"); an assistant's "refusal" part is its refusal text,
// as vLLM reads it.
TEST(ChatMessages, TextAndRefusalPartsBecomeTheTurnsText) {
  const ChatInputs inputs = parse_ok(R"({"messages": [
      {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "input_text", "text": "b"}]},
      {"role": "assistant", "content": [{"type": "output_text", "text": "c"},
                                        {"type": "refusal", "refusal": "I can't."}]},
      {"role": "user", "content": "why"}]})");
  ASSERT_EQ(inputs.messages.size(), 3u);
  EXPECT_EQ(inputs.messages[0]["content"], "a\nb");
  EXPECT_EQ(inputs.messages[1]["content"], "c\nI can't.");
}

TEST(ChatMessages, TemplateSwitchesAreRead) {
  const ChatInputs inputs = parse_ok(R"({"messages": [{"role": "user", "content": "x"}],
      "add_generation_prompt": false, "chat_template_kwargs": {"enable_thinking": false},
      "documents": [{"title": "a", "text": "b"}]})");
  EXPECT_FALSE(inputs.add_generation_prompt);
  EXPECT_EQ(inputs.template_kwargs.dump(), R"({"enable_thinking":false})");
  EXPECT_EQ(inputs.documents.size(), 1u);
}

// reasoning_effort reaches the template as vLLM passes it; "none" also asks it not to think
// where the request did not say; a clash with chat_template_kwargs is refused.
TEST(ChatMessages, ReasoningEffortIsATemplateVariable) {
  const std::string hi = R"("messages": [{"role": "user", "content": "x"}])";
  const ChatInputs low = parse_ok("{" + hi + R"(, "reasoning_effort": "low"})");
  EXPECT_EQ(low.reasoning_effort, "low");
  EXPECT_EQ(low.template_kwargs.dump(), R"({"reasoning_effort":"low"})");
  const ChatInputs none = parse_ok("{" + hi + R"(, "reasoning_effort": "none"})");
  EXPECT_EQ(none.template_kwargs.dump(), R"({"reasoning_effort":"none","enable_thinking":false})");
  const ChatInputs kept = parse_ok("{" + hi +
                                   R"(, "reasoning_effort": "none",
      "chat_template_kwargs": {"enable_thinking": false, "reasoning_effort": "none"}})");
  EXPECT_EQ(kept.template_kwargs["enable_thinking"], false);
  EXPECT_TRUE(kept.effort_in_kwargs);
  // null in the kwargs says nothing.
  const ChatInputs null_kwargs = parse_ok("{" + hi + R"(, "reasoning_effort": "none",
      "chat_template_kwargs": {"enable_thinking": null, "reasoning_effort": null}})");
  EXPECT_EQ(null_kwargs.template_kwargs["enable_thinking"], false);
  EXPECT_FALSE(null_kwargs.effort_in_kwargs);
  for (const char* bad : {R"("reasoning_effort": "max")", R"("reasoning_effort": 1)",
                          R"("reasoning_effort": "low", "chat_template_kwargs":
                              {"reasoning_effort": "high"})",
                          R"("reasoning_effort": "none", "chat_template_kwargs":
                              {"enable_thinking": true})"}) {
    EXPECT_EQ(parse_error("{" + hi + ", " + bad + "}").param, "reasoning_effort") << bad;
  }
  EXPECT_TRUE(parse_ok("{" + hi + "}").reasoning_effort.empty());
}

// What a template spells in its code, not in its text, comments or string literals.
TEST(ChatMessages, ATemplateReadsTheNamesItsCodeSpells) {
  auto compiled = JinjaChatTemplate::compile(
      "{# reasoning_effort #}reasoning_effort {{ 'enable_thinking' }}"
      "{% if documents is defined %}{{ messages[0].content }}{% endif %}");
  const auto& chat_template = std::get<JinjaChatTemplate>(compiled);
  EXPECT_TRUE(chat_template.reads("documents"));
  EXPECT_TRUE(chat_template.reads("messages"));
  EXPECT_FALSE(chat_template.reads("reasoning_effort"));
  EXPECT_FALSE(chat_template.reads("enable_thinking"));
}

TEST(ChatMessages, BadShapesNameTheirField) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"messages": [{"role": "robot", "content": "x"}]})", "messages[0].role"},
      {R"({"messages": [{"role": "tool"}]})", "messages[0].content"},
      {R"({"messages": [{"role": "user", "content": "x", "tool_calls": []}]})",
       "messages[0].tool_calls"},
      {R"({"messages": [{"role": "assistant", "tool_calls": [{"function": {"name": "f",
          "arguments": "{oops"}}]}]})",
       "messages[0].tool_calls[0].function.arguments"},
      {R"({"messages": [{"role": "assistant", "tool_calls": [{"function": {"arguments": "{}"}}]}]})",
       "messages[0].tool_calls[0].function.name"},
      {R"({"messages": [{"role": "assistant", "tool_calls": [{"type": "function"}]}]})",
       "messages[0].tool_calls[0].function"},
      {R"({"messages": [{"role": "tool", "content": "x", "tool_call_id": 7}]})",
       "messages[0].tool_call_id"},
      {R"({"messages": [{"role": "user", "content": "x"}], "chat_template_kwargs": []})",
       "chat_template_kwargs"},
      {R"({"messages": [{"role": "assistant", "content": " \n"}],
          "continue_final_message": true})",
       "messages[0].content"},
      {R"({"messages": [{"role": "assistant", "content": "x"}], "continue_final_message": true,
          "add_generation_prompt": true})",
       "add_generation_prompt"},
      {R"({"messages": [{"role": "user", "content": "x"}], "chat_template": "{{ 1 }}"})",
       "chat_template"},
      {R"({"messages": []})", "messages"},
  };
  for (const auto& [body, param] : cases) {
    const ApiError error = parse_error(body);
    EXPECT_EQ(error.status, 400) << body;
    EXPECT_EQ(error.param, param) << body << ": " << error.message;
  }
}

// Arguments are JSON text inside a string: they get the body's depth bound, since the
// templates' tojson walks them recursively (QA: 30000 nested arrays overflowed the stack
// and killed the server; 64 levels pass, as in a body).
TEST(ChatMessages, ArgumentsNestedPastTheBodysDepthAreRefused) {
  const auto body = [](int depth) {
    return R"({"messages": [{"role": "assistant", "tool_calls": [{"function": {"name": "f",
        "arguments": ")" +
           std::string(depth, '[') + std::string(depth, ']') + R"("}}]}]})";
  };
  const ApiError error = parse_error(body(30000));
  EXPECT_EQ(error.param, "messages[0].tool_calls[0].function.arguments");
  EXPECT_NE(error.message.find("deeper than 64 levels"), std::string::npos) << error.message;
  EXPECT_EQ(parse_ok(body(60)).messages[0]["tool_calls"][0]["function"]["arguments"].size(), 1u);
  // An integer beyond 64 bits passes here (the server may have returned it verbatim from
  // the model's text), where a body's own field is refused.
  EXPECT_EQ(parse_ok(R"({"messages": [{"role": "assistant", "tool_calls": [{"function": {
                "name": "f", "arguments": "{\"id\": 123456789012345678901234}"}}]}]})")
                .messages[0]["tool_calls"][0]["function"]["arguments"]["id"],
            1.2345678901234568e23);
}

TEST(ChatMessages, RaisedTemplateErrorsAreTheClientsMessage) {
  auto compiled = JinjaChatTemplate::compile(
      "{% if messages[0]['role'] != 'user' %}{{ raise_exception('Conversations must start "
      "with a user turn') }}{% endif %}{{ messages[0]['content'] }}{{ undefined_call() }}");
  ASSERT_TRUE(std::holds_alternative<JinjaChatTemplate>(compiled));
  const auto& chat = std::get<JinjaChatTemplate>(compiled);
  auto raised = render_chat_request(
      chat, parse_ok(R"({"messages": [{"role": "assistant", "content": "x"}]})"), {}, {});
  ASSERT_TRUE(std::holds_alternative<ApiError>(raised));
  EXPECT_EQ(std::get<ApiError>(raised).message, "Conversations must start with a user turn");
  EXPECT_EQ(std::get<ApiError>(raised).status, 400);
  auto failed = render_chat_request(
      chat, parse_ok(R"({"messages": [{"role": "user", "content": "x"}]})"), {}, {});
  ASSERT_TRUE(std::holds_alternative<ApiError>(failed));
  EXPECT_NE(std::get<ApiError>(failed).message.find("chat template failed"), std::string::npos);
}

TEST(ChatMessages, ApplyTemplateResponseIsLlamaServersShape) {
  EXPECT_EQ(apply_template_response_json("<|im_start|>user\nhi"),
            R"({"prompt":"<|im_start|>user\nhi"})");
}

}  // namespace
}  // namespace tandem::TANDEM_UNITY_ID
