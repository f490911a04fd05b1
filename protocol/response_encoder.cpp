#include "protocol/response_encoder.h"

#include <utility>

#include "protocol/sse.h"

namespace tandem {

ResponseEncoder::ResponseEncoder(Endpoint endpoint, ResponseHeader header, bool include_usage,
                                 std::vector<ChoiceId> choices)
    : endpoint_(endpoint),
      header_(std::move(header)),
      include_usage_(include_usage),
      choices_(std::move(choices)) {
  if (choices_.empty()) choices_.push_back(ChoiceId{0, header_.seed});
}

std::string ResponseEncoder::chunk(int32_t choice, std::string_view text,
                                   std::optional<FinishReason> finish,
                                   const LogprobsPiece* logprobs, ChunkExtras extras) const {
  const ChoiceId& id = choices_.at(choice);
  return endpoint_ == Endpoint::kChatCompletions
             ? chat_chunk_json(header_, text, finish, logprobs, id, extras)
             : completion_chunk_json(header_, text, finish, logprobs, id, extras);
}

std::string ResponseEncoder::opening_events() const {
  if (endpoint_ != Endpoint::kChatCompletions) return {};
  std::string events;
  for (const ChoiceId& id : choices_) events += sse_data(chat_role_chunk_json(header_, id));
  return events;
}

std::string ResponseEncoder::text_event(std::string_view text, const LogprobsPiece* logprobs,
                                        int32_t choice, const LlamaTimings* timings) const {
  return sse_data(chunk(choice, text, std::nullopt, logprobs, ChunkExtras{nullptr, timings}));
}

std::string ResponseEncoder::reasoning_event(std::string_view text, const LogprobsPiece* logprobs,
                                             int32_t choice, const LlamaTimings* timings) const {
  return sse_data(chat_reasoning_chunk_json(header_, text, logprobs, choices_.at(choice), timings));
}

std::string ResponseEncoder::tool_call_events(int32_t choice, std::span<const ToolCallOut> calls,
                                              const LlamaTimings* timings) const {
  std::string events;
  for (size_t i = 0; i < calls.size(); ++i) {
    for (const bool first : {true, false}) {
      events += sse_data(chat_tool_call_chunk_json(
          header_, choices_.at(choice), static_cast<int32_t>(i), calls[i], first, timings));
    }
  }
  return events;
}

std::string ResponseEncoder::finish_event(int32_t choice, FinishReason finish,
                                          ChunkExtras extras) const {
  return sse_data(chunk(choice, "", finish, nullptr, extras));
}

std::string ResponseEncoder::end_events(const Usage& usage) const {
  std::string events;
  if (include_usage_) events += sse_data(usage_chunk_json(header_, endpoint_, usage));
  events += sse_done();
  return events;
}

std::string ResponseEncoder::closing_events(FinishReason finish, const Usage& usage) const {
  return finish_event(0, finish) + end_events(usage);
}

std::string ResponseEncoder::error_events(const ApiError& error) const {
  return sse_data(to_json_body(error)) + sse_done();
}

std::string ResponseEncoder::whole_body(std::string_view text, FinishReason finish,
                                        const Usage& usage, const LogprobsPiece* logprobs) const {
  ChoiceResult one{choices_.front(), text, finish, logprobs};
  return whole_body(std::span(&one, 1), usage);
}

std::string ResponseEncoder::whole_body(std::span<ChoiceResult> choices, const Usage& usage,
                                        const LlamaTimings* timings) const {
  for (size_t i = 0; i < choices.size() && i < choices_.size(); ++i) choices[i].id = choices_[i];
  return endpoint_ == Endpoint::kChatCompletions
             ? chat_completion_response_json(header_, choices, usage, timings)
             : completion_response_json(header_, choices, usage, timings);
}

}  // namespace tandem
