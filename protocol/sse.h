// Server-Sent Events framing for streamed responses: one event per JSON chunk, then the
// [DONE] sentinel that OpenAI clients wait for. Pure string functions.
#pragma once

#include <string>
#include <string_view>

namespace tandem {

// "data: <json>\n\n". The JSON must be on one line (nlohmann's compact dump is): a raw
// newline inside it would end the SSE field early.
std::string sse_data(std::string_view json);

// "event: <type>\ndata: <json>\n\n": a typed event, as the Responses and Messages APIs
// stream them. The same one-line rule holds for the JSON.
std::string sse_event(std::string_view type, std::string_view json);

// "data: [DONE]\n\n", the last event of every stream.
std::string sse_done();

}  // namespace tandem
