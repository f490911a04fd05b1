// POST /v1/messages, Anthropic's Messages API (what the anthropic SDKs, Claude Code and
// Claude-based agent frameworks call), read as the chat request it amounts to, as
// llama-server and vLLM serve it:
// - `system` (a string or text blocks) is the first message, a system one;
// - each message's blocks become chat's: text blocks its content; an assistant's tool_use
//   blocks its tool_calls (input as the arguments' JSON text) and thinking blocks its
//   reasoning_content; a user's tool_result blocks tool messages, in their order. Turns of
//   one role in a row are one turn, as Anthropic combines them;
// - a final assistant message is a prefill the answer continues (continue_final_message);
// - tools ({name, description, input_schema}) and tool_choice (auto, any, tool, none;
//   disable_parallel_tool_use) take their chat forms, as do stop_sequences, metadata.user_id
//   and output_format (or output_config.format): a JSON schema the answer must satisfy;
// - thinking {type: "enabled"} turns a thinking template's reasoning on, "disabled" off.
// The chat parser then checks the result as it checks /v1/chat/completions, and its errors
// are renamed to the fields the client sent. What this server cannot do is refused by name:
// images and documents, hosted tools (web search, code execution, ...), MCP servers,
// containers, context management; chat's names for fields this API names otherwise (stop,
// response_format, max_completion_tokens) point at them. cache_control marks are accepted:
// the prefix cache reuses every prompt's prefix without them.
#pragma once

#include <string_view>
#include <variant>

#include "protocol/api_error.h"
#include "protocol/completion_request.h"
#include "protocol/responses_api_request.h"  // ParamRenames, renamed_params

namespace tandem {

struct MessagesRequest {
  // endpoint kMessages, n 1; chat.messages, tools, constraint and sampling as chat's.
  CompletionRequest request;
  ParamRenames renames;
  // thinking {type: "enabled"}: the answer must be able to think (a template that splits
  // reasoning), which the server checks against the model.
  bool thinking = false;
};

// max_tokens is required, as Anthropic requires it.
std::variant<MessagesRequest, ApiError> parse_messages_request(std::string_view body);
// POST /v1/messages/count_tokens: the same body without max_tokens (and without the
// sampling fields, which count nothing; they are still checked when sent).
std::variant<MessagesRequest, ApiError> parse_count_tokens_request(std::string_view body);

}  // namespace tandem
