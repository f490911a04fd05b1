// Tool calling over HTTP against a real `tandem serve` (tiny random-weight model):
// tool_choice "required" and a named function constrain the output to calls in the
// template family's format, which come back as message.tool_calls (arguments valid against
// the tool's schema, finish_reason "tool_calls"), streamed as OpenAI's deltas with the same
// calls; tools reach the template; "none" leaves the output plain; bad tools are 400s.
#include <fstream>
#include <set>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "protocol/tool_calls/tool_fields.h"
#include "server/tool_grammar.h"
#include "tests/runner/grammar/schema_validator.h"
#include "tests/server/server_test_support.h"

namespace tandem::testing::TANDEM_UNITY_ID {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

// ChatML that lists the tools by name (the tiny model's context is 512 byte tokens: the
// whole definitions would not fit); the "<tool_call>" in its comment makes the server read
// Hermes calls, as in Qwen's template.
constexpr const char* kHermesTemplate =
    "{# calls: <tool_call>{\"name\": ..., \"arguments\": ...}</tool_call> #}{%- if tools %}"
    "<|im_start|>system\n<tools>{% for tool in tools %} {{ tool.function.name }}{% endfor %}"
    "</tools><|im_end|>\n{% endif %}{% for message in messages %}<|im_start|>"
    "{{ message.role }}\n{{ message.content }}<|im_end|>\n{% endfor %}{% if "
    "add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

const ordered_json kTools = ordered_json::parse(R"([
  {"type": "function", "function": {"name": "get_weather", "description": "Weather in a city",
   "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12},
                  "unit": {"enum": ["celsius", "fahrenheit"]}}, "required": ["city", "unit"]}}},
  {"type": "function", "function": {"name": "add", "parameters": {"type": "object",
   "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"],
   "additionalProperties": false}}}])");

ServerProcess& hermes_server() {
  static ScratchDir dir;
  static const std::filesystem::path path = [] {
    const auto file = dir.file("hermes.jinja");
    std::ofstream(file) << kHermesTemplate;
    return file;
  }();
  static ServerProcess server(tiny_model(), {"--chat-template", path.string()});
  return server;
}

// Raises '"', ']' and '}' and lowers the blanks, as structured_output_test does, so that a
// random model's strings end within the budget.
ordered_json tool_request(const ordered_json& tool_choice, uint64_t seed) {
  return {{"messages", {{{"role", "user"}, {"content", "What is the weather in Paris?"}}}},
          {"tools", kTools},
          {"tool_choice", tool_choice},
          {"max_tokens", 400},
          {"seed", seed},
          {"logit_bias", {{"9", -4}, {"10", -4}, {"32", -4}, {"34", 3}, {"93", 2}, {"125", 2}}}};
}

// tools: one function "t" whose parameters are `schema`.
ordered_json one_tool(const char* schema) {
  return ordered_json::array(
      {{{"type", "function"},
        {"function", {{"name", "t"}, {"parameters", ordered_json::parse(schema)}}}}});
}

json schema_of(const std::string& name) {
  for (const auto& tool : kTools) {
    if (tool["function"]["name"] == name) return json::parse(tool["function"]["parameters"].dump());
  }
  ADD_FAILURE() << "no tool " << name;
  return json::object();
}

// The calls of a whole response, after checking what every such response must say:
// finish_reason "tool_calls" for calls the model chose (auto, required), "stop" for a
// named function's forced call, as OpenAI and vLLM report them.
json checked_calls(const json& body, const char* finish = "tool_calls") {
  const json& choice = body["choices"][0];
  EXPECT_EQ(choice["finish_reason"], finish) << body.dump();
  const json& message = choice["message"];
  EXPECT_TRUE(message["content"].is_null()) << body.dump();
  EXPECT_TRUE(message["tool_calls"].is_array()) << body.dump();
  std::set<std::string> ids;
  for (const json& call : message["tool_calls"]) {
    EXPECT_EQ(call["type"], "function");
    EXPECT_EQ(call["id"].get<std::string>().rfind("call_", 0), 0u) << call.dump();
    EXPECT_TRUE(ids.insert(call["id"].get<std::string>()).second) << "ids are unique";
    const std::string name = call["function"]["name"];
    const json arguments = json::parse(call["function"]["arguments"].get<std::string>());
    EXPECT_EQ(grammar::testing::validate(arguments, schema_of(name)), std::nullopt)
        << arguments.dump();
  }
  return message["tool_calls"];
}

