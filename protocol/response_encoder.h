// The bytes of one generation's response, for its endpoint: the whole JSON body, or the
// SSE events of a stream (opening, one per piece of text, closing, or an error). Built
// once per request on protocol/responses.h and protocol/sse.h, so that whoever writes
// the response never asks which endpoint it answers. Immutable; pure functions.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/api_error.h"
#include "protocol/completion_request.h"
#include "protocol/outcomes.h"
#include "protocol/responses.h"

namespace tandem {

class ResponseEncoder {
 public:
  // include_usage: stream_options.include_usage (a usage chunk before [DONE]). choices:
  // the response's choices in index order; empty: one, index 0 with the header's seed.
  ResponseEncoder(Endpoint endpoint, ResponseHeader header, bool include_usage,
                  std::vector<ChoiceId> choices = {});

  int32_t choice_count() const { return static_cast<int32_t>(choices_.size()); }
  const std::string& id() const { return header_.id; }  // the response's id
  const ResponseHeader& header() const { return header_; }
  // A stream's first events: chat's role chunk for each choice; none for completions.
  std::string opening_events() const;
  // A piece of choice `choice`'s text as a chunk, with the log-probabilities of the tokens
  // that made it when the request asked for them (logprobs non-null; the text may then be
  // empty).
  // timings: llama-server's, when the request sent timings_per_token: true.
  std::string text_event(std::string_view text, const LogprobsPiece* logprobs = nullptr,
                         int32_t choice = 0, const LlamaTimings* timings = nullptr) const;
  // Chat: a piece of choice `choice`'s reasoning (split from its content).
  std::string reasoning_event(std::string_view text, const LogprobsPiece* logprobs = nullptr,
                              int32_t choice = 0, const LlamaTimings* timings = nullptr) const;
  // Chat: choice `choice`'s tool calls as OpenAI streams them (two chunks per call).
  std::string tool_call_events(int32_t choice, std::span<const ToolCallOut> calls,
                               const LlamaTimings* timings = nullptr) const;
  // The chunk that ends one choice, with its finish reason, vLLM's stop_reason and the
  // timings (ChunkExtras).
  std::string finish_event(int32_t choice, FinishReason finish, ChunkExtras extras = {}) const;
  // After every choice's finish: the usage chunk when asked for, and [DONE].
  std::string end_events(const Usage& usage) const;
  // One choice's response: finish_event(0) and end_events.
  std::string closing_events(FinishReason finish, const Usage& usage) const;
  // A stream that fails: the error object as an event, then [DONE].
  std::string error_events(const ApiError& error) const;
  // A response that is not streamed: the whole body.
  std::string whole_body(std::string_view text, FinishReason finish, const Usage& usage,
                         const LogprobsPiece* logprobs = nullptr) const;
  // Every choice's outcome, in index order (their ids are the encoder's).
  std::string whole_body(std::span<ChoiceResult> choices, const Usage& usage,
                         const LlamaTimings* timings = nullptr) const;

 private:
  std::string chunk(int32_t choice, std::string_view text, std::optional<FinishReason> finish,
                    const LogprobsPiece* logprobs = nullptr, ChunkExtras extras = {}) const;

  Endpoint endpoint_;
  ResponseHeader header_;
  bool include_usage_;
  std::vector<ChoiceId> choices_;
};

}  // namespace tandem
