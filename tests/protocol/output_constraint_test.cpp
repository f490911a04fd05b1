// The output constraint a request asks for: response_format (json_object, json_schema),
// llama-server's json_schema and grammar, on both endpoints, with the schema's key order
// kept (the generated object follows it). Refusals are in the bad-request catalogue.
#include "protocol/output_constraint.h"

#include <gtest/gtest.h>

#include <string>
#include <variant>

#include "protocol/completion_request.h"

namespace tandem::TANDEM_UNITY_ID {
namespace {

using Kind = OutputConstraint::Kind;

OutputConstraint constraint_of(const std::string& body, Endpoint endpoint) {
  auto parsed = parse_completion_request(body, endpoint);
  if (auto* error = std::get_if<ApiError>(&parsed)) {
    ADD_FAILURE() << "rejected " << body << ": " << error->message << " (" << error->param << ")";
    return {};
  }
  return std::get<CompletionRequest>(parsed).constraint;
}

constexpr const char* kChat = R"({"messages": [{"role": "user", "content": "hi"}], )";
constexpr const char* kCompletion = R"({"prompt": "hi", )";

TEST(OutputConstraint, ResponseFormatIsReadOnBothEndpoints) {
  for (auto [prefix, endpoint] : {std::pair{kChat, Endpoint::kChatCompletions},
                                  std::pair{kCompletion, Endpoint::kCompletions}}) {
    const OutputConstraint object = constraint_of(
        std::string(prefix) + R"("response_format": {"type": "json_object"}})", endpoint);
    EXPECT_EQ(object.kind, Kind::kJsonObject);
    const OutputConstraint schema = constraint_of(
        std::string(prefix) +
            R"("response_format": {"type": "json_schema", "json_schema": {"name": "person",
               "strict": true, "schema": {"type": "object", "properties": {"zeta": {"type":
               "string"}, "alpha": {"type": "integer"}}}}}})",
        endpoint);
    EXPECT_EQ(schema.kind, Kind::kJsonSchema);
    EXPECT_EQ(schema.param, "response_format.json_schema.schema");
    // The request's order, not sorted: zeta before alpha.
    EXPECT_EQ(
        schema.text,
        R"({"type":"object","properties":{"zeta":{"type":"string"},"alpha":{"type":"integer"}}})");
    const OutputConstraint text =
        constraint_of(std::string(prefix) + R"("response_format": {"type": "text"}})", endpoint);
    EXPECT_FALSE(text.active());
  }
}

TEST(OutputConstraint, LlamaServerFieldsAreRead) {
  const OutputConstraint schema = constraint_of(
      std::string(kCompletion) + R"("json_schema": {"type": "boolean"}})", Endpoint::kCompletions);
  EXPECT_EQ(schema.kind, Kind::kJsonSchema);
  EXPECT_EQ(schema.text, R"({"type":"boolean"})");
  EXPECT_EQ(schema.param, "json_schema");
  const OutputConstraint gbnf =
      constraint_of(std::string(kChat) + R"("grammar": "root ::= \"yes\" | \"no\""})",
                    Endpoint::kChatCompletions);
  EXPECT_EQ(gbnf.kind, Kind::kGbnf);
  EXPECT_EQ(gbnf.text, R"(root ::= "yes" | "no")");
  // llama-server's json_object with a schema is that schema; without one, no constraint.
  const OutputConstraint with_schema = constraint_of(
      std::string(kCompletion) +
          R"("response_format": {"type": "json_object", "schema": {"type": "array"}}})",
      Endpoint::kCompletions);
  EXPECT_EQ(with_schema.kind, Kind::kJsonSchema);
  EXPECT_EQ(with_schema.text, R"({"type":"array"})");
  EXPECT_FALSE(constraint_of(R"({"prompt": "hi"})", Endpoint::kCompletions).active());
}

ApiError error_of(const std::string& body, Endpoint endpoint) {
  auto parsed = parse_completion_request(body, endpoint);
  if (auto* error = std::get_if<ApiError>(&parsed)) return *error;
  ADD_FAILURE() << "accepted " << body;
  return {};
}

