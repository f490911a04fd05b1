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

}  // namespace
}  // namespace tandem::TANDEM_UNITY_ID
