// The /v1/messages answer in Anthropic's shape: the message object whole ({id, type
// "message", role, model, content blocks, stop_reason, stop_sequence, usage}), or streamed
// as Anthropic's events ("event: <type>" and its JSON): message_start and a ping; each
// content block opened by content_block_start, filled by content_block_delta (thinking_delta
// for the reasoning where it is split off, text_delta for the answer, input_json_delta for
// a tool_use block's input) and closed by content_block_stop; then message_delta (the
// stop_reason and the usage) and message_stop.
//
// stop_reason: "end_turn" (EOS), "stop_sequence" (with the string that matched),
// "max_tokens" (the limit, the context), "tool_use" (the answer called tools). usage:
// input_tokens are the prompt's tokens the prefix cache did not hold, cache_read_input_tokens
// those it did (Anthropic's split; their sum is the prompt). A stream's message_start says
// the whole prompt as input_tokens, before the cache is known; message_delta corrects both.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "protocol/single_output_writer.h"

namespace tandem {

class MessagesWriter final : public SingleOutputWriter {
 public:
  // prompt_tokens: the prompt's length, for message_start.
  MessagesWriter(ResponseHeader header, int64_t prompt_tokens);

  // message_start waits for the admission, which knows the prompt's cached part: the
  // stream's first events are prompt_cached's (or the first content's, if it comes first).
  std::string opening_events() override { return {}; }
  std::string prompt_cached(int64_t tokens) override;
  // Logprobs are never asked for here (the request refuses them): the piece is ignored.
  std::string text_events(std::string_view text, const LogprobsPiece* logprobs) override;
  std::string reasoning_events(std::string_view text) override;
  std::string closing_events(std::span<const ToolCallOut> calls, FinishReason finish,
                             const Usage& usage, std::string_view stop = {}) override;
  // An error event: {"type": "error", "error": {type, message}}, as Anthropic sends one.
  std::string error_events(const ApiError& error) override;
  std::string whole_body(std::string_view text, std::span<const ToolCallOut> calls,
                         FinishReason finish, const Usage& usage, const LogprobsPiece* logprobs,
                         std::string_view reasoning = {}, std::string_view stop = {}) override;

 private:
  using Json = nlohmann::ordered_json;
  enum class Open { kNone, kThinking, kText };
  Json message_object(Json content, const Json& stop_reason, const Json& stop_sequence,
                      const Json& usage) const;
  std::string open_block(Open kind);
  // message_start and ping, the first time (else nothing).
  std::string start(int64_t cached_tokens);
  std::string close_block();

  ResponseHeader header_;
  int64_t prompt_tokens_ = 0;
  bool started_ = false;  // streamed: message_start sent
  int32_t blocks_ = 0;    // streamed: the blocks opened so far (the next one's index)
  Open open_ = Open::kNone;
};

// Anthropic's error body: {"type": "error", "error": {"type", "message"}}, its type from the
// status (invalid_request_error, authentication_error, not_found_error, request_too_large,
// rate_limit_error, overloaded_error, api_error, ...). The message names the field at fault
// where the error has one.
std::string anthropic_error_body(const ApiError& error);

}  // namespace tandem