TEST(ToolCallsHttp, RequiredGivesValidCallsInTheHermesFormat) {
  const uint16_t port = hermes_server().port();
  const auto counted = [&] {
    const std::string metrics = fetch(port, "GET", "/metrics").body;
    return metric_value(metrics, R"(tandem_generations_finished_total{reason="tool_calls"})")
        .value_or(0);
  };
  const double before = counted();
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    SCOPED_TRACE(seed);
    const json calls =
        checked_calls(post_json(port, "/v1/chat/completions", tool_request("required", seed)));
    EXPECT_GE(calls.size(), 1u);
  }
  EXPECT_EQ(counted() - before, 6) << "the metrics count each call-ending answer as tool_calls";
}

// Qwen3-Coder's XML calls (the comment's markers make the server read them): a grammar
// cannot frame their text values, so a required call is written and read as the plain JSON
// array (framed_call_format), as vLLM forces it; read as XML, no call would come back.
ServerProcess& qwen_xml_server() {
  static ScratchDir dir;
  static const std::filesystem::path path = [] {
    const auto file = dir.file("qwen3-coder.jinja");
    std::string source = kHermesTemplate;
    source.replace(source.find("<tool_call>{"), std::string("<tool_call>{").size(),
                   "<tool_call>\n<function=NAME>\n<parameter=P>\nV\n</parameter>{");
    std::ofstream(file) << source;
    return file;
  }();
  static ServerProcess server(tiny_model(), {"--chat-template", path.string()});
  return server;
}

TEST(ToolCallsHttp, RequiredCallsOfAnXmlFormatAreTheJsonArray) {
  const uint16_t port = qwen_xml_server().port();
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    SCOPED_TRACE(seed);
    const json body = post_json(port, "/v1/chat/completions", tool_request("required", seed));
    EXPECT_GE(checked_calls(body).size(), 1u) << body.dump();
  }
}

// Tools under "auto" beside a response format (what the Agents SDK sends for an agent with
// tools and an output type): each answer is a call of the tools, or the shaped answer, the
// two outcomes "auto" allows; before, the format's grammar left no call possible.
TEST(ToolCallsHttp, AutoBesideAFormatGivesACallOrTheShapedAnswer) {
  const uint16_t port = hermes_server().port();
  const json answer_schema = json::parse(
      R"({"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"],
          "additionalProperties": false})");
  int calls = 0, answers = 0;
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    SCOPED_TRACE(seed);
    ordered_json request = tool_request("auto", seed);
    request["parallel_tool_calls"] = false;
    request["response_format"] = {
        {"type", "json_schema"},
        {"json_schema", {{"name", "a"}, {"schema", ordered_json::parse(answer_schema.dump())}}}};
    const json body = post_json(port, "/v1/chat/completions", request);
    const json& message = body["choices"][0]["message"];
    if (message.contains("tool_calls") && !message["tool_calls"].is_null()) {
      EXPECT_EQ(checked_calls(body).size(), 1u);
      ++calls;
    } else {
      EXPECT_EQ(body["choices"][0]["finish_reason"], "stop") << body.dump();
      const json shaped = json::parse(message["content"].get<std::string>());
      EXPECT_EQ(grammar::testing::validate(shaped, answer_schema), std::nullopt) << shaped.dump();
      ++answers;
    }
  }
  EXPECT_GT(calls, 0);
  EXPECT_GT(answers, 0);
}

TEST(ToolCallsHttp, ANamedFunctionWithoutParallelCallsGivesExactlyThatOneCall) {
  ordered_json named = {{"type", "function"}, {"function", {{"name", "add"}}}};
  for (uint16_t port : {hermes_server().port(), shared_server().port()}) {  // Hermes; plain JSON
    for (uint64_t seed = 1; seed <= 4; ++seed) {
      ordered_json body = tool_request(named, seed);
      body["parallel_tool_calls"] = false;
      const json calls = checked_calls(post_json(port, "/v1/chat/completions", body), "stop");
      ASSERT_EQ(calls.size(), 1u);
      EXPECT_EQ(calls[0]["function"]["name"], "add");
    }
  }
}

