#include "protocol/tool_calls/call_readers.h"

namespace tandem::tool_calls {

std::optional<size_t> json_end(std::string_view text, size_t begin) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = begin; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;  // the escaped character cannot end the string
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"')
      in_string = true;
    else if (c == '{' || c == '[')
      ++depth;
    else if (c == '}' || c == ']') {
      if (--depth == 0) return i + 1;
      if (depth < 0) return std::nullopt;
    }
  }
  return std::nullopt;
}

std::optional<Json> parse_json(std::string_view text) {
  Json value = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) return std::nullopt;
  return value;
}

std::optional<ParsedToolCall> call_of(const Json& object) {
  if (!object.is_object()) return std::nullopt;
  const auto name = object.find("name");
  if (name == object.end() || !name->is_string() || name->get_ref<const std::string&>().empty())
    return std::nullopt;
  auto arguments = object.find("arguments");
  if (arguments == object.end()) arguments = object.find("parameters");
  ParsedToolCall call{name->get<std::string>(), "{}"};
  if (arguments == object.end()) return call;
  if (arguments->is_object()) {
    call.arguments = arguments->dump();
  } else if (arguments->is_string()) {
    // Some models write the arguments as a JSON string, as OpenAI's API carries them.
    const auto parsed = parse_json(arguments->get_ref<const std::string&>());
    if (!parsed || !parsed->is_object()) return std::nullopt;
    call.arguments = parsed->dump();
  } else {
    return std::nullopt;
  }
  return call;
}

std::optional<std::vector<ParsedToolCall>> calls_of(const Json& value) {
  std::vector<ParsedToolCall> calls;
  if (value.is_object()) {
    auto call = call_of(value);
    if (!call) return std::nullopt;
    calls.push_back(std::move(*call));
    return calls;
  }
  if (!value.is_array() || value.empty()) return std::nullopt;
  for (const Json& item : value) {
    auto call = call_of(item);
    if (!call) return std::nullopt;
    calls.push_back(std::move(*call));
  }
  return calls;
}

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

std::string_view trim(std::string_view text) {
  while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
  return text;
}

std::string content_or_empty(std::string text) {
  return trim(text).empty() ? std::string() : std::move(text);
}

}  // namespace tandem::tool_calls
