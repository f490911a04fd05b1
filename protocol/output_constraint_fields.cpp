#include "protocol/output_constraint_fields.h"

namespace tandem::request_fields {
namespace {

// A schema is an object or a boolean (JSON Schema allows both; true is any value).
std::string schema_text(const Json& schema, const std::string& param) {
  if (!schema.is_object() && !schema.is_boolean()) {
    reject("Invalid type for '" + param + "': expected an object, but got " +
               describe_type(schema) + ".",
           param);
  }
  return schema.dump();
}

OutputConstraint read_json_schema_format(const Json& format) {
  const Json* spec = find_field(format, "json_schema");
  if (spec == nullptr) {
    reject("'response_format.json_schema' is required when the type is 'json_schema'.",
           "response_format.json_schema");
  }
  require_object(*spec, "response_format.json_schema");
  if (const Json* name = find_field(*spec, "name")) {
    if (!valid_openai_name(read_string(*name, "response_format.json_schema.name"))) {
      reject(
          "'response_format.json_schema.name' must be 1 to 64 characters of a-z, A-Z, 0-9, "
          "'_' and '-'.",
          "response_format.json_schema.name");
    }
  }
  // strict false lets OpenAI's models stray from the schema; here the output always fits it.
  if (const Json* strict = find_field(*spec, "strict")) {
    read_bool(*strict, "response_format.json_schema.strict");
  }
  OutputConstraint constraint;
  constraint.kind = OutputConstraint::Kind::kJsonSchema;
  constraint.param = "response_format.json_schema.schema";
  const Json* schema = find_field(*spec, "schema");
  constraint.text = schema == nullptr ? "{}" : schema_text(*schema, constraint.param);
  return constraint;
}

OutputConstraint read_response_format(const Json& format) {
  require_object(format, "response_format");
  const Json* type = find_field(format, "type");
  if (type == nullptr) reject("'response_format.type' is required.", "response_format.type");
  const std::string& name = read_string(*type, "response_format.type");
  OutputConstraint constraint;
  if (name == "text") return constraint;
  if (name == "json_schema") return read_json_schema_format(format);
  if (name != "json_object") {
    reject("'response_format.type' must be 'text', 'json_object' or 'json_schema'; got '" + name +
               "'.",
           "response_format.type");
  }
  constraint.param = "response_format";
  // llama-server's extension: a json_object with a schema is that schema.
  if (const Json* schema = find_field(format, "schema")) {
    constraint.kind = OutputConstraint::Kind::kJsonSchema;
    constraint.param = "response_format.schema";
    constraint.text = schema_text(*schema, constraint.param);
    return constraint;
  }
  constraint.kind = OutputConstraint::Kind::kJsonObject;
  return constraint;
}

}  // namespace

bool valid_openai_name(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

OutputConstraint read_output_constraint(const Json& body) {
  OutputConstraint constraint;
  const char* from = nullptr;
  auto take = [&](OutputConstraint next, const char* field) {
    if (!next.active()) return;
    if (constraint.active()) {
      reject("'" + std::string(field) + "' and '" + from +
                 "' both constrain the output; send one of them.",
             field);
    }
    constraint = std::move(next);
    from = field;
  };
  if (const Json* format = find_field(body, "response_format")) {
    take(read_response_format(*format), "response_format");
  }
  if (const Json* schema = find_field(body, "json_schema")) {
    OutputConstraint next{OutputConstraint::Kind::kJsonSchema, schema_text(*schema, "json_schema"),
                          "json_schema"};
    take(std::move(next), "json_schema");
  }
  if (const Json* grammar = find_field(body, "grammar")) {
    const std::string& text = read_string(*grammar, "grammar");
    if (!text.empty()) take({OutputConstraint::Kind::kGbnf, text, "grammar"}, "grammar");
  }
  return constraint;
}

}  // namespace tandem::request_fields