TEST(OutputConstraint, VllmGuidedFieldsAreReadNamingTheFieldSent) {
  const OutputConstraint object =
      constraint_of(std::string(kChat) +
                        R"("guided_json": {"type": "object", "properties": {"b": {}, "a": {}}}})",
                    Endpoint::kChatCompletions);
  EXPECT_EQ(object.kind, Kind::kJsonSchema);
  EXPECT_EQ(object.text, R"({"type":"object","properties":{"b":{},"a":{}}})");
  EXPECT_EQ(object.param, "guided_json");
  // The schema as JSON text, as vLLM also takes it: the same constraint.
  const OutputConstraint text = constraint_of(
      std::string(kCompletion) +
          R"("guided_json": "{\"type\": \"object\", \"properties\": {\"b\": {}, \"a\": {}}}"})",
      Endpoint::kCompletions);
  EXPECT_EQ(text.kind, Kind::kJsonSchema);
  EXPECT_EQ(text.text, object.text);
  EXPECT_EQ(text.param, "guided_json");
  // A boolean schema as text, as the value itself (it was refused as "not an object").
  for (const char* boolean : {"true", "false"}) {
    const OutputConstraint as_text =
        constraint_of(std::string(kCompletion) + R"("guided_json": ")" + boolean + R"("})",
                      Endpoint::kCompletions);
    const OutputConstraint as_value = constraint_of(
        std::string(kCompletion) + R"("guided_json": )" + boolean + "}", Endpoint::kCompletions);
    EXPECT_EQ(as_text.kind, Kind::kJsonSchema);
    EXPECT_EQ(as_text.text, boolean);
    EXPECT_EQ(as_text.text, as_value.text);
  }
  const OutputConstraint gbnf =
      constraint_of(std::string(kChat) + R"("guided_grammar": "root ::= [a-z]+", )" +
                        R"("guided_decoding_backend": "xgrammar"})",
                    Endpoint::kChatCompletions);
  EXPECT_EQ(gbnf.kind, Kind::kGbnf);
  EXPECT_EQ(gbnf.text, "root ::= [a-z]+");
  EXPECT_EQ(gbnf.param, "guided_grammar");
  const OutputConstraint choice = constraint_of(
      std::string(kCompletion) + R"("guided_choice": ["yes", "no"]})", Endpoint::kCompletions);
  EXPECT_EQ(choice.kind, Kind::kGbnf);
  EXPECT_EQ(choice.text, R"(root ::= "yes" | "no")");
  EXPECT_EQ(choice.param, "guided_choice");
}

// vLLM's regexes: the text as sent (the server compiles it), the field it came from.
TEST(OutputConstraint, GuidedRegexAndStructuredOutputsRegexAreRegexConstraints) {
  for (auto [prefix, endpoint] : {std::pair{kChat, Endpoint::kChatCompletions},
                                  std::pair{kCompletion, Endpoint::kCompletions}}) {
    const OutputConstraint guided = constraint_of(
        std::string(prefix) + R"("guided_regex": "[A-Z][a-z]{2,5} \\d{3}"})", endpoint);
    EXPECT_EQ(guided.kind, Kind::kRegex);
    EXPECT_EQ(guided.text, R"([A-Z][a-z]{2,5} \d{3})");
    EXPECT_EQ(guided.param, "guided_regex");
    const OutputConstraint outputs = constraint_of(
        std::string(prefix) + R"("structured_outputs": {"regex": "(yes|no)é"}})", endpoint);
    EXPECT_EQ(outputs.kind, Kind::kRegex);
    EXPECT_EQ(outputs.text, "(yes|no)é");
    EXPECT_EQ(outputs.param, "structured_outputs.regex");
  }
  // Null or empty: no constraint, as for guided_grammar.
  EXPECT_FALSE(
      constraint_of(std::string(kChat) + R"("guided_regex": null})", Endpoint::kChatCompletions)
          .active());
  EXPECT_FALSE(constraint_of(std::string(kChat) + R"("structured_outputs": {"regex": ""}})",
                             Endpoint::kChatCompletions)
                   .active());
}

TEST(OutputConstraint, GuidedChoiceEscapesQuotesBackslashesAndControlCharacters) {
  const OutputConstraint choice = constraint_of(
      std::string(kChat) + R"("guided_choice": ["a\"b", "c\\d", "e\nf\r\tg", "h\u0001", "ünï"]})",
      Endpoint::kChatCompletions);
  EXPECT_EQ(choice.text,
            "root ::= \"a\\\"b\" | \"c\\\\d\" | \"e\\nf\\r\\tg\" | \"h\\x01\" | \"ünï\"");
}

