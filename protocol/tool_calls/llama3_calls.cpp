// Llama 3.1+: the whole output is the call, a JSON object {"name", "parameters"} (or
// "arguments"), optionally after <|python_tag|>; several are separated by ";", as vLLM's
// llama3_json parser reads them. Anything else is content. A call that does not parse after
// complete ones (the last, cut by max_tokens) stays in the content from its start, and the
// calls before it are read, as the Hermes and Mistral readers do (vLLM drops them all).
#include "protocol/tool_calls/call_readers.h"

namespace tandem::tool_calls {

ParsedToolCalls read_llama3(std::string_view text) {
  static constexpr std::string_view kPythonTag = "<|python_tag|>";
  std::string_view rest = trim(text);
  if (rest.substr(0, kPythonTag.size()) == kPythonTag) rest = trim(rest.substr(kPythonTag.size()));
  ParsedToolCalls out;
  while (!rest.empty()) {
    const auto end = rest.front() == '{' ? json_end(rest, 0) : std::nullopt;
    const std::string_view raw = end ? rest.substr(0, *end) : std::string_view();
    const auto value = end ? parse_json(raw) : std::nullopt;
    auto call = value ? call_of(*value, raw) : std::nullopt;
    if (!call) break;
    out.calls.push_back(std::move(*call));
    rest = trim(rest.substr(*end));
    if (!rest.empty() && rest.front() == ';') rest = trim(rest.substr(1));
  }
  if (out.calls.empty()) return {std::string(text), {}};
  out.content = content_or_empty(std::string(rest));
  return out;
}

}  // namespace tandem::tool_calls
