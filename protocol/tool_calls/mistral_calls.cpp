// Mistral: [TOOL_CALLS] then a JSON array of calls (v3 to v7 tokenizers), or, from the
// templates that write [ARGS], "[TOOL_CALLS]name[ARGS]{...}" per call. The text before the
// first [TOOL_CALLS] is content. [TOOL_CALLS] is a control token, whose text is dropped
// when special tokens are skipped: an output that is only a JSON array of calls is read too.
#include "protocol/tool_calls/call_readers.h"

namespace tandem::tool_calls {
namespace {

constexpr std::string_view kMarker = "[TOOL_CALLS]";
constexpr std::string_view kArgs = "[ARGS]";

// "name[ARGS]{...}" (or "name{...}"): one call, and where it ends.
std::optional<std::pair<ParsedToolCall, size_t>> named_call(std::string_view text) {
  const size_t brace = text.find('{');
  if (brace == std::string_view::npos) return std::nullopt;
  std::string_view name = text.substr(0, brace);
  if (name.size() >= kArgs.size() && name.substr(name.size() - kArgs.size()) == kArgs)
    name.remove_suffix(kArgs.size());
  name = trim(name);
  if (name.empty() || name.find_first_of("[]{}\"") != std::string_view::npos) return std::nullopt;
  const auto end = json_end(text, brace);
  if (!end) return std::nullopt;
  const std::string_view raw = text.substr(brace, *end - brace);
  const auto arguments = parse_json(raw);
  if (!arguments || !arguments->is_object()) return std::nullopt;
  return std::make_pair(ParsedToolCall{std::string(name), minify_json(raw)}, *end);
}

// Everything after the first marker: calls only, or nullopt.
std::optional<std::vector<ParsedToolCall>> calls_after(std::string_view rest) {
  std::vector<ParsedToolCall> calls;
  rest = trim(rest);
  while (!rest.empty()) {
    if (rest.substr(0, kMarker.size()) == kMarker) rest = trim(rest.substr(kMarker.size()));
    if (rest.empty()) break;
    if (rest.front() == '[') {
      const auto end = json_end(rest, 0);
      const std::string_view raw = end ? rest.substr(0, *end) : std::string_view();
      const auto value = end ? parse_json(raw) : std::nullopt;
      auto some = value && value->is_array() ? calls_of(*value, raw) : std::nullopt;
      if (!some) return std::nullopt;
      calls.insert(calls.end(), some->begin(), some->end());
      rest = trim(rest.substr(*end));
      continue;
    }
    auto call = named_call(rest);
    if (!call) return std::nullopt;
    calls.push_back(std::move(call->first));
    rest = trim(rest.substr(call->second));
  }
  if (calls.empty()) return std::nullopt;
  return calls;
}

}  // namespace

ParsedToolCalls read_mistral(std::string_view text) {
  const size_t marker = text.find(kMarker);
  if (marker == std::string_view::npos) {
    const std::string_view whole = trim(text);
    if (whole.empty() || whole.front() != '[') return {std::string(text), {}};
    auto calls = calls_after(whole);
    if (!calls) return {std::string(text), {}};
    return {std::string(), std::move(*calls)};
  }
  auto calls = calls_after(text.substr(marker + kMarker.size()));
  if (!calls) return {std::string(text), {}};
  return {content_or_empty(std::string(text.substr(0, marker))), std::move(*calls)};
}

}  // namespace tandem::tool_calls
