#include "protocol/tool_calls/call_readers.h"

#include <algorithm>

#include "protocol/request_fields.h"

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

// Read as a call's arguments in a request are (request_fields.h): depth bounded, since a
// model's output nested deeper would be walked recursively by the response writer and the
// next turn's template, and integers of any size read (the arguments keep the text the
// model wrote).
std::optional<Json> parse_json(std::string_view text) {
  try {
    return request_fields::parse_json_value(text, /*wide_integers=*/true);
  } catch (const request_fields::RequestRejected&) {
    return std::nullopt;
  }
}

namespace {

// One past the end of the JSON value that starts at text[begin] (valid JSON: a string, an
// object or array, or a literal or number ending at a delimiter).
size_t value_end(std::string_view text, size_t begin) {
  if (text[begin] == '{' || text[begin] == '[') return json_end(text, begin).value_or(text.size());
  if (text[begin] != '"') return std::min(text.find_first_of(",]} \t\r\n", begin), text.size());
  for (size_t i = begin + 1; i < text.size(); ++i) {
    if (text[i] == '\\')
      ++i;
    else if (text[i] == '"')
      return i + 1;
  }
  return text.size();
}

size_t skip_space(std::string_view text, size_t at) {
  while (at < text.size() && is_space(text[at])) ++at;
  return at;
}

// The raw texts of a JSON object's members' keys and values, or an array's elements (key
// empty), in order.
std::vector<std::pair<std::string_view, std::string_view>> raw_items(std::string_view text) {
  std::vector<std::pair<std::string_view, std::string_view>> items;
  size_t at = skip_space(text, 0);
  const bool object = at < text.size() && text[at] == '{';
  at = skip_space(text, at + 1);
  while (at < text.size() && text[at] != '}' && text[at] != ']') {
    std::string_view key;
    if (object) {
      const size_t key_end = value_end(text, at);
      key = text.substr(at, key_end - at);
      at = skip_space(text, skip_space(text, key_end) + 1);  // past the ':'
    }
    const size_t end = value_end(text, at);
    items.emplace_back(key, text.substr(at, end - at));
    at = skip_space(text, end);
    if (at < text.size() && text[at] == ',') at = skip_space(text, at + 1);
  }
  return items;
}

// The raw text of the value of `key` in a JSON object's text: the last one, as the parser
// keeps it.
std::string_view raw_member(std::string_view object, const std::string& key) {
  std::string_view value;
  for (const auto& [raw_key, raw_value] : raw_items(object)) {
    const auto name = parse_json(raw_key);
    if (name && name->is_string() && name->get_ref<const std::string&>() == key) value = raw_value;
  }
  return value;
}

}  // namespace

std::string minify_json(std::string_view json) {
  std::string out;
  out.reserve(json.size());
  bool in_string = false;
  for (size_t i = 0; i < json.size(); ++i) {
    const char c = json[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < json.size())
        out += json[++i];
      else if (c == '"')
        in_string = false;
    } else if (!is_space(c)) {
      out += c;
      in_string = c == '"';
    }
  }
  return out;
}

std::optional<ParsedToolCall> call_of(const Json& object, std::string_view raw) {
  if (!object.is_object()) return std::nullopt;
  const auto name = object.find("name");
  if (name == object.end() || !name->is_string() || name->get_ref<const std::string&>().empty())
    return std::nullopt;
  std::string key = "arguments";
  auto arguments = object.find(key);
  if (arguments == object.end()) arguments = object.find(key = "parameters");
  ParsedToolCall call{name->get<std::string>(), "{}"};
  if (arguments == object.end()) return call;
  if (arguments->is_object()) {
    call.arguments = minify_json(raw_member(raw, key));
  } else if (arguments->is_string()) {
    // Some models write the arguments as a JSON string, as OpenAI's API carries them.
    const std::string& text = arguments->get_ref<const std::string&>();
    const auto parsed = parse_json(text);
    if (!parsed || !parsed->is_object()) return std::nullopt;
    call.arguments = minify_json(text);
  } else {
    return std::nullopt;
  }
  return call;
}

std::optional<std::vector<ParsedToolCall>> calls_of(const Json& value, std::string_view raw) {
  std::vector<ParsedToolCall> calls;
  if (value.is_object()) {
    auto call = call_of(value, raw);
    if (!call) return std::nullopt;
    calls.push_back(std::move(*call));
    return calls;
  }
  if (!value.is_array() || value.empty()) return std::nullopt;
  const auto items = raw_items(raw);
  if (items.size() != value.size()) return std::nullopt;
  for (size_t i = 0; i < items.size(); ++i) {
    auto call = call_of(value[i], items[i].second);
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
