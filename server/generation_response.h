// What a session writes for one generation of n choices (n per prompt, a list of prompts),
// assembled from the choices' events as they arrive: a stream's SSE events, interleaved by
// choice index, each choice ending in its own finish chunk and the stream in one usage
// chunk (when asked) and [DONE]; or, when every choice has finished, the whole body. Usage
// counts each prompt once (its first choice's prompt and cached tokens) and every choice's
// completion tokens. Pure: no I/O; the session calls it on its strand.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/logprobs.h"
#include "protocol/outcomes.h"
#include "protocol/reasoning.h"
#include "protocol/response_encoder.h"
#include "protocol/single_output_writer.h"
#include "protocol/tool_calls/tool_call_parser.h"
#include "server/choice_timings.h"

namespace tandem::server {

// Chat with tools (tool_choice other than "none"): each choice's output is read for calls
// in the model family's format. A stream holds back text that may begin a call and, when
// the choice ends, sends the calls as tool_calls deltas.
// parallel_tool_calls false: at most one call per choice, the first read (the text of any
// later call is dropped, neither a call nor content), as OpenAI guarantees.
struct ToolCallReading {
  bool enabled = false;
  ToolCallFormat format = ToolCallFormat::kJson;
  std::string response_key;  // the response id's hex digits: calls' ids (tool_call_id)
  bool parallel = true;
  // A named tool_choice: its forced call ends with finish_reason "stop", as OpenAI and
  // vLLM report it ("tool_calls" is for calls the model chose, auto or required).
  bool named = false;
  // /v1/messages: a call the limit or a stop string cut short (it does not parse) is
  // dropped from the text rather than shown as markup; Anthropic's text blocks never hold
  // calls. Chat keeps it as content, as vLLM's parsers do.
  bool drop_cut_call = false;
  // The request's tools: an XML format's values are read back by their schema types.
  std::vector<ToolFunction> functions;
};

// Chat with the reasoning split off (protocol/reasoning.h): each choice's output is read
// for its family's markers; the reasoning goes out as reasoning_content (a reasoning item on
// /v1/responses) and only the rest is content, and read for tool calls. opened: the prompt
// left the model inside its reasoning.
struct ReasoningReading {
  bool enabled = false;
  ReasoningMarkers markers;
  bool opened = false;
};

// /v1/embeddings: each choice is one input, whose embedding (RequestSink::on_embedding) the
// whole body lists in input order, normalized when asked, as floats or base64.
struct EmbeddingsOut {
  std::string model;
  bool base64 = false;
  bool normalize = true;
};

class GenerationResponse {
 public:
  // echoes: per choice, the prompt's text sent before its output (completions' echo), or
  // empty. per_prompt: n, the choices of each prompt (choice i's prompt is i / n).
  // style: the logprobs name tokens "token_id:N", or are the draw's probabilities
  // (LogprobsPiece::style).
  // writer: /v1/responses or /v1/messages (one choice): it makes every event and the body
  // in the encoder's place (the encoder still gives the id).
  GenerationResponse(ResponseEncoder encoder, bool stream, bool logprobs, int32_t per_prompt,
                     std::vector<std::string> echoes, ToolCallReading tools = {},
                     LogprobsStyle style = {}, std::unique_ptr<SingleOutputWriter> writer = nullptr,
                     ReasoningReading reasoning = {},
                     std::optional<EmbeddingsOut> embeddings = std::nullopt);

  // timings_per_token: every chunk of a choice, the whole body and the last chunks carry
  // llama-server's timings (ChoiceTimings; off by default).
  void time_choices(ChoiceTimings timings) { timings_ = std::move(timings); }
  // The prompt tokens the prefix cache held for `choice` (its admission), for the timings;
  // returns the stream's events that waited for it (SingleOutputWriter::prompt_cached).
  std::string prompt_cached(int32_t choice, int64_t tokens) {
    timings_.cached(choice, tokens);
    return writer_ ? writer_->prompt_cached(tokens) : std::string();
  }

