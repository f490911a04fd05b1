// POST /v1/responses over HTTP, function tools and refusals: a named function's call as a
// function_call item, streamed and whole, and a follow-up turn holding the call and its
// output, which is the chat turn it amounts to; and every refusal naming the Responses field
// the client sent (stored-state fields, hosted tools, media; chat's errors and the grammar
// compiler's, renamed).
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/server/responses_http_support.h"

namespace tandem::testing::TANDEM_UNITY_ID {
namespace {

using namespace responses_http;  // NOLINT(google-build-using-namespace): the tests' own helpers

// ChatML with tools, where ../shared has it: Qwen2.5's template (Hermes calls). Its tool
// prompt does not fit the tiny model's 512 tokens, so the demo model (2048) serves it.
const std::filesystem::path kToolTemplate = "chat-templates/Qwen-Qwen2.5-7B-Instruct.jinja";

ServerProcess* tool_server() {
  static const std::unique_ptr<ServerProcess> server = []() -> std::unique_ptr<ServerProcess> {
    const auto shared = shared_dir();
    if (!shared || !std::filesystem::is_regular_file(*shared / kToolTemplate)) return nullptr;
    return std::make_unique<ServerProcess>(
        demo_model(),
        std::vector<std::string>{"--chat-template", (*shared / kToolTemplate).string(),
                                 "--kv-tokens", "65536"});
  }();
  return server.get();
}

#define REQUIRE_TOOL_SERVER()                                                         \
  do {                                                                                \
    if (tool_server() == nullptr)                                                     \
      GTEST_SKIP() << "../shared/" << kToolTemplate.string()                          \
                   << " is absent: no chat template with tools to serve these tests"; \
  } while (0)

const json kWeatherTool = json::parse(R"({"type": "function", "name": "get_weather",
    "description": "Weather in a city", "parameters": {"type": "object",
    "properties": {"city": {"type": "string", "maxLength": 12}}, "required": ["city"],
    "additionalProperties": false}})");

// Raises '"', ']' and '}' and lowers the blanks, as tool_calls_http_test does, so that a
// random model's strings end within the budget.
json weather_request(uint64_t seed) {
  return {{"instructions", "Use the tools."},
          {"input", "What is the weather in Paris?"},
          {"tools", {kWeatherTool}},
          {"tool_choice", {{"type", "function"}, {"name", "get_weather"}}},
          {"max_output_tokens", 300},
          {"seed", seed},
          {"logit_bias", {{"9", -4}, {"10", -4}, {"32", -4}, {"34", 3}, {"93", 2}, {"125", 2}}}};
}

TEST(ResponsesHttp, ANamedFunctionGivesAFunctionCallItemStreamedAndWhole) {
  REQUIRE_TOOL_SERVER();
  const uint16_t port = tool_server()->port();
  for (uint64_t seed : {3u, 8u}) {
    SCOPED_TRACE(seed);
    const json body = weather_request(seed);
    const json whole = post_json(port, kRoute, body);
    EXPECT_EQ(whole["status"], "completed") << whole.dump();
    EXPECT_EQ(whole["tool_choice"], body["tool_choice"]);
    ASSERT_EQ(whole["output"].size(), 1u) << whole.dump();
    const json& call = whole["output"][0];
    EXPECT_EQ(call["type"], "function_call");
    EXPECT_EQ(call["status"], "completed");
    EXPECT_EQ(call["name"], "get_weather");
    EXPECT_TRUE(call["id"].get<std::string>().starts_with("fc_")) << call.dump();
    EXPECT_TRUE(call["call_id"].get<std::string>().starts_with("call_")) << call.dump();
    ASSERT_TRUE(call["arguments"].is_string()) << call.dump();
    const json arguments = json::parse(call["arguments"].get<std::string>());
    ASSERT_TRUE(arguments.is_object()) << arguments.dump();
    EXPECT_TRUE(arguments["city"].is_string()) << arguments.dump();

    const std::vector<Event> events = events_of(stream(port, body));
    const size_t deltas = count_of(events, "response.function_call_arguments.delta");
    std::vector<std::string> expected = {"response.created", "response.in_progress",
                                         "response.output_item.added"};
    expected.insert(expected.end(), deltas, "response.function_call_arguments.delta");
    for (const char* type : {"response.function_call_arguments.done", "response.output_item.done",
                             "response.completed"}) {
      expected.push_back(type);
    }
    EXPECT_GE(deltas, 1u);
    ASSERT_EQ(types_of(events), expected);
    const json& added = events[2].data["item"];
    EXPECT_EQ(added["type"], "function_call");
    EXPECT_EQ(added["name"], "get_weather");
    EXPECT_EQ(added["status"], "in_progress");
    EXPECT_EQ(added["arguments"], "");
    const std::string item_id = added["id"];
    std::string streamed_arguments;
    for (size_t i = 3; i < 3 + deltas; ++i) {
      EXPECT_EQ(events[i].data["item_id"], item_id);
      streamed_arguments += events[i].data["delta"].get<std::string>();
    }
    EXPECT_EQ(streamed_arguments, call["arguments"]);
    const json& done = events[3 + deltas].data;
    EXPECT_EQ(done["item_id"], item_id);
    EXPECT_EQ(done["arguments"], call["arguments"]);
    const json& item_done = events[4 + deltas].data["item"];
    EXPECT_EQ(item_done["id"], item_id);
    EXPECT_EQ(item_done["call_id"], added["call_id"]);
    EXPECT_EQ(without_ids(json::array({item_done})), without_ids(whole["output"]));
    const json& final_response = events.back().data["response"];
    EXPECT_EQ(final_response["output"], json::array({item_done}));
    EXPECT_EQ(final_response["usage"]["output_tokens"], whole["usage"]["output_tokens"]);
  }
}

TEST(ResponsesHttp, AFollowUpTurnWithTheCallAndItsOutputIsTheChatTurn) {
  REQUIRE_TOOL_SERVER();
  const uint16_t port = tool_server()->port();
  const json chat_tool = {{"type", "function"},
                          {"function",
                           {{"name", "get_weather"},
                            {"description", kWeatherTool["description"]},
                            {"parameters", kWeatherTool["parameters"]}}}};
  const json call_item = {{"type", "function_call"},
                          {"call_id", "call_1"},
                          {"name", "get_weather"},
                          {"arguments", R"({"city": "Paris"})"}};
  const json output_item = {
      {"type", "function_call_output"}, {"call_id", "call_1"}, {"output", "sunny"}};
  const json chat_call = {
      {"id", "call_1"},
      {"type", "function"},
      {"function", {{"name", "get_weather"}, {"arguments", R"({"city": "Paris"})"}}}};
  const json user = {{"role", "user"}, {"content", "What is the weather in Paris?"}};
  const json system = {{"role", "system"}, {"content", "Use the tools."}};
  const json tool_turn = {{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", "sunny"}};
  struct Case {
    const char* name;
    json input;
    json messages;
  };
  const Case cases[] = {
      {"the call alone",
       {user, call_item, output_item},
       {system,
        user,
        {{"role", "assistant"}, {"content", nullptr}, {"tool_calls", {chat_call}}},
        tool_turn}},
      {"the call after the assistant's text",  // joins that assistant turn
       {user,
        {{"type", "message"}, {"role", "assistant"}, {"content", "Checking."}},
        call_item,
        output_item},
       {system,
        user,
        {{"role", "assistant"}, {"content", "Checking."}, {"tool_calls", {chat_call}}},
        tool_turn}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const json body = {{"instructions", "Use the tools."},
                       {"input", c.input},
                       {"tools", {kWeatherTool}},
                       {"max_output_tokens", 6},
                       {"seed", 4}};
    const HttpResult result = fetch(port, "POST", kRoute, body.dump());
    ASSERT_EQ(result.status, 200) << result.body;
    const json response = result.json();
    const json chat = post_json(
        port, "/v1/chat/completions",
        {{"messages", c.messages}, {"tools", {chat_tool}}, {"max_tokens", 6}, {"seed", 4}});
    EXPECT_EQ(response["usage"]["input_tokens"], chat["usage"]["prompt_tokens"]);
    EXPECT_EQ(text_of(response), chat_text(chat));
  }
}

TEST(ResponsesHttp, WhatNeedsAStoredResponseOrIsNotServedIsRefusedByName) {
  // OpenAI's stored-response routes answer 404, saying why, for any id and method.
  for (const auto& [method, target] : std::vector<std::pair<std::string, std::string>>{
           {"GET", "/v1/responses/resp_1"},
           {"DELETE", "/v1/responses/resp_1"},
           {"POST", "/v1/responses/resp_1/cancel"},
           {"GET", "/v1/responses/resp_1/input_items"}}) {
    const HttpResult result = fetch(shared_server().port(), method, target, "");
    EXPECT_EQ(result.status, 404) << method << " " << target;
    const std::string message = result.json()["error"]["message"];
    EXPECT_NE(message.find("'resp_1'"), std::string::npos) << message;
    EXPECT_NE(message.find("stores no responses"), std::string::npos) << message;
  }

  const uint16_t port = shared_server().port();
  const std::pair<const char*, const char*> cases[] = {
      {R"({"input": "hi", "previous_response_id": "resp_1"})", "previous_response_id"},
      {R"({"input": "hi", "store": true})", "store"},
      {R"({"input": "hi", "background": true})", "background"},
      {R"({"input": "hi", "conversation": "conv_1"})", "conversation"},
      {R"({"input": [{"type": "item_reference", "id": "msg_1"}]})", "input[0].type"},
      {R"({"input": [{"role": "user", "content": [{"type": "input_image",
          "image_url": "https://example.com/a.png"}]}]})",
       "input[0].content[0].type"},
      {R"({"input": "hi", "tools": [{"type": "web_search"}]})", "tools[0].type"},
      {R"({"input": "hi", "reasoning": {"effort": "high"}})", "reasoning.effort"},
      {R"({"input": "hi", "top_logprobs": 2})", "top_logprobs"},
      {R"({"input": "hi", "truncation": "auto"})", "truncation"},
      {R"({"instructions": "hi"})", "input"},
  };
  for (const auto& [body, param] : cases) {
    SCOPED_TRACE(body);
    const json error = refused(port, json::parse(body));
    EXPECT_EQ(error.value("param", json()), std::string(param)) << error.dump();
  }
  // Their harmless forms are served.
  for (const char* body : {R"({"input": "hi", "store": false, "max_output_tokens": 1})",
                           R"({"input": "hi", "background": false, "max_output_tokens": 1})",
                           R"({"input": "hi", "truncation": "disabled", "max_output_tokens": 1})",
                           R"({"input": "hi", "reasoning": {"effort": null},
                               "max_output_tokens": 1})"}) {
    EXPECT_EQ(fetch(port, "POST", kRoute, body).status, 200) << body;
  }
}

