// The plain format, for families tandem does not recognize: the whole output is a JSON
// array of {"name", "arguments"} objects, or one such object. An array that does not close
// (cut by max_tokens) gives the calls it completed; its first element that does not parse
// stays in the content from its start.
#include "protocol/tool_calls/call_readers.h"

namespace tandem::tool_calls {
namespace {

// The complete calls at the head of an array that does not close, and the text from the
// first element that is not one.
ParsedToolCalls read_cut_array(std::string_view text, std::string_view whole) {
  ParsedToolCalls out;
  std::string_view rest = trim(whole.substr(1));
  while (!rest.empty() && rest.front() == '{') {
    const auto end = json_end(rest, 0);
    if (!end) break;
    const std::string_view raw = rest.substr(0, *end);
    const auto value = parse_json(raw);
    auto call = value ? call_of(*value, raw) : std::nullopt;
    if (!call) break;
    out.calls.push_back(std::move(*call));
    rest = trim(rest.substr(*end));
    if (rest.empty() || rest.front() != ',') break;
    rest = trim(rest.substr(1));
  }
  if (out.calls.empty()) return {std::string(text), {}};
  out.content = content_or_empty(std::string(rest));
  return out;
}

}  // namespace

ParsedToolCalls read_json(std::string_view text) {
  const std::string_view whole = trim(text);
  if (whole.empty() || (whole.front() != '[' && whole.front() != '{'))
    return {std::string(text), {}};
  if (whole.front() == '[' && !json_end(whole, 0)) return read_cut_array(text, whole);
  const auto value = parse_json(whole);
  auto calls = value ? calls_of(*value, whole) : std::nullopt;
  if (!calls) return {std::string(text), {}};
  return {std::string(), std::move(*calls)};
}

}  // namespace tandem::tool_calls