  bool stream() const { return stream_; }
  int32_t choices() const { return static_cast<int32_t>(choices_.size()); }
  std::string opening_events() {
    return writer_ ? writer_->opening_events() : encoder_.opening_events();
  }
  // A stream that fails after it began: its error events.
  std::string error_events(const ApiError& error) {
    return writer_ ? writer_->error_events(error) : encoder_.error_events(error);
  }
  // Streamed: the events to write now; not streamed: the text is kept and nothing returned.
  // tokens: how many generated tokens made it (they count as reasoning tokens when the
  // split places the text, or the marker it completes, in the reasoning).
  // at: when the tokens were accepted (the timings').
  std::string text(int32_t choice, std::string_view text, int32_t tokens = 1,
                   ChoiceTimings::Clock::time_point at = {});
  void logprobs(int32_t choice, std::vector<TokenLogprobs> entries);
  // The ids of tokens accepted since the last call, before the text they make (or the
  // finish): for a writer that lists them.
  void token_ids(int32_t choice, std::span<const int32_t> ids) {
    (void)choice;  // writers serve one choice
    if (writer_) writer_->tokens_seen(ids);
  }
  // /v1/embeddings: choice's pooled embedding (before its finish).
  void embedding(int32_t choice, std::vector<float> embedding) {
    choices_.at(static_cast<size_t>(choice)).embedding = std::move(embedding);
  }
  bool embeds() const { return embeddings_.has_value(); }
  // Streamed: the choice's last events, and the stream's end after the last choice.
  // stop: the stop string or stop token that ended it, where one did (vLLM's stop_reason).
  std::string finish(int32_t choice, FinishReason reason, const Usage& usage,
                     const StopReason& stop = {}, ChoiceTimings::Clock::time_point at = {});
  bool all_finished() const { return finished_ == choices(); }
  int32_t finished() const { return finished_; }  // choices finished
  // The usage summed so far: each prompt's tokens once, every choice's output.
  const Usage& usage() const { return usage_; }
  // The finish reason a finished choice reports: "tool_calls" for a stop whose output
  // holds calls (for the metrics; the response says the same).
  FinishReason reported_reason(int32_t choice, FinishReason reason) const;
  // Not streamed, once all_finished(): the whole body.
  std::string whole_body();
  const ResponseEncoder& encoder() const { return encoder_; }

 private:
  struct Choice {
    std::string text;  // not streamed: the whole text so far (the echoed prompt first)
    std::string echo;  // streamed: the prompt, until the first chunk carries it
    std::vector<TokenLogprobs> pending;  // not yet written (not streamed: all of them)
    TextPosition text_position;          // streamed: where the pending tokens' text begins
    FinishReason reason = FinishReason::kStop;
    StopReason stop;  // the stop string or token that ended it, where one did
    bool finished = false;
    // Streamed with tools: the whole output so far, and how much of it was sent as content.
    std::string output;
    size_t released = 0;
    // With the reasoning split off: where the output is (streamed: what the events say;
    // either way: which tokens are the reasoning's).
    std::optional<ReasoningStream> reasoning;
    int64_t reasoning_tokens = 0;
    std::vector<float> embedding;  // /v1/embeddings
  };
  template <typename Make>
  std::string carrying_logprobs(Choice& c, Make make);
  std::string text_event(int32_t index, Choice& c, std::string_view text);
  // Streamed: content text, read for calls when tools are.
  std::string content_text(int32_t index, Choice& c, std::string_view text);
  // Streamed: a piece of reasoning; chat's chunk carries the logprobs since the last one.
  std::string reasoning_event(int32_t index, Choice& c, std::string_view text);
  // Not streamed: the choice's output split (all content when the split is off).
  ReasoningPieces split_of(const Choice& c) const;
  // The output's calls and content (at most one call unless parallel).
  ParsedToolCalls parse_calls(std::string_view output) const;
  // The calls' ids and the finish reason once calls were read.
  bool calls_end_turn(FinishReason reason) const;
  std::vector<ToolCallOut> tool_calls_of(int32_t index, ParsedToolCalls& parsed,
                                         FinishReason& reason) const;
  // The content a choice keeps (its text that is not a call): all of it, unless the
  // choice was cut and a cut call is dropped (drop_cut_call): then what comes before the
  // place a call may begin.
  std::string_view kept_content(const Choice& c, std::string_view content) const;
  // Streamed with tools: the held-back content's event (into events) and the calls.
  std::vector<ToolCallOut> finish_tool_calls(int32_t index, Choice& c, std::string& events);
  // Streamed: a finished choice's last events, and the stream's end after the last choice.
  std::string finish_events(int32_t index, Choice& c);

  ResponseEncoder encoder_;
  bool stream_;
  bool logprobs_;
  LogprobsStyle style_;
  int32_t per_prompt_;
  ToolCallReading tools_;
  std::unique_ptr<SingleOutputWriter> writer_;
  ReasoningReading reasoning_;
  std::optional<EmbeddingsOut> embeddings_;
  std::vector<Choice> choices_;
  int32_t finished_ = 0;
  Usage usage_;
  ChoiceTimings timings_;
};

}  // namespace tandem::server
