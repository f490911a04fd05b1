// Reads `tools`, `tool_choice` and `parallel_tool_calls` from a chat request body into a
// ToolRequest (tool_request.h). Internal to protocol/: throws request_fields::RequestRejected
// naming the field, like the other readers.
#pragma once

#include "protocol/request_fields.h"
#include "protocol/tool_calls/tool_request.h"

namespace tandem::request_fields {

// tools: an array of {type: "function", function: {name, description?, parameters?,
// strict?}}, names of 1 to 64 of a-z A-Z 0-9 _ - (OpenAI's rule), unique. tool_choice:
// "none", "auto", "required" or {type: "function", function: {name}} naming one of the
// tools; "required" and a named function need tools. parallel_tool_calls: a boolean.
ToolRequest read_tool_request(const Json& body);

}  // namespace tandem::request_fields
