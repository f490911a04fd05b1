#include "protocol/tool_calls/tool_fields.h"

#include <set>

#include "protocol/output_constraint_fields.h"

namespace tandem::request_fields {
namespace {

const std::string& read_function_name(const Json& function, const std::string& param) {
  const Json* name = find_field(function, "name");
  if (name == nullptr) reject("'" + param + ".name' is required.", param + ".name");
  const std::string& text = read_string(*name, param + ".name");
  if (!valid_openai_name(text)) {
    reject("'" + param + ".name' must be 1 to 64 characters of a-z, A-Z, 0-9, '_' and '-'.",
           param + ".name");
  }
  return text;
}

// `type` must be present and "function", the only kind of tool OpenAI's chat API has.
void require_function_type(const Json& object, const std::string& param) {
  const Json* type = find_field(object, "type");
  if (type == nullptr) reject("'" + param + ".type' is required.", param + ".type");
  const std::string& name = read_string(*type, param + ".type");
  if (name != "function") {
    reject("'" + param + ".type' must be 'function'; got '" + name + "'.", param + ".type");
  }
}

// A schema for what must be an object, made to say so where it says nothing of the type:
// `{}` or `{"properties": ...}` alone (common in MCP and hand-written tools) would let a
// constrained call's arguments be any JSON value (`false`, `1e88`), which no client reads
// as arguments. The type is added at the root and in each branch of an anyOf, oneOf or
// allOf there; a $ref, enum or const is left as written (the engine does not intersect
// schemas, and those name their values themselves).
Json as_object_schema(Json schema) {
  if (!schema.is_object() || schema.contains("type") || schema.contains("$ref") ||
      schema.contains("enum") || schema.contains("const")) {
    return schema;
  }
  bool branches = false;
  for (const char* keyword : {"anyOf", "oneOf", "allOf"}) {
    if (!schema.contains(keyword) || !schema[keyword].is_array()) continue;
    branches = true;
    for (Json& branch : schema[keyword]) branch = as_object_schema(std::move(branch));
  }
  if (!branches) schema["type"] = "object";
  return schema;
}

// The arguments are a JSON object: a schema whose "type" names another is refused, as
// OpenAI does, and one that names none is read as an object's (as_object_schema). Whether
// the schema compiles is the server's check (server/tool_grammar.h).
Json read_parameters(const Json& parameters, const std::string& param) {
  require_object(parameters, param);
  if (const Json* type = find_field(parameters, "type"); type != nullptr && *type != "object") {
    reject("Invalid '" + param + "': the arguments' schema must have type 'object'; got " +
               type->dump() + ".",
           param);
  }
  return as_object_schema(parameters);
}

ToolFunction read_tool(const Json& tool, const std::string& param) {
  require_object(tool, param);
  require_function_type(tool, param);
  const std::string function_param = param + ".function";
  const Json* function = find_field(tool, "function");
  if (function == nullptr) reject("'" + function_param + "' is required.", function_param);
  require_object(*function, function_param);
  ToolFunction out;
  out.name = read_function_name(*function, function_param);
  if (const Json* description = find_field(*function, "description")) {
    read_string(*description, function_param + ".description");
  }
  // strict false lets OpenAI's models stray from the schema; a constrained call never does.
  if (const Json* strict = find_field(*function, "strict")) {
    read_bool(*strict, function_param + ".strict");
  }
  // No parameters: a function of no arguments (as OpenAI reads it), whose only call is {}.
  out.parameters =
      Json{{"type", "object"}, {"properties", Json::object()}, {"additionalProperties", false}};
  if (const Json* parameters = find_field(*function, "parameters")) {
    out.parameters = read_parameters(*parameters, function_param + ".parameters");
  }
  return out;
}

ToolChoice read_tool_choice(const Json& value) {
  ToolChoice choice;
  if (value.is_string()) {
    const std::string& mode = value.get_ref<const std::string&>();
    if (mode == "none")
      choice.mode = ToolChoice::Mode::kNone;
    else if (mode == "auto")
      choice.mode = ToolChoice::Mode::kAuto;
    else if (mode == "required")
      choice.mode = ToolChoice::Mode::kRequired;
    else {
      reject("'tool_choice' must be 'none', 'auto', 'required' or a named function; got '" + mode +
                 "'.",
             "tool_choice");
    }
    return choice;
  }
  if (!value.is_object()) {
    reject("Invalid type for 'tool_choice': expected a string or an object, but got " +
               describe_type(value) + ".",
           "tool_choice");
  }
  require_function_type(value, "tool_choice");
  const Json* function = find_field(value, "function");
  if (function == nullptr) reject("'tool_choice.function' is required.", "tool_choice.function");
  require_object(*function, "tool_choice.function");
  choice.mode = ToolChoice::Mode::kNamed;
  choice.name = read_function_name(*function, "tool_choice.function");
  return choice;
}

}  // namespace

ToolRequest read_tool_request(const Json& body) {
  ToolRequest request;
  if (const Json* tools = find_field(body, "tools")) {
    require_array(*tools, "tools");
    // [] is no tools, as vLLM and llama-server read it (OpenAI refuses it; clients that
    // always send the field, empty or not, work with them and here).
    std::set<std::string> names;
    for (size_t i = 0; i < tools->size(); ++i) {
      const std::string param = element_param("tools", i);
      ToolFunction function = read_tool((*tools)[i], param);
      if (!names.insert(function.name).second) {
        reject("'" + param + ".function.name': the name '" + function.name +
                   "' is used by an earlier tool.",
               param + ".function.name");
      }
      request.functions.push_back(std::move(function));
    }
    if (!tools->empty()) request.definitions = *tools;  // a template tests `tools is none`
  }
  request.choice.mode = request.any() ? ToolChoice::Mode::kAuto : ToolChoice::Mode::kNone;
  if (const Json* choice = find_field(body, "tool_choice")) {
    request.choice = read_tool_choice(*choice);
  }
  if (const Json* parallel = find_field(body, "parallel_tool_calls")) {
    request.parallel = read_bool(*parallel, "parallel_tool_calls");
  }
  const ToolChoice::Mode mode = request.choice.mode;
  if (!request.any() && (mode == ToolChoice::Mode::kRequired || mode == ToolChoice::Mode::kNamed)) {
    reject("'tool_choice' requires 'tools': there is no tool to call.", "tool_choice");
  }
  if (mode == ToolChoice::Mode::kNamed && request.callable().empty()) {
    reject(
        "'tool_choice.function.name': no tool in 'tools' is named '" + request.choice.name + "'.",
        "tool_choice.function.name");
  }
  return request;
}

}  // namespace tandem::request_fields