// The chat parser's errors come back in the names of the Responses fields sent.
TEST(ResponsesHttp, ChatsErrorsNameTheResponsesFields) {
  const uint16_t port = shared_server().port();
  const std::pair<const char*, const char*> cases[] = {
      {R"({"input": "hi", "tools": [{"type": "function", "name": "f", "parameters": 3}]})",
       "tools[0].parameters"},
      {R"({"input": "hi", "tools": [{"type": "function", "name": "f"}],
          "tool_choice": {"type": "function", "name": "g"}})",
       "tool_choice.name"},
      {R"({"input": "hi", "text": {"format": {"type": "json_schema", "name": "x",
          "schema": 3}}})",
       "text.format.schema"},
      {R"({"input": "hi", "text": {"format": {"type": "json_schema", "name": "bad name!",
          "schema": {"type": "object"}}}})",
       "text.format.name"},
      {R"({"instructions": "Be brief.", "input": [{"role": "user", "content": "a"},
          {"role": "user", "content": 3}]})",
       "input[1].content"},
      {R"({"input": "hi", "max_output_tokens": -1})", "max_output_tokens"},
  };
  for (const auto& [body, param] : cases) {
    SCOPED_TRACE(body);
    const json error = refused(port, json::parse(body));
    EXPECT_EQ(error.value("param", json()), std::string(param)) << error.dump();
    const std::string message = error.value("message", "");
    for (const char* chat_name : {"messages", "function.", "response_format", "max_completion"}) {
      EXPECT_EQ(message.find(chat_name), std::string::npos) << message;
    }
  }
}

