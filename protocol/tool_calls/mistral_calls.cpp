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

// The calls after the first marker, up to the first that does not parse: that one and all
// after it (its marker included) are `rest`, which stays content.
struct CallsRead {
  std::vector<ParsedToolCall> calls;
  std::string_view rest;
};

CallsRead calls_after(std::string_view rest) {
  CallsRead read;
  rest = trim(rest);
  while (!rest.empty()) {
    const std::string_view at = rest;
    if (rest.substr(0, kMarker.size()) == kMarker) rest = trim(rest.substr(kMarker.size()));
    if (rest.empty()) break;
    if (rest.front() == '[') {
      const auto end = json_end(rest, 0);
      const std::string_view raw = end ? rest.substr(0, *end) : std::string_view();
      const auto value = end ? parse_json(raw) : std::nullopt;
      auto some = value && value->is_array() ? calls_of(*value, raw) : std::nullopt;
      if (!some) return CallsRead{std::move(read.calls), at};
      read.calls.insert(read.calls.end(), some->begin(), some->end());
      rest = trim(rest.substr(*end));
      continue;
    }
    auto call = named_call(rest);
    if (!call) return CallsRead{std::move(read.calls), at};
    read.calls.push_back(std::move(call->first));
    rest = trim(rest.substr(call->second));
  }
  return read;
}

}  // namespace

// A broken call after complete ones (cut by the limit) leaves those calls read and its own
// text in the content, as the Hermes reader does; an output without the marker is calls
// only when the whole of it is.
ParsedToolCalls read_mistral(std::string_view text) {
  const size_t marker = text.find(kMarker);
  if (marker == std::string_view::npos) {
    const std::string_view whole = trim(text);
    if (whole.empty() || whole.front() != '[') return {std::string(text), {}};
    CallsRead read = calls_after(whole);
    if (read.calls.empty() || !read.rest.empty()) return {std::string(text), {}};
    return {std::string(), std::move(read.calls)};
  }
  CallsRead read = calls_after(text.substr(marker + kMarker.size()));
  if (read.calls.empty()) return {std::string(text), {}};
  return {content_or_empty(std::string(text.substr(0, marker)) + std::string(read.rest)),
          std::move(read.calls)};
}

}  // namespace tandem::tool_calls
