#include "server/generation_response.h"

#include <utility>

namespace tandem::server {

GenerationResponse::GenerationResponse(ResponseEncoder encoder, bool stream, bool logprobs,
                                       int32_t per_prompt, std::vector<std::string> echoes)
    : encoder_(std::move(encoder)),
      stream_(stream),
      logprobs_(logprobs),
      per_prompt_(per_prompt < 1 ? 1 : per_prompt),
      choices_(static_cast<size_t>(encoder_.choice_count())) {
  for (size_t i = 0; i < choices_.size() && i < echoes.size(); ++i) {
    (stream_ ? choices_[i].echo : choices_[i].text) = std::move(echoes[i]);
  }
}

// A chunk of text with the log-probabilities of the tokens since the choice's last chunk.
std::string GenerationResponse::text_event(int32_t index, Choice& c, std::string_view text) {
  if (!logprobs_) return encoder_.text_event(text, nullptr, index);
  const LogprobsPiece piece{c.pending, c.text_offset};
  std::string event = encoder_.text_event(text, &piece, index);
  c.text_offset += logprobs_text_bytes(c.pending);
  c.pending.clear();
  return event;
}

std::string GenerationResponse::text(int32_t choice, std::string_view text) {
  Choice& c = choices_.at(choice);
  if (!stream_) {
    c.text += text;
    return {};
  }
  std::string events = text_event(choice, c, c.echo + std::string(text));
  c.echo.clear();
  return events;
}

void GenerationResponse::logprobs(int32_t choice, std::vector<TokenLogprobs> entries) {
  Choice& c = choices_.at(choice);
  for (TokenLogprobs& one : entries) c.pending.push_back(std::move(one));
}

std::string GenerationResponse::finish(int32_t choice, FinishReason reason, const Usage& usage) {
  Choice& c = choices_.at(choice);
  if (c.finished) return {};
  c.finished = true;
  c.reason = reason;
  ++finished_;
  if (choice % per_prompt_ == 0) {  // each prompt counts once
    usage_.prompt_tokens += usage.prompt_tokens;
    usage_.cached_tokens += usage.cached_tokens;
  }
  usage_.completion_tokens += usage.completion_tokens;
  if (!stream_) return {};
  std::string events;
  // What no text chunk carried yet: the echoed prompt (max_tokens 0), or the tokens after
  // the last text (an EOS, a stop, bytes held back).
  if (!c.echo.empty() || !c.pending.empty()) {
    events += text_event(choice, c, c.echo);
    c.echo.clear();
  }
  events += encoder_.finish_event(choice, reason);
  if (all_finished()) events += encoder_.end_events(usage_);
  return events;
}

std::string GenerationResponse::whole_body() {
  std::vector<LogprobsPiece> pieces;
  pieces.reserve(choices_.size());
  std::vector<ChoiceResult> results;
  for (const Choice& c : choices_) {
    pieces.push_back(LogprobsPiece{c.pending, 0});
    results.push_back(ChoiceResult{{}, c.text, c.reason, logprobs_ ? &pieces.back() : nullptr});
  }
  return encoder_.whole_body(results, usage_);
}

}  // namespace tandem::server
