// The inputs of a chat template from an OpenAI-style request: the messages, shaped as
// vLLM hands them to transformers' apply_chat_template, and the request's template
// switches. Shared by /v1/chat/completions and /apply-template.
#pragma once

#include <string>
#include <string_view>
#include <variant>

#include <nlohmann/json.hpp>

#include "protocol/api_error.h"

namespace tandem {

struct ChatInputs {
  // Each message as the template sees it, keys in this order: role ("developer" is read
  // as "system"); content, a string (text parts joined with "\n", as vLLM does; "" when
  // absent or null); then, where the request has them, tool_calls (each call's
  // function.arguments parsed from its JSON string, as vLLM does, so templates can
  // `tojson` or iterate it), reasoning_content, tool_call_id and name.
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  // vLLM's extensions: chat_template_kwargs (extra top-level template variables, e.g.
  // enable_thinking) and documents (for RAG templates). null when absent.
  nlohmann::ordered_json template_kwargs = nullptr;
  nlohmann::ordered_json documents = nullptr;
  // The request's tools as sent (validated), or null: the template's `tools`.
  nlohmann::ordered_json tools = nullptr;
  bool add_generation_prompt = true;
  // vLLM's continue_final_message (transformers' apply_chat_template option): the prompt
  // ends inside the final message, after its content, so that the model continues it (an
  // assistant's prefilled answer). add_generation_prompt is then false.
  bool continue_final_message = false;
  // OpenAI's reasoning_effort ("none", "minimal", "low", "medium", "high", "xhigh"; empty:
  // not sent), passed to the template as vLLM passes it (put_reasoning_effort). The server
  // refuses a level the model's template cannot honour (server::check_reasoning_effort).
  std::string reasoning_effort;
  // The request's chat_template_kwargs named the same level themselves.
  bool effort_in_kwargs = false;
};

// Puts a reasoning_effort level into a template's kwargs as vLLM passes it: the variable
// reasoning_effort, and for "none" enable_thinking false where the kwargs do not set it
// (null sets nothing).
void put_reasoning_effort(nlohmann::ordered_json& kwargs, const std::string& effort);

// llama-server's POST /apply-template: the chat fields of a /v1/chat/completions body
// (messages, add_generation_prompt, chat_template_kwargs, documents) -> the prompt text.
std::variant<ChatInputs, ApiError> parse_apply_template_request(std::string_view body);
std::string apply_template_response_json(std::string_view prompt);

namespace request_fields {

// Reads messages, chat_template_kwargs, documents and add_generation_prompt from a
// request body; throws RequestRejected (request_fields.h) naming the offending field.
// A per-request chat_template is refused by name.
ChatInputs read_chat_inputs(const nlohmann::ordered_json& body);

}  // namespace request_fields
}  // namespace tandem
