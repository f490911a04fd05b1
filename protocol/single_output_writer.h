// What writes a one-output response in an API's own shape instead of chat's: OpenAI's
// Responses API (responses_api_writer.h) and Anthropic's Messages API
// (messages_api_writer.h). The server reads the output as it reads a chat choice (the
// reasoning split off, tool calls parsed) and hands the writer the pieces; the writer makes
// the stream's events or the whole body. Stateful (what the stream has opened so far), so
// one writer serves one response; not thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "protocol/api_error.h"
#include "protocol/logprobs.h"
#include "protocol/outcomes.h"
#include "protocol/responses.h"

namespace tandem {

class SingleOutputWriter {
 public:
  virtual ~SingleOutputWriter() = default;

  // A piece of the output arrived (streamed or not), made by `tokens` tokens (those since
  // the last piece): a writer that reports timings or counts reads them here.
  virtual void output_seen(int32_t tokens) { (void)tokens; }
  // The ids of tokens accepted since the last call, before the piece (if any) they make or,
  // at the end, before the closing events or the body. Only where the plan asks for them
  // (GenerationPlan::token_ids).
  virtual void tokens_seen(std::span<const int32_t> ids) { (void)ids; }
  // The prompt tokens the prefix cache held (the request's admission, which may come again
  // after a preemption), for a writer that reports them before the end. Streamed: the
  // events that waited for it (Anthropic's message_start), to send now.
  virtual std::string prompt_cached(int64_t tokens) {
    (void)tokens;
    return {};
  }
  // Streamed: the first events.
  virtual std::string opening_events() = 0;
  // Streamed: a piece of the answer's text and its tokens' log-probabilities (null when
  // not asked for).
  virtual std::string text_events(std::string_view text, const LogprobsPiece* logprobs) = 0;
  // Streamed: a piece of the reasoning, which comes before any text.
  virtual std::string reasoning_events(std::string_view text) = 0;
  // Streamed: the end of what is open, the calls, and the closing events. stop: the stop
  // string that ended the output (FinishReason::kStop), or empty.
  virtual std::string closing_events(std::span<const ToolCallOut> calls, FinishReason finish,
                                     const Usage& usage, std::string_view stop = {}) = 0;
  // Streamed: a failure after the stream began.
  virtual std::string error_events(const ApiError& error) = 0;
  // Not streamed: the whole body.
  virtual std::string whole_body(std::string_view text, std::span<const ToolCallOut> calls,
                                 FinishReason finish, const Usage& usage,
                                 const LogprobsPiece* logprobs, std::string_view reasoning = {},
                                 std::string_view stop = {}) = 0;
};

}  // namespace tandem
