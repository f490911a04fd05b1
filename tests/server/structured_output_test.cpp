// Structured output over HTTP against a real `tandem serve` (tiny random-weight model):
// response_format json_object and json_schema on both endpoints, llama-server's json_schema
// and grammar fields, streamed text equal to the whole body, and the 400s that name what
// cannot be compiled or combined.
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/runner/grammar/schema_suite.h"
#include "tests/runner/grammar/schema_validator.h"
#include "tests/server/server_test_support.h"

namespace tandem::testing::TANDEM_UNITY_ID {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

// Raises '"', ']' and '}' and lowers the blanks (the tiny model's vocabulary is the 256
// GPT-2 byte strings in byte order): a random model's flat logits would otherwise run
// strings and whitespace on for hundreds of bytes (see tests/scheduler's structured_output_test).
ordered_json short_document_bias() {
  return {{"9", -4}, {"10", -4}, {"32", -4}, {"34", 3}, {"93", 2}, {"125", 2}};
}

ordered_json completion_with(const char* field, ordered_json value, uint64_t seed) {
  ordered_json body = {{"prompt", "JSON: "},
                       {"max_tokens", 400},
                       {"seed", seed},
                       {"logit_bias", short_document_bias()}};
  body[field] = std::move(value);
  return body;
}

ordered_json schema_format(const std::string& schema_text) {
  return {{"type", "json_schema"},
          {"json_schema",
           {{"name", "answer"}, {"schema", ordered_json::parse(schema_text)}, {"strict", true}}}};
}

// The generated text of a completion or chat answer, after checking it ended with "stop".
std::string answer_text(const HttpResult& result, bool chat) {
  EXPECT_EQ(result.status, 200) << result.body;
  if (result.status != 200) return {};
  const json body = result.json();
  EXPECT_EQ(body["choices"][0]["finish_reason"], "stop") << result.body;
  return chat ? body["choices"][0]["message"]["content"].get<std::string>()
              : body["choices"][0]["text"].get<std::string>();
}

TEST(StructuredOutputHttp, JsonSchemaOnBothEndpointsValidates) {
  const uint16_t port = shared_server().port();
  const auto& suite = grammar::testing::schema_suite();
  for (size_t i = 0; i < 6; ++i) {
    const auto& schema = suite[i * 5 % suite.size()];
    SCOPED_TRACE(schema.name);
    const json expected_schema = json::parse(schema.text);
    ordered_json body = completion_with("response_format", schema_format(schema.text), 11 + i);
    const std::string text =
        answer_text(fetch(port, "POST", "/v1/completions", body.dump()), false);
    EXPECT_EQ(grammar::testing::validate(json::parse(text), expected_schema), std::nullopt) << text;

    body.erase("prompt");
    body["messages"] = {{{"role", "user"}, {"content", "Answer in JSON."}}};
    const std::string chat_text =
        answer_text(fetch(port, "POST", "/v1/chat/completions", body.dump()), true);
    EXPECT_EQ(grammar::testing::validate(json::parse(chat_text), expected_schema), std::nullopt)
        << chat_text;
  }
}

TEST(StructuredOutputHttp, JsonObjectLlamaServerFieldsAndStreamingAgree) {
  const uint16_t port = shared_server().port();
  const std::string object =
      answer_text(fetch(port, "POST", "/v1/completions",
                        completion_with("response_format", {{"type", "json_object"}}, 3).dump()),
                  false);
  EXPECT_TRUE(json::parse(object).is_object()) << object;

  const std::string schema = R"({"type": "array", "items": {"type": "integer"}, "maxItems": 3})";
  const std::string array =
      answer_text(fetch(port, "POST", "/v1/completions",
                        completion_with("json_schema", ordered_json::parse(schema), 4).dump()),
                  false);
  EXPECT_EQ(grammar::testing::validate(json::parse(array), json::parse(schema)), std::nullopt);

  const ordered_json gbnf = completion_with("grammar", R"(root ::= "x" [0-9] [0-9])", 5);
  const std::string digits =
      answer_text(fetch(port, "POST", "/v1/completions", gbnf.dump()), false);
  ASSERT_EQ(digits.size(), 3u) << digits;
  EXPECT_EQ(digits[0], 'x');

  // Law 3 with a grammar: the stream carries the same text.
  ordered_json streamed = completion_with("response_format", {{"type", "json_object"}}, 3);
  streamed["stream"] = true;
  const HttpResult sse = fetch(port, "POST", "/v1/completions", streamed.dump());
  ASSERT_EQ(sse.status, 200);
  std::string text;
  for (const std::string& data : sse_data(sse.body)) {
    if (data == "[DONE]") continue;
    const json chunk = json::parse(data);
    if (!chunk["choices"].empty()) text += chunk["choices"][0]["text"].get<std::string>();
  }
  EXPECT_EQ(text, object);
}

// A 400 whose param is `param` and whose message contains `words`.
void expect_refused(const ordered_json& body, const std::string& param, const std::string& words) {
  const HttpResult result = fetch(shared_server().port(), "POST", "/v1/completions", body.dump());
  ASSERT_EQ(result.status, 400) << result.body;
  const json error = result.json()["error"];
  EXPECT_EQ(error["param"], param) << result.body;
  EXPECT_NE(error["message"].get<std::string>().find(words), std::string::npos) << result.body;
}

TEST(StructuredOutputHttp, WhatCannotBeCompiledOrCombinedIsRefusedByName) {
  expect_refused(completion_with("response_format",
                                 schema_format(R"({"type": "integer", "multipleOf": 3})"), 1),
                 "response_format.json_schema.schema", "multipleOf");
  expect_refused(completion_with("grammar", "root ::= undefined_rule", 1), "grammar",
                 "undefined_rule");
  expect_refused(completion_with("response_format", {{"type", "yaml"}}, 1), "response_format.type",
                 "yaml");
  ordered_json both = completion_with("grammar", R"(root ::= "a")", 1);
  both["json_schema"] = {{"type", "string"}};
  // Read in the order response_format, json_schema, grammar: the second one is named.
  expect_refused(both, "grammar", "json_schema");
  ordered_json no_eos = completion_with("response_format", {{"type", "json_object"}}, 1);
  no_eos["ignore_eos"] = true;
  expect_refused(no_eos, "ignore_eos", "response_format");
  // The server is still serving.
  EXPECT_EQ(fetch(shared_server().port(), "GET", "/health").status, 200);
}

}  // namespace
}  // namespace tandem::testing::TANDEM_UNITY_ID
