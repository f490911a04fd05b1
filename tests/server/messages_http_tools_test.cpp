// POST /v1/messages over HTTP, tools, refusals and keys: a forced tool's call as a tool_use
// block, whole and streamed (its input in one input_json_delta); the turn that sends the call
// and its tool_result back is chat's turn with the call and a tool message; every refusal is
// an Anthropic error object naming the field the client sent (the session's own refusals
// too); an X-Api-Key header authorizes as a bearer token does.
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/server/messages_http_support.h"

namespace tandem::testing::TANDEM_UNITY_ID {
namespace {

using namespace messages_http;  // NOLINT(google-build-using-namespace): the tests' own helpers

const json kWeatherSchema = json::parse(R"({"type": "object",
    "properties": {"city": {"type": "string", "maxLength": 12}}, "required": ["city"],
    "additionalProperties": false})");

const json kWeatherTool = {{"name", "get_weather"},
                           {"description", "Weather in a city"},
                           {"input_schema", kWeatherSchema}};

// Raises '"', ']' and '}' and lowers the blanks, as tool_calls_http_test does, so that a
// random model's strings end within the budget.
json weather_request(uint64_t seed) {
  return {{"system", "Use the tools."},
          {"messages", {{{"role", "user"}, {"content", "What is the weather in Paris?"}}}},
          {"tools", json::array({kWeatherTool})},
          {"tool_choice", {{"type", "tool"}, {"name", "get_weather"}}},
          {"max_tokens", 300},
          {"seed", seed},
          {"logit_bias", {{"9", -4}, {"10", -4}, {"32", -4}, {"34", 3}, {"93", 2}, {"125", 2}}}};
}

TEST(MessagesHttp, AForcedToolGivesAToolUseBlockStreamedAndWhole) {
  REQUIRE_MESSAGES_SERVER();
  const uint16_t port = messages_server()->port();
  for (uint64_t seed : {3u, 8u}) {
    SCOPED_TRACE(seed);
    const Message whole = whole_message(port, weather_request(seed));
    EXPECT_EQ(whole.stop_reason, "tool_use");
    EXPECT_EQ(whole.stop_sequence, json());
    ASSERT_EQ(whole.tool_uses.size(), 1u);
    const json& call = whole.tool_uses[0];
    EXPECT_EQ(call["name"], "get_weather");
    EXPECT_FALSE(call["id"].get<std::string>().empty());
    ASSERT_TRUE(call["input"].is_object()) << call.dump();
    EXPECT_TRUE(call["input"]["city"].is_string()) << call.dump();
    EXPECT_EQ(call["input"].size(), 1u) << call.dump();

    const Message streamed = streamed_message(port, weather_request(seed));
    EXPECT_EQ(streamed.stop_reason, "tool_use");
    EXPECT_EQ(streamed.block_types, whole.block_types);
    ASSERT_EQ(streamed.tool_uses.size(), 1u);
    EXPECT_EQ(streamed.tool_uses[0]["name"], "get_weather");
    EXPECT_EQ(streamed.tool_uses[0]["input"], call["input"]);
    EXPECT_EQ(streamed.usage["output_tokens"], whole.usage["output_tokens"]);
  }
}

// The call and its result, sent back as Anthropic's blocks, render as chat's assistant turn
// with the call and a tool message (a failed call's result saying so): the same prompt, to
// the token.
TEST(MessagesHttp, AToolResultTurnIsChatsToolMessage) {
  REQUIRE_MESSAGES_SERVER();
  const uint16_t port = messages_server()->port();
  const json tool_use = {{"type", "tool_use"},
                         {"id", "toolu_1"},
                         {"name", "get_weather"},
                         {"input", {{"city", "Paris"}}}};
  const json body = {{"system", "Use the tools."},
                     {"tools", json::array({kWeatherTool})},
                     {"max_tokens", 8},
                     {"seed", 4},
                     {"messages",
                      {{{"role", "user"}, {"content", "What is the weather in Paris?"}},
                       {{"role", "assistant"},
                        {"content", {{{"type", "text"}, {"text", "Let me look."}}, tool_use}}},
                       {{"role", "user"},
                        {"content",
                         {{{"type", "tool_result"},
                           {"tool_use_id", "toolu_1"},
                           {"is_error", true},
                           {"content", {{{"type", "text"}, {"text", "sunny"}}}}},
                          {{"type", "text"}, {"text", "And tomorrow?"}}}}}}}};
  const json chat = as_messages_send_it(
      {{"tools",
        {{{"type", "function"},
          {"function",
           {{"name", "get_weather"},
            {"description", "Weather in a city"},
            {"parameters", kWeatherSchema}}}}}},
       {"max_tokens", 8},
       {"seed", 4},
       {"messages",
        {{{"role", "system"}, {"content", "Use the tools."}},
         {{"role", "user"}, {"content", "What is the weather in Paris?"}},
         {{"role", "assistant"},
          {"content", "Let me look."},
          {"tool_calls",
           {{{"id", "toolu_1"},
             {"type", "function"},
             {"function", {{"name", "get_weather"}, {"arguments", R"({"city":"Paris"})"}}}}}}},
         {{"role", "tool"}, {"tool_call_id", "toolu_1"}, {"content", "Error: sunny"}},
         {{"role", "user"}, {"content", "And tomorrow?"}}}}});
  const ChatAnswer expected = chat_answer(port, chat);
  const Message message = whole_message(port, body);
  EXPECT_EQ(prompt_tokens_of(message.usage), expected.usage["prompt_tokens"]);
  EXPECT_EQ(counted_tokens(port, body), expected.usage["prompt_tokens"]);
  EXPECT_EQ(message.text, expected.content);
}

// A forced call cut by max_tokens parses as no call: chat shows its markup as content (as
// vLLM's parsers do); a message drops it, as Anthropic's text blocks never hold calls.
TEST(MessagesHttp, ACallCutShortIsNotShownAsText) {
  REQUIRE_MESSAGES_SERVER();
  const uint16_t port = messages_server()->port();
  json body = weather_request(3);
  body["max_tokens"] = 24;
  json chat = as_messages_send_it(
      {{"messages", {{{"role", "system"}, {"content", "Use the tools."}}, body["messages"][0]}},
       {"tools",
        {{{"type", "function"},
          {"function",
           {{"name", "get_weather"},
            {"description", "Weather in a city"},
            {"parameters", kWeatherSchema}}}}}},
       {"tool_choice", {{"type", "function"}, {"function", {{"name", "get_weather"}}}}},
       {"max_tokens", 24},
       {"seed", 3},
       {"logit_bias", body["logit_bias"]}});
  const ChatAnswer expected = chat_answer(port, chat);
  ASSERT_EQ(expected.finish, "length");
  EXPECT_TRUE(expected.content.starts_with("<tool_call>")) << expected.content;
  for (const Message& message : {whole_message(port, body), streamed_message(port, body)}) {
    EXPECT_EQ(message.stop_reason, "max_tokens");
    EXPECT_EQ(message.text, "");
    EXPECT_EQ(message.tool_uses, json::array());
    EXPECT_EQ(message.block_types, std::vector<std::string>{"text"});
  }
}

// A complete call, then one cut by the limit or a stop sequence: the complete one is a
// tool_use block, the cut one is not text, and the stop says what cut it.
TEST(MessagesHttp, ACallCutAfterACompleteOneLeavesTheCompleteOne) {
  REQUIRE_MESSAGES_SERVER();
  const uint16_t port = messages_server()->port();
  const std::string call =
      R"("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n")";
  json body = weather_request(1);
  body["tool_choice"] = {{"type", "auto"}};
  body["guided_grammar"] =
      "root ::= " + call +
      R"( "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Qu" [a-z]+)";
  body["max_tokens"] = 170;
  // Else [a-z]+ may end at EOS: a broken call, not a cut one.
  body["logit_bias"][std::to_string(responses_http::eos_id(port))] = -100;
  json stopped = body;
  stopped["stop_sequences"] = {"Qu"};
  for (const auto& [request, reason] : {std::pair{body, std::string("max_tokens")},
                                        std::pair{stopped, std::string("stop_sequence")}}) {
    SCOPED_TRACE(reason);
    for (const Message& message : {whole_message(port, request), streamed_message(port, request)}) {
      EXPECT_EQ(message.stop_reason, reason);
      EXPECT_EQ(message.stop_sequence, request.contains("stop_sequences") ? json("Qu") : json());
      EXPECT_EQ(message.text, "");
      ASSERT_EQ(message.tool_uses.size(), 1u);
      EXPECT_EQ(message.tool_uses[0]["input"], json({{"city", "Paris"}}));
    }
  }
}

// Anthropic's words for a prompt past the context, which Claude Code compacts on; and the
// id in request-id, where Anthropic's SDKs read it.
TEST(MessagesHttp, APromptPastTheContextAndTheRequestIdAreSaidAsAnthropicSaysThem) {
  REQUIRE_MESSAGES_SERVER();
  const uint16_t port = messages_server()->port();
  std::string words;
  for (int i = 0; i < 3000; ++i) words += "a ";
  const HttpResult long_prompt =
      fetch(port, "POST", kMessages,
            json{{"messages", {{{"role", "user"}, {"content", words}}}}, {"max_tokens", 4}}.dump());
  const json error = anthropic_error(long_prompt, 400);
  const std::string message = error.value("message", "");
  EXPECT_TRUE(message.starts_with("prompt is too long: ")) << message;
  EXPECT_TRUE(message.ends_with(" tokens > 2047 maximum")) << message;
  const HttpResult answered =
      fetch(port, "POST", kMessages,
            json{{"messages", {{{"role", "user"}, {"content", "Hi"}}}}, {"max_tokens", 2}}.dump());
  ASSERT_EQ(answered.status, 200) << answered.body;
  ASSERT_EQ(answered.headers.count("request-id"), 1u);
  EXPECT_EQ(answered.headers.at("request-id"), answered.json()["id"]);
  EXPECT_EQ(answered.headers.at("request-id"), answered.headers.at("x-request-id"));
}

HttpResult post(uint16_t port, const json& body, const std::string& route = kMessages) {
  return fetch(port, "POST", route, body.dump());
}

TEST(MessagesHttp, EachRefusalIsAnAnthropicErrorNamingTheField) {
  REQUIRE_MESSAGES_SERVER();
  const uint16_t port = messages_server()->port();
  const json user = {{"role", "user"}, {"content", "Hi"}};
  const auto with = [&](const char* key, json value) {
    json body = {{"messages", {user}}, {"max_tokens", 8}};
    body[key] = std::move(value);
    return body;
  };
  const auto turn = [&](json content, const char* role = "user") {
    return json{{"messages", {{{"role", role}, {"content", std::move(content)}}}},
                {"max_tokens", 8}};
  };
  const std::vector<std::pair<json, std::string>> cases = {
      {{{"messages", {user}}}, "'max_tokens'"},
      {with("max_tokens", 0), "'max_tokens'"},
      {turn("x", "system"), "'messages[0].role'"},
      {turn({{{"type", "image"}, {"source", json::object()}}}), "'messages[0].content[0]'"},
      {turn({{{"type", "tool_use"}, {"id", "a"}, {"name", "f"}, {"input", json::object()}}}),
       "'messages[0].content[0]'"},
      {turn({{{"type", "redacted_thinking"}, {"data", "x"}}}, "assistant"),
       "'messages[0].content[0]'"},
      {turn({{{"type", "text"}}}), "'messages[0].content[0].text'"},
      {turn(7), "'messages[0].content'"},
      {with("stop", "x"), "'stop'"},
      {with("response_format", {{"type", "json_object"}}), "'response_format'"},
      {with("stop_sequences", std::vector<std::string>(65, "x")), "'stop_sequences'"},
      {with("temprature", 1), "'temprature'"},
      {with("tools", {{{"type", "function"}, {"function", {{"name", "f"}}}}}), "'tools[0]'"},
      {[&] {
         json body = with("tools", json::array({kWeatherTool}));
         body["tool_choice"] = {{"type", "any"}};
         body["thinking"] = {{"type", "adaptive"}};
         return body;
       }(),
       "'thinking'"},
      {with("temperature", "hot"), "'temperature'"},
      {with("tools", {{{"type", "web_search_20250305"}, {"name", "web_search"}}}), "'tools[0]'"},
      {with("tools", {{{"name", "f"}}}), "'tools[0].input_schema'"},
      {[&] {  // checked when a call is forced, as on chat
         json body = with("tools", {{{"name", "f"}, {"input_schema", {{"type", 3}}}}});
         body["tool_choice"] = {{"type", "any"}};
         return body;
       }(),
       "'tools[0].input_schema"},
      {with("tool_choice", {{"type", "sometimes"}}), "'tool_choice.type'"},
      {with("tool_choice", "auto"), "'tool_choice'"},
      {with("thinking", {{"type", "enabled"}, {"budget_tokens", 100}}), "'thinking.budget_tokens'"},
      {with("thinking", {{"type", "enabled"}, {"budget_tokens", 2000}}),
       "'thinking.budget_tokens'"},  // not below max_tokens
      {with("metadata", {{"tenant", "x"}}), "'metadata.tenant'"},
      {with("output_format", {{"type", "json_schema"}}), "'output_format.schema'"},
      {with("output_config", {{"effort", "low"}}), "'output_config.effort'"},
      {with("mcp_servers", {{{"type", "url"}}}), "'mcp_servers'"},
      {with("container", "c1"), "'container'"},
      {with("service_tier", "priority"), "'service_tier'"},
  };
  for (const auto& [body, field] : cases) {
    SCOPED_TRACE(body.dump());
    const json error = anthropic_error(post(port, body), 400);
    EXPECT_EQ(error.value("type", ""), "invalid_request_error");
    EXPECT_NE(error.value("message", "").find(field), std::string::npos) << error.dump();
  }
  // Not the API's own refusals: the route's, the model's and the session's, in its shape.
  EXPECT_EQ(anthropic_error(post(port, with("model", "claude-x")), 404)["type"], "not_found_error");
  EXPECT_EQ(anthropic_error(fetch(port, "GET", kMessages), 405)["type"], "invalid_request_error");
  EXPECT_EQ(anthropic_error(fetch(port, "POST", kMessages, "{\"messages\": [",
                                  {{"Content-Type", "application/json"}}),
                            400)["type"],
            "invalid_request_error");
  EXPECT_EQ(anthropic_error(fetch(port, "POST", kMessages, "x", {{"Content-Encoding", "gzip"}}),
                            415)["type"],
            "invalid_request_error");
  EXPECT_EQ(anthropic_error(post(port, json::object(), "/v1/messages/batches"), 404)["type"],
            "not_found_error");
  EXPECT_EQ(anthropic_error(post(port, with("model", "claude-x"), "/v1/messages/count_tokens"),
                            404)["type"],
            "not_found_error");
  // The other routes keep OpenAI's shape.
  const HttpResult chat = post(port, with("model", "claude-x"), kChat);
  EXPECT_EQ(chat.status, 404);
  EXPECT_TRUE(chat.json()["error"]["message"].is_string()) << chat.body;
}

// Mistral's templates refuse call ids that are not 9 alphanumerics; a history with another
// provider's ids (Anthropic's toolu_...) renders once they are given that shape, on both APIs.
TEST(MessagesHttp, AnotherProvidersCallIdsRenderInMistralsTemplate) {
  TANDEM_REQUIRE_SHARED();
  const auto shared = *shared_dir();
  ServerProcess server(
      shared / "models/families/mistral-nemo-tiny-s777-f16.gguf",
      {"--chat-template",
       (shared / "chat-templates/Mistral-Small-3.2-24B-Instruct-2506.jinja").string()});
  const std::string id = "toolu_01A09q90qw90lq917835lq9";
  const json body = {
      {"tools", json::array({kWeatherTool})},
      {"max_tokens", 2},
      {"messages",
       {{{"role", "user"}, {"content", "Weather in Paris?"}},
        {{"role", "assistant"},
         {"content",
          {{{"type", "tool_use"},
            {"id", id},
            {"name", "get_weather"},
            {"input", {{"city", "Paris"}}}}}}},
        {{"role", "user"},
         {"content", {{{"type", "tool_result"}, {"tool_use_id", id}, {"content", "sunny"}}}}}}}};
  EXPECT_EQ(post(server.port(), body).status, 200) << post(server.port(), body).body;
  const json chat = {
      {"max_tokens", 2},
      {"messages",
       {{{"role", "user"}, {"content", "Weather in Paris?"}},
        {{"role", "assistant"},
         {"tool_calls",
          {{{"id", "call_abc_0_0"},
            {"type", "function"},
            {"function", {{"name", "get_weather"}, {"arguments", "{}"}}}}}}},
        {{"role", "tool"}, {"tool_call_id", "call_abc_0_0"}, {"content", "sunny"}}}}};
  const HttpResult answered = post(server.port(), chat, kChat);
  EXPECT_EQ(answered.status, 200) << answered.body;
}

// A model whose template marks no reasoning cannot honour thinking.
TEST(MessagesHttp, ThinkingNeedsATemplateThatMarksReasoning) {
  const json body = {{"messages", {{{"role", "user"}, {"content", "Hi"}}}},
                     {"max_tokens", 2000},
                     {"thinking", {{"type", "enabled"}, {"budget_tokens", 1024}}}};
  const json error = anthropic_error(post(shared_server().port(), body), 400);
  EXPECT_NE(error.value("message", "").find("'thinking'"), std::string::npos) << error.dump();
}

TEST(MessagesHttp, AnXApiKeyAuthorizesAsABearerTokenDoes) {
  ServerProcess server(tiny_model(), {"--api-key", "sesame"});
  const std::string body =
      json{{"messages", {{{"role", "user"}, {"content", "Hi"}}}}, {"max_tokens", 2}}.dump();
  EXPECT_EQ(fetch(server.port(), "POST", kMessages, body, {{"x-api-key", "sesame"}}).status, 200);
  EXPECT_EQ(fetch(server.port(), "POST", kChat, body, {{"X-Api-Key", "sesame"}}).status, 200);
  EXPECT_EQ(
      fetch(server.port(), "POST", kMessages, body, {{"Authorization", "Bearer sesame"}}).status,
      200);
  const json error = anthropic_error(
      fetch(server.port(), "POST", kMessages, body, {{"x-api-key", "sesame!"}}), 401);
  EXPECT_EQ(error["type"], "authentication_error");
  anthropic_error(fetch(server.port(), "POST", kMessages, body), 401);
}

}  // namespace
}  // namespace tandem::testing::TANDEM_UNITY_ID
