// Llama 3.1+: the whole output is the call, a JSON object {"name", "parameters"} (or
// "arguments"), optionally after <|python_tag|>; several are separated by ";", as vLLM's
// llama3_json parser reads them. Anything else is content.
#include "protocol/tool_calls/call_readers.h"

namespace tandem::tool_calls {

ParsedToolCalls read_llama3(std::string_view text) {
  static constexpr std::string_view kPythonTag = "<|python_tag|>";
  std::string_view rest = trim(text);
  if (rest.substr(0, kPythonTag.size()) == kPythonTag) rest = trim(rest.substr(kPythonTag.size()));
  ParsedToolCalls out;
  while (!rest.empty()) {
    if (rest.front() != '{') return {std::string(text), {}};
    const auto end = json_end(rest, 0);
    if (!end) return {std::string(text), {}};
    const std::string_view raw = rest.substr(0, *end);
    const auto value = parse_json(raw);
    auto call = value ? call_of(*value, raw) : std::nullopt;
    if (!call) return {std::string(text), {}};
    out.calls.push_back(std::move(*call));
    rest = trim(rest.substr(*end));
    if (!rest.empty() && rest.front() == ';') rest = trim(rest.substr(1));
  }
  if (out.calls.empty()) return {std::string(text), {}};
  return out;
}

}  // namespace tandem::tool_calls
