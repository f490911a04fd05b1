#include "protocol/output_constraint_fields.h"

#include <string>
#include <utility>

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

using Kind = OutputConstraint::Kind;

// The one constraint a request may have; a second is refused naming both fields.
struct ConstraintSlot {
  OutputConstraint constraint;
  std::string from;

  void take(OutputConstraint next, const std::string& field) {
    if (!next.active()) return;
    if (constraint.active()) {
      reject("'" + field + "' and '" + from + "' both constrain the output; send one of them.",
             field);
    }
    constraint = std::move(next);
    from = field;
  }
};

OutputConstraint read_gbnf(const Json& value, const std::string& param) {
  const std::string& text = read_string(value, param);
  if (text.empty()) return {};
  return {Kind::kGbnf, text, param};
}

// vLLM takes the schema as an object or as its JSON text: an object, or a boolean schema
// ("true" accepts any JSON value, as the value true itself does).
OutputConstraint read_guided_json(const Json& value, const std::string& param) {
  if (!value.is_string()) return {Kind::kJsonSchema, schema_text(value, param), param};
  Json schema;
  try {
    schema = parse_json_value(value.get_ref<const std::string&>());
  } catch (const RequestRejected& rejected) {
    reject(
        "Invalid '" + param + "': the string is not a JSON schema (" + rejected.error.message + ")",
        param);
  }
  if (!schema.is_object() && !schema.is_boolean())
    reject("Invalid '" + param +
               "': the string is not a JSON schema (a schema is an object or a "
               "boolean, not " +
               describe_type(schema) + ").",
           param);
  return {Kind::kJsonSchema, schema.dump(), param};
}

// A GBNF string literal holding exactly `text`: quotes, backslashes and control characters
// escaped as gbnf_parser reads them; other bytes (UTF-8 included) stand for themselves.
std::string gbnf_literal(const std::string& text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out = "\"";
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (byte < 0x20 || byte == 0x7F) {
      out += "\\x";
      out += kHex[byte >> 4];
      out += kHex[byte & 0xF];
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// A non-empty array of strings: the output is exactly one of them.
OutputConstraint read_choice(const Json& value, const std::string& param) {
  require_array(value, param);
  if (value.empty()) reject("'" + param + "' must not be empty.", param);
  std::string grammar = "root ::=";
  for (size_t i = 0; i < value.size(); ++i) {
    grammar +=
        (i == 0 ? " " : " | ") + gbnf_literal(read_string(value[i], element_param(param, i)));
  }
  return {Kind::kGbnf, std::move(grammar), param};
}

// vLLM's regex: the whole output fully matches it (the server compiles it and checks its
// syntax). An empty one is no constraint, as an empty grammar is.
OutputConstraint read_regex(const Json& value, const std::string& param) {
  const std::string& text = read_string(value, param);
  if (text.empty()) return {};
  return {Kind::kRegex, text, param};
}

// vLLM's structured_outputs: one of json, choice, grammar, json_object and regex, and
// options; an option that would change the output, or a key vLLM lacks, is refused by name.
void read_structured_outputs(const Json& value, ConstraintSlot& slot) {
  require_object(value, "structured_outputs");
  for (const auto& [key, field] : value.items()) {
    const std::string param = "structured_outputs." + key;
    if (field.is_null()) continue;
    if (key == "json") {
      slot.take(read_guided_json(field, param), param);
    } else if (key == "choice") {
      slot.take(read_choice(field, param), param);
    } else if (key == "grammar") {
      slot.take(read_gbnf(field, param), param);
    } else if (key == "json_object") {
      if (read_bool(field, param)) slot.take({Kind::kJsonObject, "", param}, param);
    } else if (key == "regex") {
      slot.take(read_regex(field, param), param);
    } else if (key == "disable_fallback") {
      read_bool(field, param);  // which engine compiles it, not what it allows
    } else if (key == "disable_any_whitespace" || key == "disable_additional_properties") {
      if (read_bool(field, param)) {
        reject("'" + param + "' set to true is not supported by this server.", param);
      }
    } else {
      reject("'" + param + "' is not supported by this server.", param);
    }
  }
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
  ConstraintSlot slot;
  if (const Json* format = find_field(body, "response_format")) {
    slot.take(read_response_format(*format), "response_format");
  }
  if (const Json* schema = find_field(body, "json_schema")) {
    slot.take({Kind::kJsonSchema, schema_text(*schema, "json_schema"), "json_schema"},
              "json_schema");
  }
  if (const Json* grammar = find_field(body, "grammar")) {
    slot.take(read_gbnf(*grammar, "grammar"), "grammar");
  }
  // vLLM's guided_* fields, and structured_outputs, which replaced them.
  if (const Json* schema = find_field(body, "guided_json")) {
    slot.take(read_guided_json(*schema, "guided_json"), "guided_json");
  }
  if (const Json* choice = find_field(body, "guided_choice")) {
    slot.take(read_choice(*choice, "guided_choice"), "guided_choice");
  }
  if (const Json* grammar = find_field(body, "guided_grammar")) {
    slot.take(read_gbnf(*grammar, "guided_grammar"), "guided_grammar");
  }
  if (const Json* regex = find_field(body, "guided_regex")) {
    slot.take(read_regex(*regex, "guided_regex"), "guided_regex");
  }
  if (const Json* outputs = find_field(body, "structured_outputs")) {
    read_structured_outputs(*outputs, slot);
  }
  return std::move(slot.constraint);
}

}  // namespace tandem::request_fields
