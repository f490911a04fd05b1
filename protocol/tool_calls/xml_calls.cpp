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
#include <unordered_map>
#include <utility>

namespace tandem::tool_calls {
namespace {

constexpr std::string_view kFunction = "<function=";
constexpr std::string_view kFunctionEnd = "</function>";
constexpr std::string_view kParameter = "<parameter=";
constexpr std::string_view kParameterEnd = "</parameter>";

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

// Whether text, space around it aside, is `word` in any case (vLLM lowercases these).
bool is_word(std::string_view text, std::string_view word) {
  text = trim(text);
  if (text.size() != word.size()) return false;
  for (size_t i = 0; i < word.size(); ++i) {
    const char c =
        text[i] >= 'A' && text[i] <= 'Z' ? static_cast<char>(text[i] - 'A' + 'a') : text[i];
    if (c != word[i]) return false;
  }
  return true;
}

// A value's JSON text as its type reads it: null where the text says null or None (any
// type but a string's); integers, numbers, booleans where the text is one (any case, as
// vLLM reads them; the template's str() writes True); objects and arrays where the text is
// JSON of that kind; otherwise the text itself as a string.
// untyped_json: a value of a parameter the tools do not type is read as JSON where it is
// (GLM's template writes every non-string as JSON), else as text.
std::string value_json(std::string_view text, const std::string& type, bool untyped_json = false) {
  const std::string as_string = json_string(text);
  if (type == "string") return as_string;
  if (type.empty()) {
    const auto value = untyped_json ? parse_json(text) : std::nullopt;
    return value ? minify_json(trim(text)) : as_string;
  }
  if (is_word(text, "null") || is_word(text, "none")) return "null";
  if (type == "boolean") {
    if (is_word(text, "true")) return "true";
    if (is_word(text, "false")) return "false";
    return as_string;
  }
  const auto value = parse_json(text);
  if (!value) return as_string;
  const bool fits = (type == "integer" && value->is_number_integer()) ||
                    (type == "number" && value->is_number()) ||
                    (type == "object" && value->is_object()) ||
                    (type == "array" && value->is_array());
  return fits ? minify_json(trim(text)) : as_string;
}

// A call's arguments as they are read, a key given twice keeping its first place and its
// last value (as the dict vLLM's parsers build does).
class Arguments {
 public:
  void add(std::string_view key, std::string value_json) {
    std::string name = json_string(key);
    const auto [at, added] = index_.try_emplace(name, entries_.size());
    if (!added) {
      entries_[at->second].second = std::move(value_json);
      return;
    }
    entries_.emplace_back(std::move(name), std::move(value_json));
  }
  std::string json() const {
    std::string out = "{";
    for (const auto& [k, v] : entries_) out += (out.size() > 1 ? "," : "") + k + ':' + v;
    return out + '}';
  }

 private:
  std::vector<std::pair<std::string, std::string>> entries_;
  std::unordered_map<std::string, size_t> index_;  // a key's place in entries_
};

// The next `tag` at or after `from` in text, npos where none: each search starts where the
// last one found its tag, so a block's parameters are read in one pass however many there
// are (searching from every parameter to the block's end made it quadratic, QA).
class NextTag {
 public:
  NextTag(std::string_view text, std::string_view tag) : text_(text), tag_(tag) {}
  size_t at_or_after(size_t from) {
    if (found_ != std::string_view::npos && found_ < from) found_ = text_.find(tag_, from);
    return found_;
  }

 private:
  std::string_view text_, tag_;
  size_t found_ = 0;  // 0 < any `from` past the block's start: searched on first use
};

// A block's inside: one function and its parameters, nothing else but space; nullopt where
// it is not (a call cut short has no </function>). A value ends at its close tag or, where
// that is missing, at the next parameter or </function>, whichever is first (as vLLM's
// parser's pattern ends it).
std::optional<ParsedToolCall> read_function(std::string_view inside,
                                            const std::vector<ToolFunction>& functions) {
  const std::string_view body = trim(inside);
  if (!body.starts_with(kFunction)) return std::nullopt;
  const size_t name_end = body.find('>');
  if (name_end == std::string_view::npos) return std::nullopt;
  ParsedToolCall call;
  call.name = std::string(trim(body.substr(kFunction.size(), name_end - kFunction.size())));
  if (!is_function_name(call.name)) return std::nullopt;
  NextTag closes(body, kParameterEnd), parameters(body, kParameter), ends(body, kFunctionEnd);
  Arguments arguments;
  size_t at = name_end + 1;
  auto skip_space = [&] {
    while (at < body.size() && is_space(body[at])) ++at;
  };
  skip_space();
  while (body.substr(at).starts_with(kParameter)) {
    const size_t key_end = body.find('>', at);
    if (key_end == std::string_view::npos) return std::nullopt;
    const std::string_view key =
        trim(body.substr(at + kParameter.size(), key_end - at - kParameter.size()));
    if (key.empty()) return std::nullopt;
    const size_t begin = key_end + 1;
    const size_t close = closes.at_or_after(begin);
    const size_t end = std::min({close, parameters.at_or_after(begin), ends.at_or_after(begin)});
    if (end == std::string_view::npos) return std::nullopt;
    std::string_view value = body.substr(begin, end - begin);
    // The template writes a newline on each side of the value; only those are not the value.
    if (value.starts_with("\n")) value.remove_prefix(1);
    if (!value.empty() && value.back() == '\n') value.remove_suffix(1);
    arguments.add(key, value_json(value, type_of(functions, call.name, key)));
    at = end == close ? end + kParameterEnd.size() : end;
    skip_space();
  }
  if (!body.substr(at).starts_with(kFunctionEnd) ||
      !trim(body.substr(at + kFunctionEnd.size())).empty())
    return std::nullopt;
  call.arguments = arguments.json();
  return call;
}

// GLM 4.5+: "NAME<arg_key>K</arg_key><arg_value>V</arg_value>..." inside the block (space
// between the tags allowed, as GLM 4.5's template puts newlines there; space around a
// value is not the value, as vLLM strips it); nullopt where it is not that, or a tag does
// not close.
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
  Arguments arguments;
  while (!rest.empty()) {
    if (!rest.starts_with(kKey)) return std::nullopt;
    const size_t key_end = rest.find(kKeyEnd);
    if (key_end == std::string_view::npos) return std::nullopt;
    const std::string_view key = trim(rest.substr(kKey.size(), key_end - kKey.size()));
    rest = trim(rest.substr(key_end + kKeyEnd.size()));
    if (key.empty() || !rest.starts_with(kValue)) return std::nullopt;
    const size_t value_end = rest.find(kValueEnd);
    if (value_end == std::string_view::npos) return std::nullopt;
    const std::string_view value = trim(rest.substr(kValue.size(), value_end - kValue.size()));
    rest = trim(rest.substr(value_end + kValueEnd.size()));
    arguments.add(key, value_json(value, type_of(functions, call.name, key), true));
  }
  call.arguments = arguments.json();
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