TEST(OutputConstraint, StructuredOutputsMapsEachKind) {
  const auto read = [](const std::string& inner) {
    return constraint_of(std::string(kChat) + R"("structured_outputs": )" + inner + "}",
                         Endpoint::kChatCompletions);
  };
  const OutputConstraint json = read(R"({"json": {"type": "integer"}, "disable_fallback": true})");
  EXPECT_EQ(json.kind, Kind::kJsonSchema);
  EXPECT_EQ(json.text, R"({"type":"integer"})");
  EXPECT_EQ(json.param, "structured_outputs.json");
  const OutputConstraint choice = read(R"({"choice": ["x", "y"]})");
  EXPECT_EQ(choice.kind, Kind::kGbnf);
  EXPECT_EQ(choice.text, R"(root ::= "x" | "y")");
  EXPECT_EQ(choice.param, "structured_outputs.choice");
  const OutputConstraint grammar = read(R"({"grammar": "root ::= \"z\""})");
  EXPECT_EQ(grammar.kind, Kind::kGbnf);
  EXPECT_EQ(grammar.param, "structured_outputs.grammar");
  const OutputConstraint object = read(R"({"json_object": true})");
  EXPECT_EQ(object.kind, Kind::kJsonObject);
  EXPECT_EQ(object.param, "structured_outputs.json_object");
  EXPECT_FALSE(read(R"({"json_object": false, "disable_any_whitespace": false})").active());
  EXPECT_FALSE(read("{}").active());
}

TEST(OutputConstraint, RefusalsNameTheField) {
  struct Case {
    const char* extra;
    const char* param;
    const char* message_part;
  };
  const Case cases[] = {
      {R"("guided_regex": 5)", "guided_regex", "a string"},
      {R"("guided_regex": ["a+"])", "guided_regex", "a string"},
      {R"("structured_outputs": {"regex": {"pattern": "a+"}})", "structured_outputs.regex",
       "a string"},
      {R"("guided_regex": "a+", "guided_choice": ["a"])", "guided_regex", "'guided_choice'"},
      {R"("structured_outputs": {"regex": "a+", "json": {}})", "structured_outputs.json",
       "'structured_outputs.regex'"},
      {R"("guided_regex": "a+", "response_format": {"type": "json_object"})", "guided_regex",
       "both constrain"},
      {R"("structured_outputs": {"json": {}, "whitespace_pattern": " "})",
       "structured_outputs.whitespace_pattern", "not supported"},
      {R"("structured_outputs": {"structural_tag": "{}"})", "structured_outputs.structural_tag",
       ""},
      {R"("structured_outputs": {"disable_any_whitespace": true})",
       "structured_outputs.disable_any_whitespace", ""},
      {R"("structured_outputs": "json")", "structured_outputs", "an object"},
      {R"("structured_outputs": {"choice": ["a"], "json": {}})", "structured_outputs.json",
       "both constrain"},
      {R"("guided_json": {"type": "object"}, "response_format": {"type": "json_object"})",
       "guided_json", "both constrain"},
      {R"("guided_choice": ["a"], "guided_grammar": "root ::= \"a\"")", "guided_grammar",
       "'guided_choice'"},
      {R"("grammar": "root ::= \"a\"", "structured_outputs": {"json_object": true})",
       "structured_outputs.json_object", "'grammar'"},
      {R"("guided_choice": [])", "guided_choice", "empty"},
      {R"("guided_choice": "yes")", "guided_choice", "an array"},
      {R"("guided_choice": ["a", 2])", "guided_choice[1]", "a string"},
      {R"("guided_json": "{\"type\": ")", "guided_json", "not a JSON schema"},
      {R"("guided_json": "[1]")", "guided_json", "not a JSON schema"},
      {R"("guided_json": "5")", "guided_json", "a boolean, not a"},
      {R"("guided_json": 5)", "guided_json", "an object"},
      {R"("guided_grammar": 5)", "guided_grammar", "a string"},
      {R"("guided_choice": ["a"], "ignore_eos": true)", "ignore_eos", "'guided_choice'"},
  };
  for (const Case& c : cases) {
    const ApiError error = error_of(std::string(kChat) + c.extra + "}", Endpoint::kChatCompletions);
    EXPECT_EQ(error.status, 400) << c.extra;
    EXPECT_EQ(error.param, c.param) << c.extra << ": " << error.message;
    EXPECT_NE(error.message.find(c.message_part), std::string::npos) << error.message;
  }
}

}  // namespace
}  // namespace tandem::TANDEM_UNITY_ID