// Schemas refused when their grammar is compiled (after the request parsed) name the
// Responses fields too: tools[i].parameters, text.format.schema.
TEST(ResponsesHttp, SchemaCompileErrorsNameTheResponsesFields) {
  const uint16_t port = shared_server().port();
  const std::pair<const char*, const char*> cases[] = {
      {R"({"input": "hi", "tool_choice": "required", "tools": [{"type": "function",
          "name": "f", "parameters": {"type": "object", "required": ["a"],
          "properties": {"a": {"type": "integer", "minimum": 5, "maximum": 3}}}}]})",
       "tools[0].parameters"},
      {R"({"input": "hi", "tool_choice": "required", "tools": [{"type": "function",
          "name": "f", "parameters": {"enum": ["a", "b"]}}]})",
       "tools[0].parameters"},
      {R"({"input": "hi", "text": {"format": {"type": "json_schema", "name": "x",
          "schema": {"type": "integer", "minimum": 5, "maximum": 3}}}})",
       "text.format.schema"},
  };
  for (const auto& [body, param] : cases) {
    SCOPED_TRACE(body);
    const json error = refused(port, json::parse(body));
    EXPECT_EQ(error.value("param", json()), std::string(param)) << error.dump();
    const std::string message = error.value("message", "");
    for (const char* chat_name : {"function.parameters", "response_format"}) {
      EXPECT_EQ(message.find(chat_name), std::string::npos) << message;
    }
  }
}

}  // namespace
}  // namespace tandem::testing::TANDEM_UNITY_ID
