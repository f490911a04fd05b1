// POST /v1/responses, OpenAI's Responses API, read as the chat request it amounts to:
// `input` (a string, or message, function_call and function_call_output items) becomes
// chat messages after `instructions` as a system message; function tools, tool_choice and
// text.format take their chat forms; max_output_tokens is the output limit. The chat
// parser then checks the result as it checks /v1/chat/completions, and its errors are
// renamed to the Responses fields the client sent.
//
// The server stores no responses, so whatever needs a stored one is refused by name
// (previous_response_id, conversation, store: true, background, item_reference), as are
// hosted tools, media inputs and reasoning settings; a field that changes nothing here
// (metadata, service_tier "auto", include "reasoning.encrypted_content") is accepted.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "protocol/api_error.h"
#include "protocol/completion_request.h"

namespace tandem {

// Which Responses field each chat param came from: ("messages[2]", "input[1]"),
// ("tools[0].function", "tools[0]"), ("response_format.json_schema", "text.format"), ...
using ParamRenames = std::vector<std::pair<std::string, std::string>>;

struct ResponsesRequest {
  // endpoint kResponses, n 1; chat.messages, tools, constraint and sampling as chat's.
  CompletionRequest request;
  // The request's settings as the response object repeats them: instructions,
  // max_output_tokens, metadata, parallel_tool_calls, temperature, text, tool_choice,
  // tools, top_logprobs, top_p, truncation, user, and the stored-response fields at their
  // only values here (store false, previous_response_id null, ...).
  nlohmann::ordered_json echo;
  ParamRenames renames;
};

std::variant<ResponsesRequest, ApiError> parse_responses_request(std::string_view body);

// An error about the chat request (the parser's, or a later check's: a tool's schema that
// no grammar can hold), in the names of the fields the client sent (/v1/responses's or
// /v1/messages's): the longest renamed prefix of its param, in param and message.
ApiError renamed_params(ApiError error, const ParamRenames& renames);

}  // namespace tandem
