// The XML tool-call formats, whose values are text read back by their parameters' schema
// types. Qwen3-Coder: "<tool_call>\n<function=NAME>\n<parameter=P>\nVALUE\n</parameter>\n...
// </function>\n</tool_call>" blocks anywhere in the output, as its chat template writes an
// assistant's calls (a mapping or a list as JSON, anything else as Python's str()) and as
// vLLM's qwen3_coder parser reads them: each value's text is read back by its parameter's
// JSON Schema type, and stays a string where the type is a string's, unknown, or the text
// is not a value of that type. GLM 4.5+ (below) writes strings as they are and everything
// else as JSON, as vLLM's glm4_moe parser reads them.
#include "protocol/tool_calls/call_readers.h"

#include <algorithm>

namespace tandem::tool_calls {
namespace {

constexpr std::string_view kFunction = "<function=";
constexpr std::string_view kFunctionEnd = "</function>";
constexpr std::string_view kParameter = "<parameter=";
constexpr std::string_view kParameterEnd = "</parameter>";

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

// A function name as a request may give one (OpenAI's rule, tool_fields.cpp: 1 to 64 of
// a-z A-Z 0-9 _ -; '.' too, which some templates' examples use): anything else is not a call.
bool is_function_name(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  for (const char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-' || c == '.';
    if (!ok) return false;
  }
  return true;
}

// A JSON string of text the model wrote, which may hold bytes that are not UTF-8 (replaced).
std::string json_string(std::string_view text) {
  return Json(std::string(text)).dump(-1, ' ', false, Json::error_handler_t::replace);
}

// The schema type of `function`'s `parameter`: its "type", or a list's first that is not
// "null"; empty where the request does not say.
std::string type_of(const std::vector<ToolFunction>& functions, std::string_view function,
                    std::string_view parameter) {
  for (const ToolFunction& f : functions) {
    if (f.name != function) continue;
    const auto properties = f.parameters.find("properties");
    if (properties == f.parameters.end() || !properties->is_object()) return {};
    const auto property = properties->find(std::string(parameter));
    if (property == properties->end() || !property->is_object()) return {};
    const auto type = property->find("type");
    if (type == property->end()) return {};
    if (type->is_string()) return type->get<std::string>();
    if (type->is_array()) {
      for (const Json& t : *type)
        if (t.is_string() && t.get<std::string>() != "null") return t.get<std::string>();
    }
    return {};
  }
  return {};
}

// A value's JSON text as its type reads it: null where the text says null (any type);
// integers, numbers, booleans where the text is one (Python's True and False too, as the
// template's str() writes them); objects and arrays where the text is JSON of that kind;
// otherwise the text itself as a string.
// untyped_json: a value of a parameter the tools do not type is read as JSON where it is
// (GLM's template writes every non-string as JSON), else as text.
std::string value_json(std::string_view text, const std::string& type, bool untyped_json = false) {
  const std::string as_string = json_string(text);
  if (type == "string") return as_string;
  if (type.empty()) {
    const auto value = untyped_json ? parse_json(text) : std::nullopt;
    return value ? minify_json(trim(text)) : as_string;
  }
  if (text == "null" || text == "None") return "null";
  const auto value = parse_json(text);
  if (type == "boolean") {
    if (text == "true" || text == "True") return "true";
    if (text == "false" || text == "False") return "false";
    return as_string;
  }
  if (!value) return as_string;
  const bool fits = (type == "integer" && value->is_number_integer()) ||
                    (type == "number" && value->is_number()) ||
                    (type == "object" && value->is_object()) ||
                    (type == "array" && value->is_array());
  return fits ? minify_json(trim(text)) : as_string;
}

// A block's inside: one function and its parameters, nothing else but space; nullopt where
// it is not (a call cut short has no </function>).
std::optional<ParsedToolCall> read_function(std::string_view inside,
                                            const std::vector<ToolFunction>& functions) {
  std::string_view rest = trim(inside);
  if (!starts_with(rest, kFunction)) return std::nullopt;
  const size_t name_end = rest.find('>');
  if (name_end == std::string_view::npos) return std::nullopt;
  ParsedToolCall call;
  call.name = std::string(trim(rest.substr(kFunction.size(), name_end - kFunction.size())));
  if (!is_function_name(call.name)) return std::nullopt;
  rest = trim(rest.substr(name_end + 1));
  std::string arguments = "{";
  while (starts_with(rest, kParameter)) {
    const size_t key_end = rest.find('>');
    if (key_end == std::string_view::npos) return std::nullopt;
    const std::string key(trim(rest.substr(kParameter.size(), key_end - kParameter.size())));
    if (key.empty()) return std::nullopt;
    std::string_view value = rest.substr(key_end + 1);
    // The value ends at its close tag, or where one is missing at the next parameter or the
    // function's end, whichever comes first (as vLLM's parser's pattern ends it).
    const size_t close = value.find(kParameterEnd);
    const size_t end = std::min({close, value.find(kParameter), value.find(kFunctionEnd)});
    if (end == std::string_view::npos) return std::nullopt;
    rest = trim(value.substr(end == close ? end + kParameterEnd.size() : end));
    value = value.substr(0, end);
    // The template writes a newline on each side of the value; only those are not the value.
    if (starts_with(value, "\n")) value.remove_prefix(1);
    if (!value.empty() && value.back() == '\n') value.remove_suffix(1);
    if (arguments.size() > 1) arguments += ',';
    arguments += json_string(key) + ':' + value_json(value, type_of(functions, call.name, key));
  }
  if (!starts_with(rest, kFunctionEnd) || !trim(rest.substr(kFunctionEnd.size())).empty())
    return std::nullopt;
  call.arguments = arguments + '}';
  return call;
}

// GLM 4.5+: "NAME<arg_key>K</arg_key><arg_value>V</arg_value>..." inside the block (space
// between the tags allowed, as GLM 4.5's template puts newlines there); nullopt where it is
// not that, or a tag does not close.
std::optional<ParsedToolCall> read_glm_call(std::string_view inside,
                                            const std::vector<ToolFunction>& functions) {
  static constexpr std::string_view kKey = "<arg_key>", kKeyEnd = "</arg_key>";
  static constexpr std::string_view kValue = "<arg_value>", kValueEnd = "</arg_value>";
  std::string_view rest = trim(inside);
  const size_t name_end = std::min(rest.find(kKey), rest.size());
  ParsedToolCall call;
  call.name = std::string(trim(rest.substr(0, name_end)));
  if (!is_function_name(call.name)) return std::nullopt;
  rest = rest.substr(name_end);
  std::string arguments = "{";
  while (!rest.empty()) {
    if (!starts_with(rest, kKey)) return std::nullopt;
    const size_t key_end = rest.find(kKeyEnd);
    if (key_end == std::string_view::npos) return std::nullopt;
    const std::string key(trim(rest.substr(kKey.size(), key_end - kKey.size())));
    rest = trim(rest.substr(key_end + kKeyEnd.size()));
    if (key.empty() || !starts_with(rest, kValue)) return std::nullopt;
    const size_t value_end = rest.find(kValueEnd);
    if (value_end == std::string_view::npos) return std::nullopt;
    const std::string_view value = rest.substr(kValue.size(), value_end - kValue.size());
    rest = trim(rest.substr(value_end + kValueEnd.size()));
    if (arguments.size() > 1) arguments += ',';
    arguments +=
        json_string(key) + ':' + value_json(value, type_of(functions, call.name, key), true);
  }
  call.arguments = arguments + '}';
  return call;
}

}  // namespace

ParsedToolCalls read_glm_xml(std::string_view text, const std::vector<ToolFunction>& functions) {
  return read_blocks(text, "<tool_call>", "</tool_call>",
                     [&](std::string_view inside) { return read_glm_call(inside, functions); });
}

ParsedToolCalls read_qwen_xml(std::string_view text, const std::vector<ToolFunction>& functions) {
  return read_blocks(text, "<tool_call>", "</tool_call>",
                     [&](std::string_view inside) { return read_function(inside, functions); });
}

}  // namespace tandem::tool_calls
