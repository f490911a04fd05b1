// Hermes, Qwen2.5 and Qwen3: "<tool_call>\n{json}\n</tool_call>" blocks anywhere in the
// output, as vLLM's hermes parser reads them. The closing tag may be missing at the very end
// (the model stopped right after the JSON).
#include "protocol/tool_calls/call_readers.h"

namespace tandem::tool_calls {

ParsedToolCalls read_blocks(std::string_view text, std::string_view open_tag,
                            std::string_view close_tag, const BlockReader& block) {
  ParsedToolCalls out;
  size_t at = 0;
  while (at < text.size()) {
    const size_t open = text.find(open_tag, at);
    if (open == std::string_view::npos) break;
    const size_t body = open + open_tag.size();
    const size_t close = text.find(close_tag, body);
    const size_t body_end = close == std::string_view::npos ? text.size() : close;
    const size_t next = close == std::string_view::npos ? text.size() : close + close_tag.size();
    auto call = block(text.substr(body, body_end - body));
    // A block that is not a call stays in the content, tags and all; the space between
    // calls is not content.
    const std::string_view gap = text.substr(at, open - at);
    if (out.calls.empty() || !trim(gap).empty()) out.content += gap;
    if (call) {
      out.calls.push_back(std::move(*call));
    } else {
      out.content += text.substr(open, next - open);
    }
    at = next;
  }
  if (at < text.size() && (out.calls.empty() || !trim(text.substr(at)).empty()))
    out.content += text.substr(at);
  if (!out.calls.empty()) out.content = content_or_empty(std::move(out.content));
  return out;
}

ParsedToolCalls read_hermes(std::string_view text) {
  return read_blocks(text, "<tool_call>", "</tool_call>", [](std::string_view raw) {
    const auto value = parse_json(raw);
    return value ? call_of(*value, raw) : std::nullopt;
  });
}

}  // namespace tandem::tool_calls
