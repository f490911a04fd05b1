// Tool calls read from a model's output text in its family's format (tool_call_format.h):
// pure functions, text -> {content, calls}. A call that does not parse is never dropped:
// its text stays in the content (and Llama's and the plain JSON format, whose calls are
// the whole output, then give no calls at all).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "protocol/tool_calls/tool_call_format.h"
#include "protocol/tool_calls/tool_request.h"

namespace tandem {

struct ParsedToolCall {
  std::string name;
  std::string arguments;  // a JSON object's compact text, keys in the model's order
};

struct ParsedToolCalls {
  // The text that is not a call: before, between and after the calls, with the space
  // around the calls trimmed. The whole output when there are no calls.
  std::string content;
  std::vector<ParsedToolCall> calls;
};

// `functions` are the request's tools: an XML format (kQwenXml) writes every argument as
// text, and its parameter's schema type says how to read it back.
ParsedToolCalls parse_tool_calls(ToolCallFormat format, std::string_view text,
                                 const std::vector<ToolFunction>& functions = {});

// Whether text may be the start of a call in `format`, so that a stream holds it back
// until the output ends. `text` is all the output so far; `released` how much of it was
// already sent as content. Returns how many bytes from `released` on can be sent as
// content now (a suffix that may begin a call's marker is held).
size_t tool_call_safe_prefix(ToolCallFormat format, std::string_view text, size_t released);

}  // namespace tandem