TEST(ToolCallsHttp, StreamedCallsAreTheWholeResponsesCalls) {
  const uint16_t port = hermes_server().port();
  for (uint64_t seed : {3u, 8u}) {
    const json whole =
        checked_calls(post_json(port, "/v1/chat/completions", tool_request("required", seed)));
    ordered_json body = tool_request("required", seed);
    body["stream"] = true;
    // llama-server's timings ride on the calls' chunks as on any other.
    const bool timed = seed == 8;
    body["timings_per_token"] = timed;
    const HttpResult sse = fetch(port, "POST", "/v1/chat/completions", body.dump());
    ASSERT_EQ(sse.status, 200);
    json calls = json::array();
    std::string content, finish;
    for (const std::string& data : sse_data(sse.body)) {
      if (data == "[DONE]") continue;
      const json chunk = json::parse(data);
      if (chunk["choices"].empty()) continue;
      const json& choice = chunk["choices"][0];
      if (choice["finish_reason"].is_string()) finish = choice["finish_reason"];
      const json& delta = choice["delta"];
      if (delta.contains("content")) content += delta["content"].get<std::string>();
      if (!delta.contains("tool_calls")) continue;
      EXPECT_EQ(chunk.contains("timings"), timed) << data;
      for (const json& piece : delta["tool_calls"]) {
        const size_t index = piece["index"];
        if (index == calls.size()) {  // a call's first chunk: id, type, name
          ASSERT_TRUE(piece.contains("id")) << data;
          calls.push_back({{"id", piece["id"]},
                           {"type", piece["type"]},
                           {"function", {{"name", piece["function"]["name"]}, {"arguments", ""}}}});
        }
        ASSERT_LT(index, calls.size()) << data;
        calls[index]["function"]["arguments"] =
            calls[index]["function"]["arguments"].get<std::string>() +
            piece["function"].value("arguments", "");
      }
    }
    EXPECT_EQ(finish, "tool_calls");
    EXPECT_EQ(content, "");
    ASSERT_EQ(calls.size(), whole.size());
    for (size_t i = 0; i < calls.size(); ++i) {
      EXPECT_EQ(calls[i]["function"], whole[i]["function"]) << i;
    }
  }
}

TEST(ToolCallsHttp, ToolsReachTheTemplateAndNoneLeavesTheOutputPlain) {
  const uint16_t port = hermes_server().port();
  ordered_json body = tool_request("none", 2);
  const HttpResult rendered = fetch(port, "POST", "/apply-template", body.dump());
  ASSERT_EQ(rendered.status, 200) << rendered.body;
  const std::string prompt = rendered.json()["prompt"];
  EXPECT_NE(prompt.find("<tools> get_weather add</tools>"), std::string::npos) << prompt;
  body["max_tokens"] = 8;
  const json answer = post_json(port, "/v1/chat/completions", body);
  EXPECT_TRUE(answer["choices"][0]["message"]["content"].is_string()) << answer.dump();
  EXPECT_FALSE(answer["choices"][0]["message"].contains("tool_calls"));
  EXPECT_NE(answer["choices"][0]["finish_reason"], "tool_calls");
}

TEST(ToolCallsHttp, BadToolsAreRefusedByName) {
  const uint16_t port = hermes_server().port();
  ordered_json unknown = tool_request({{"type", "function"}, {"function", {{"name", "nope"}}}}, 1);
  HttpResult result = fetch(port, "POST", "/v1/chat/completions", unknown.dump());
  ASSERT_EQ(result.status, 400) << result.body;
  EXPECT_EQ(result.json()["error"]["param"], "tool_choice.function.name");
  // A schema the engine cannot compile, or that no value satisfies, is a 400 naming the
  // tool where a call to it is constrained (required, or that tool named), the same 400
  // each time. Where nothing constrains a call to it ("auto", "none", another tool named)
  // the schema only reaches the template, and the request is served, as vLLM serves it.
  const ordered_json named_add = {{"type", "function"}, {"function", {{"name", "add"}}}};
  const ordered_json named_weather = {{"type", "function"},
                                      {"function", {{"name", "get_weather"}}}};
  for (const auto& [key, value] :
       {std::pair<const char*, ordered_json>{"multipleOf", 3}, {"minimum", 5}}) {
    std::string first_error;
    for (const ordered_json& choice : {ordered_json("required"), named_add, ordered_json("auto"),
                                       ordered_json("none"), named_weather}) {
      SCOPED_TRACE(std::string(key) + " " + choice.dump());
      ordered_json bad_schema = tool_request(choice, 1);
      bad_schema["max_tokens"] = 4;
      ordered_json& a = bad_schema["tools"][1]["function"]["parameters"]["properties"]["a"];
      a[key] = value;
      if (std::string(key) == "minimum") a["maximum"] = 3;  // nothing between
      result = fetch(port, "POST", "/v1/chat/completions", bad_schema.dump());
      const bool constrained = choice == "required" || choice == named_add;
      if (!constrained) {
        EXPECT_EQ(result.status, 200) << result.body;
        continue;
      }
      ASSERT_EQ(result.status, 400) << result.body;
      EXPECT_EQ(result.json()["error"]["param"], "tools[1].function.parameters");
      if (first_error.empty()) first_error = result.body;
      EXPECT_EQ(result.body, first_error);
    }
    if (std::string(key) == "multipleOf") {
      EXPECT_NE(first_error.find("multipleOf"), std::string::npos) << first_error;
    }
  }
  EXPECT_EQ(fetch(port, "GET", "/health").status, 200);
}

