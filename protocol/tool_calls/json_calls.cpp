// The plain format, for families tandem does not recognize: the whole output is a JSON
// array of {"name", "arguments"} objects, or one such object.
#include "protocol/tool_calls/call_readers.h"

namespace tandem::tool_calls {

ParsedToolCalls read_json(std::string_view text) {
  const std::string_view whole = trim(text);
  if (whole.empty() || (whole.front() != '[' && whole.front() != '{'))
    return {std::string(text), {}};
  const auto value = parse_json(whole);
  auto calls = value ? calls_of(*value, whole) : std::nullopt;
  if (!calls) return {std::string(text), {}};
  return {std::string(), std::move(*calls)};
}

}  // namespace tandem::tool_calls
