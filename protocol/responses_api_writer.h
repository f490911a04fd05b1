// The /v1/responses answer: the response object whole, or streamed as OpenAI's typed
// events ("event: <type>" and its JSON, numbered by sequence_number): response.created and
// response.in_progress; the assistant message as an output item with one output_text part,
// opened at its first text and filled by output_text.delta events, after the reasoning
// item (a reasoning_text part filled by reasoning_text.delta events) where the model's
// reasoning is split off; each tool call as a
// function_call item (added, arguments delta and done, done); then response.completed, or
// response.incomplete when the output limit cut it ({"reason": "max_output_tokens"}). No
// [DONE] follows, as OpenAI sends none on this endpoint.
//
// Stateful (the sequence numbers, and the text so far for the closing events), so one
// writer serves one response; not thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "protocol/api_error.h"
#include "protocol/logprobs.h"
#include "protocol/outcomes.h"
#include "protocol/responses.h"
#include "protocol/single_output_writer.h"

namespace tandem {

class ResponsesWriter final : public SingleOutputWriter {
 public:
  // echo: ResponsesRequest::echo, the request's settings the object repeats.
  ResponsesWriter(ResponseHeader header, nlohmann::ordered_json echo);

  // Streamed: the first events.
  std::string opening_events() override;
  // Streamed: a piece of the message's text and its tokens' log-probabilities (null when
  // not asked for). The message item and its part are opened first if they are not yet.
  std::string text_events(std::string_view text, const LogprobsPiece* logprobs) override;
  // Streamed: a piece of the reasoning, before any text (its item is opened first).
  std::string reasoning_events(std::string_view text) override;
  // Streamed: the end of the reasoning and of the message (opened now, empty, when neither
  // text nor reasoning came and no call was made), each call as a function_call item, and
  // the closing event. The Responses API names no stop string.
  std::string closing_events(std::span<const ToolCallOut> calls, FinishReason finish,
                             const Usage& usage, std::string_view stop = {}) override;
  // Streamed: a failure after the stream began: an error event, then response.failed.
  std::string error_events(const ApiError& error) override;
  // Not streamed: the response object. Its output: the reasoning item when there is
  // reasoning; the message when it has text or logprobs, or nothing else is there; the calls.
  std::string whole_body(std::string_view text, std::span<const ToolCallOut> calls,
                         FinishReason finish, const Usage& usage, const LogprobsPiece* logprobs,
                         std::string_view reasoning = {}, std::string_view stop = {}) override;

 private:
  using Json = nlohmann::ordered_json;
  Json response_object(std::string_view status, Json output, const Json& usage) const;
  std::string event(std::string_view type, Json payload);
  Json message_item(std::string_view status) const;
  Json reasoning_item(std::string_view status) const;
  std::string close_reasoning(std::string_view status);
  std::string begin_item(Json item, Json empty_part);
  std::string end_item(const Json& item, std::string_view text_done, Json text_fields);
  Json call_item(size_t index, const ToolCallOut& call, std::string_view status) const;
  std::string open_message();
  std::string close_message(std::string_view status);
  std::string call_events(size_t index, const ToolCallOut& call);

  ResponseHeader header_;
  Json echo_;
  std::string key_;  // the id after "resp_": the items' ids are made from it
  int64_t sequence_ = 0;
  bool message_open_ = false;
  bool reasoning_open_ = false;
  std::string reasoning_;          // the reasoning's text so far
  std::string text_;               // the message's text so far
  Json logprobs_ = Json::array();  // its tokens' log-probabilities so far
  Json output_ = Json::array();    // the finished items
};

}  // namespace tandem
