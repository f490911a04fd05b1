#include "server/generation_response.h"

#include <utility>

#include "protocol/embedding_request.h"

namespace tandem::server {

GenerationResponse::GenerationResponse(ResponseEncoder encoder, bool stream, bool logprobs,
                                       int32_t per_prompt, std::vector<std::string> echoes,
                                       ToolCallReading tools, LogprobsStyle style,
                                       std::unique_ptr<SingleOutputWriter> writer,
                                       ReasoningReading reasoning,
                                       std::optional<EmbeddingsOut> embeddings)
    : encoder_(std::move(encoder)),
      stream_(stream),
      logprobs_(logprobs),
      style_(style),
      per_prompt_(per_prompt < 1 ? 1 : per_prompt),
      tools_(std::move(tools)),
      writer_(std::move(writer)),
      reasoning_(std::move(reasoning)),
      embeddings_(std::move(embeddings)),
      choices_(static_cast<size_t>(encoder_.choice_count())) {
  for (size_t i = 0; i < choices_.size() && i < echoes.size(); ++i) {
    (stream_ ? choices_[i].echo : choices_[i].text) = std::move(echoes[i]);
  }
  if (!reasoning_.enabled) return;
  usage_.reasoning_tokens = 0;
  for (Choice& c : choices_) c.reasoning.emplace(reasoning_.markers, reasoning_.opened);
}

// The event `make` builds from the log-probabilities of the tokens since the choice's last
// event (null when the response has none), which that event then carries.
template <typename Make>
std::string GenerationResponse::carrying_logprobs(Choice& c, Make make) {
  if (!logprobs_) return make(nullptr);
  const LogprobsPiece piece{c.pending, c.text_position, style_};
  std::string event = make(&piece);
  c.text_position = advanced(c.text_position, c.pending);
  c.pending.clear();
  return event;
}

std::string GenerationResponse::reasoning_event(int32_t index, Choice& c, std::string_view text) {
  if (text.empty()) return {};
  // The Responses reasoning item has no logprobs: the tokens' stay for the message's, so
  // that its logprobs cover the whole output there as in the whole body.
  if (writer_) return writer_->reasoning_events(text);
  return carrying_logprobs(c, [&](const LogprobsPiece* piece) {
    return encoder_.reasoning_event(text, piece, index, timings_.of(index));
  });
}

ReasoningPieces GenerationResponse::split_of(const Choice& c) const {
  if (!reasoning_.enabled) return ReasoningPieces{{}, c.text};
  return split_reasoning(c.text, reasoning_.markers, reasoning_.opened);
}

// A chunk of text with the log-probabilities of the tokens since the choice's last chunk.
std::string GenerationResponse::text_event(int32_t index, Choice& c, std::string_view text) {
  return carrying_logprobs(c, [&](const LogprobsPiece* piece) {
    return writer_ ? writer_->text_events(text, piece)
                   : encoder_.text_event(text, piece, index, timings_.of(index));
  });
}

std::string GenerationResponse::text(int32_t choice, std::string_view text, int32_t tokens,
                                     ChoiceTimings::Clock::time_point at) {
  Choice& c = choices_.at(choice);
  if (writer_) writer_->output_seen(tokens);
  timings_.output(choice, tokens, at);
  std::optional<ReasoningPieces> pieces;
  if (c.reasoning) {
    pieces = c.reasoning->push(text);
    // A token is the reasoning's if its text is, or leaves the output inside the reasoning
    // (the open marker, blanks held back there); the close marker's is the answer's.
    if (!pieces->reasoning.empty() || c.reasoning->in_reasoning()) c.reasoning_tokens += tokens;
  }
  if (!stream_) {
    c.text += text;
    return {};
  }
  if (!pieces) return content_text(choice, c, text);
  std::string events = reasoning_event(choice, c, pieces->reasoning);
  if (!pieces->content.empty()) events += content_text(choice, c, pieces->content);
  return events;
}

std::string GenerationResponse::content_text(int32_t choice, Choice& c, std::string_view text) {
  if (tools_.enabled) {
    c.output += text;
    const size_t safe = tool_call_safe_prefix(tools_.format, c.output, c.released);
    if (safe == 0) return {};
    std::string events = text_event(choice, c, std::string_view(c.output).substr(c.released, safe));
    c.released += safe;
    return events;
  }
  std::string events = text_event(choice, c, c.echo + std::string(text));
  c.echo.clear();
  return events;
}

ParsedToolCalls GenerationResponse::parse_calls(std::string_view output) const {
  ParsedToolCalls parsed = parse_tool_calls(tools_.format, output, tools_.functions);
  if (!tools_.parallel && parsed.calls.size() > 1) parsed.calls.resize(1);
  return parsed;
}

std::vector<ToolCallOut> GenerationResponse::tool_calls_of(int32_t index, ParsedToolCalls& parsed,
                                                           FinishReason& reason) const {
  std::vector<ToolCallOut> calls;
  for (size_t i = 0; i < parsed.calls.size(); ++i) {
    calls.push_back(ToolCallOut{tool_call_id(tools_.format, tools_.response_key, index, i),
                                std::move(parsed.calls[i].name),
                                std::move(parsed.calls[i].arguments)});
  }
  if (!calls.empty() && calls_end_turn(reason)) reason = FinishReason::kToolCalls;
  return calls;
}

// A call cut short by max_tokens does not parse; one that parsed ends the turn, reported as
// "tool_calls", except a named function's forced call, which stays "stop".
bool GenerationResponse::calls_end_turn(FinishReason reason) const {
  return reason == FinishReason::kStop && !tools_.named;
}

FinishReason GenerationResponse::reported_reason(int32_t choice, FinishReason reason) const {
  if (!tools_.enabled || !calls_end_turn(reason)) return reason;
  const Choice& c = choices_.at(choice);
  const bool calls = !parse_calls(stream_ ? c.output : split_of(c).content).calls.empty();
  return calls ? FinishReason::kToolCalls : reason;
}

std::string_view GenerationResponse::kept_content(const Choice& c, std::string_view content) const {
  const bool cut = c.reason == FinishReason::kLength || !c.stop.text.empty();
  if (!tools_.drop_cut_call || !cut) return content;
  return content.substr(0, tool_call_safe_prefix(tools_.format, content, 0));
}

std::vector<ToolCallOut> GenerationResponse::finish_tool_calls(int32_t index, Choice& c,
                                                               std::string& events) {
  ParsedToolCalls parsed = parse_calls(c.output);
  if (parsed.calls.empty()) {
    // What was sent stays sent: the held-back part is all that can be dropped.
    parsed.content = std::string(kept_content(c, c.output));
    if (parsed.content.size() < c.released) parsed.content = c.output.substr(0, c.released);
  } else {
    parsed.content = std::string(kept_content(c, parsed.content));
  }
  // What was held back: the content after what was sent (the sent part is its prefix).
  if (c.released < parsed.content.size() || !c.pending.empty()) {
    const std::string_view rest = c.released < parsed.content.size()
                                      ? std::string_view(parsed.content).substr(c.released)
                                      : std::string_view();
    events += text_event(index, c, rest);
  }
  return tool_calls_of(index, parsed, c.reason);
}

void GenerationResponse::logprobs(int32_t choice, std::vector<TokenLogprobs> entries) {
  Choice& c = choices_.at(choice);
  for (TokenLogprobs& one : entries) c.pending.push_back(std::move(one));
}

std::string GenerationResponse::finish(int32_t choice, FinishReason reason, const Usage& usage,
                                       const StopReason& stop,
                                       ChoiceTimings::Clock::time_point at) {
  Choice& c = choices_.at(choice);
  if (c.finished) return {};
  c.finished = true;
  timings_.finished(choice, usage, at);
  c.reason = reason;
  c.stop = stop;
  ++finished_;
  if (choice % per_prompt_ == 0) {  // each prompt counts once
    usage_.prompt_tokens += usage.prompt_tokens;
    usage_.cached_tokens += usage.cached_tokens;
  }
  usage_.completion_tokens += usage.completion_tokens;
  if (c.reasoning) usage_.reasoning_tokens += c.reasoning_tokens;
  return stream_ ? finish_events(choice, c) : std::string();
}

std::string GenerationResponse::finish_events(int32_t index, Choice& c) {
  std::string events;
  if (c.reasoning) {  // what the split held back (a cut marker, blanks)
    const ReasoningPieces rest = c.reasoning->finish();
    events += reasoning_event(index, c, rest.reasoning);
    if (!rest.content.empty()) events += content_text(index, c, rest.content);
  }
  std::vector<ToolCallOut> calls;
  if (tools_.enabled) {
    calls = finish_tool_calls(index, c, events);
  } else if (!c.echo.empty() || !c.pending.empty()) {
    // What no text chunk carried yet: the echoed prompt (max_tokens 0), or the tokens after
    // the last text (an EOS, a stop, bytes held back).
    events += text_event(index, c, c.echo);
    c.echo.clear();
  }
  if (writer_) return events + writer_->closing_events(calls, c.reason, usage_, c.stop.text);
  events += encoder_.tool_call_events(index, calls, timings_.of(index));
  events += encoder_.finish_event(index, c.reason, ChunkExtras{&c.stop, timings_.of(index)});
  if (all_finished()) events += encoder_.end_events(usage_);
  return events;
}

std::string GenerationResponse::whole_body() {
  if (embeddings_) {
    std::vector<std::vector<float>> all;
    for (Choice& c : choices_) {
      all.push_back(std::move(c.embedding));
      if (embeddings_->normalize) normalize_embedding(all.back());
    }
    return embedding_response_json(embeddings_->model, all, embeddings_->base64,
                                   usage_.prompt_tokens);
  }
  std::vector<LogprobsPiece> pieces;
  pieces.reserve(choices_.size());
  std::vector<ChoiceResult> results;
  std::vector<ReasoningPieces> splits(choices_.size());
  std::vector<ParsedToolCalls> parsed(choices_.size());
  std::vector<std::vector<ToolCallOut>> calls(choices_.size());
  for (size_t i = 0; i < choices_.size(); ++i) {
    Choice& c = choices_[i];
    pieces.push_back(LogprobsPiece{c.pending, {}, style_});
    splits[i] = split_of(c);
    ChoiceResult result{{}, splits[i].content, c.reason, logprobs_ ? &pieces.back() : nullptr};
    result.stop = &c.stop;
    result.reasoning = splits[i].reasoning;
    if (tools_.enabled) {
      parsed[i] = parse_calls(splits[i].content);
      if (!parsed[i].calls.empty()) {
        calls[i] = tool_calls_of(static_cast<int32_t>(i), parsed[i], result.finish);
        result.text = kept_content(c, parsed[i].content);
        result.tool_calls = calls[i];
      } else {
        result.text = kept_content(c, splits[i].content);
      }
    }
    results.push_back(result);
  }
  if (writer_) {
    const ChoiceResult& only = results.front();
    return writer_->whole_body(only.text, only.tool_calls, only.finish, usage_, only.logprobs,
                               only.reasoning, choices_.front().stop.text);
  }
  const std::optional<LlamaTimings> timings = timings_.whole(usage_);
  return encoder_.whole_body(results, usage_, timings ? &*timings : nullptr);
}

}  // namespace tandem::server
