#include "protocol/response_encoder.h"

#include <utility>

#include "protocol/sse.h"

namespace tandem {

ResponseEncoder::ResponseEncoder(Endpoint endpoint, ResponseHeader header, bool include_usage)
    : endpoint_(endpoint), header_(std::move(header)), include_usage_(include_usage) {}

std::string ResponseEncoder::chunk(std::string_view text, std::optional<FinishReason> finish,
                                   const LogprobsPiece* logprobs) const {
  return endpoint_ == Endpoint::kChatCompletions
             ? chat_chunk_json(header_, text, finish, logprobs)
             : completion_chunk_json(header_, text, finish, logprobs);
}

std::string ResponseEncoder::opening_events() const {
  if (endpoint_ != Endpoint::kChatCompletions) return {};
  return sse_data(chat_role_chunk_json(header_));
}

std::string ResponseEncoder::text_event(std::string_view text,
                                        const LogprobsPiece* logprobs) const {
  return sse_data(chunk(text, std::nullopt, logprobs));
}

std::string ResponseEncoder::closing_events(FinishReason finish, const Usage& usage) const {
  std::string events = sse_data(chunk("", finish));
  if (include_usage_) events += sse_data(usage_chunk_json(header_, endpoint_, usage));
  events += sse_done();
  return events;
}

std::string ResponseEncoder::error_events(const ApiError& error) const {
  return sse_data(to_json_body(error)) + sse_done();
}

std::string ResponseEncoder::whole_body(std::string_view text, FinishReason finish,
                                        const Usage& usage, const LogprobsPiece* logprobs) const {
  return endpoint_ == Endpoint::kChatCompletions
             ? chat_completion_response_json(header_, text, finish, usage, logprobs)
             : completion_response_json(header_, text, finish, usage, logprobs);
}

}  // namespace tandem