// The grammar's spec, without a model: a named function is one call even when parallel
// calls are allowed; a tool without parameters takes an empty object only.
TEST(ToolCallGrammar, ANamedFunctionIsOneCallAndAToolWithoutParametersTakesNone) {
  const ToolRequest tools = request_fields::read_tool_request(request_fields::Json::parse(R"({
    "tools": [{"type": "function", "function": {"name": "ping"}},
              {"type": "function", "function": {"name": "add", "parameters": {"type": "object"}}}],
    "tool_choice": {"type": "function", "function": {"name": "ping"}}})"));
  ASSERT_TRUE(tools.parallel);
  const grammar::FramedJson named = server::tool_call_grammar_spec(tools, ToolCallFormat::kHermes);
  EXPECT_EQ(named.max_items, 1u);
  ASSERT_EQ(named.alternatives.size(), 1u);
  EXPECT_EQ(named.alternatives[0][1].schema.dump(),
            R"({"type":"object","properties":{},"additionalProperties":false})");
  ToolRequest required = tools;
  required.choice.mode = ToolChoice::Mode::kRequired;
  EXPECT_EQ(server::tool_call_grammar_spec(required, ToolCallFormat::kHermes).max_items,
            grammar::GrammarBuilder::kUnbounded);
}

// Where a constrained call's schema lets its arguments be something other than an object
// (an enum of strings, a const, a $ref to a scalar, a scalar branch), the call could come
// back as `"a"` or `5`, which no client reads: a 400 naming the tool's parameters and the
// place. Objects reached through $ref, allOf or enum are served.
TEST(ToolCallsHttp, ConstrainedParametersThatAllowNonObjectsAreRefused) {
  const uint16_t port = hermes_server().port();
  const std::pair<const char*, const char*> refused[] = {
      {R"({"enum": ["a", "b"]})", "#/enum"},
      {R"({"const": 5})", "#/const"},
      {R"({"$ref": "#/$defs/A", "$defs": {"A": {"type": "string"}}})", "#/$defs/A"},
      {R"({"allOf": [{"type": "string"}]})", "#/allOf/0"},
      {R"({"anyOf": [{"type": "integer"}, {"properties": {"x": {"type": "integer"}}}]})",
       "#/anyOf/0"},
      {R"({"$ref": "#/$defs/A", "$defs": {"A": {"properties": {}}}})", "#/$defs/A"},
  };
  for (const auto& [schema, at] : refused) {
    SCOPED_TRACE(schema);
    ordered_json body = tool_request("required", 1);
    body["tools"] = one_tool(schema);
    const HttpResult result = fetch(port, "POST", "/v1/chat/completions", body.dump());
    ASSERT_EQ(result.status, 400) << result.body;
    EXPECT_EQ(result.json()["error"]["param"], "tools[0].function.parameters");
    EXPECT_NE(result.body.find(std::string("allows other values (at ") + at + ")"),
              std::string::npos)
        << result.body;
  }
  // References the check cannot follow are the compiler's to refuse: a 400, never a 500.
  for (const char* schema : {R"({"$ref": "#nope"})", R"({"$ref": "#/$defs/x/7"})"}) {
    ordered_json body = tool_request("required", 1);
    body["tools"] = one_tool(schema);
    EXPECT_EQ(fetch(port, "POST", "/v1/chat/completions", body.dump()).status, 400) << schema;
  }
  const char* const served[] = {
      R"({"$ref": "#/$defs/A", "$defs": {"A": {"type": "object"}}})",
      R"({"allOf": [{"type": "object"}]})",
      R"({"enum": [{"a": 1}, {"b": 2}]})",
  };
  for (const char* schema : served) {
    SCOPED_TRACE(schema);
    ordered_json body = tool_request("required", 2);
    body["parallel_tool_calls"] = false;
    body["tools"] = one_tool(schema);
    const json answer = post_json(port, "/v1/chat/completions", body);
    const json& calls = answer["choices"][0]["message"]["tool_calls"];
    ASSERT_TRUE(calls.is_array() && calls.size() == 1) << answer.dump();
    EXPECT_TRUE(json::parse(calls[0]["function"]["arguments"].get<std::string>()).is_object());
  }
}

// The grammar's schema of parameters that name no type says "object" at the root and in
// each branch; a $ref, enum or const keeps what it names; the template's definitions stay
// as the request sent them.
TEST(ToolCallGrammar, ParametersThatNameNoTypeAreAnObjectsSchema) {
  const ToolRequest tools = request_fields::read_tool_request(request_fields::Json::parse(R"({
    "tools": [{"type": "function", "function": {"name": "a", "parameters": {}}},
              {"type": "function", "function": {"name": "b", "parameters":
                {"properties": {"q": {"type": "string"}}}}},
              {"type": "function", "function": {"name": "c", "parameters":
                {"oneOf": [{"required": ["x"]}, {"$ref": "#/$defs/d"}],
                 "$defs": {"d": {"type": "object"}}}}}],
    "tool_choice": "required"})"));
  ASSERT_EQ(tools.functions.size(), 3u);
  EXPECT_EQ(tools.functions[0].parameters.dump(), R"({"type":"object"})");
  EXPECT_EQ(tools.functions[1].parameters.dump(),
            R"({"properties":{"q":{"type":"string"}},"type":"object"})");
  EXPECT_EQ(tools.functions[2].parameters.dump(),
            R"({"oneOf":[{"required":["x"],"type":"object"},{"$ref":"#/$defs/d"}],)"
            R"("$defs":{"d":{"type":"object"}}})");
  EXPECT_EQ(tools.definitions[0]["function"]["parameters"].dump(), "{}");
}

// A tool without "parameters" takes no arguments (OpenAI's reading): its calls' arguments
// are {} only. A named function is called once, parallel_tool_calls or not.
TEST(ToolCallsHttp, AToolWithoutParametersIsCalledWithNoArgumentsAndANamedOneOnce) {
  const uint16_t port = hermes_server().port();
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    SCOPED_TRACE(seed);
    ordered_json body = tool_request("required", seed);
    body["tools"] = ordered_json::parse(R"([{"type": "function", "function": {"name": "ping"}}])");
    const json body_out = post_json(port, "/v1/chat/completions", body);
    const json& calls = body_out["choices"][0]["message"]["tool_calls"];
    ASSERT_TRUE(calls.is_array()) << body_out.dump();
    for (const json& call : calls) EXPECT_EQ(call["function"]["arguments"], "{}") << call.dump();
    ordered_json named =
        tool_request({{"type", "function"}, {"function", {{"name", "add"}}}}, seed);
    const json named_calls = checked_calls(post_json(port, "/v1/chat/completions", named), "stop");
    ASSERT_EQ(named_calls.size(), 1u);
    EXPECT_EQ(named_calls[0]["function"]["name"], "add");
  }
}

// Parameters that name no type ({}, or properties alone, or branches that do not) still
// take an object: constrained, the arguments are a JSON object (OpenAI's arguments always
// are), never `false` or `1e88`, which no client reads as a call. The template still gets
// the schema as sent.
TEST(ToolCallsHttp, ParametersThatNameNoTypeStillTakeAnObject) {
  const uint16_t port = hermes_server().port();
  const char* const schemas[] = {
      R"({})",
      R"({"properties": {"q": {"type": "string", "maxLength": 3}}})",
      R"({"anyOf": [{"properties": {"x": {"type": "integer"}}, "required": ["x"]},
                    {"properties": {"y": {"type": "boolean"}}, "required": ["y"]}]})",
  };
  for (const char* schema : schemas) {
    for (uint64_t seed = 1; seed <= 3; ++seed) {
      SCOPED_TRACE(std::string(schema) + " seed " + std::to_string(seed));
      ordered_json body = tool_request("required", seed);
      body["tools"] = one_tool(schema);
      body["parallel_tool_calls"] = false;
      const json answer = post_json(port, "/v1/chat/completions", body);
      EXPECT_EQ(answer["choices"][0]["finish_reason"], "tool_calls") << answer.dump();
      const json& calls = answer["choices"][0]["message"]["tool_calls"];
      ASSERT_TRUE(calls.is_array() && calls.size() == 1) << answer.dump();
      EXPECT_TRUE(json::parse(calls[0]["function"]["arguments"].get<std::string>()).is_object())
          << calls.dump();
    }
  }
}

}  // namespace
}  // namespace tandem::testing::TANDEM_UNITY_ID
