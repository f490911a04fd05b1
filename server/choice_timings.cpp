#include "server/choice_timings.h"

#include <algorithm>

namespace tandem::server {

ChoiceTimings::ChoiceTimings(Clock::time_point accepted, const std::vector<int64_t>& prompt_tokens)
    : accepted_(accepted), choices_(prompt_tokens.size()) {
  for (size_t i = 0; i < prompt_tokens.size(); ++i) choices_[i].prompt = prompt_tokens[i];
}

void ChoiceTimings::cached(int32_t choice, int64_t tokens) {
  if (on()) choices_.at(static_cast<size_t>(choice)).cached = tokens;
}

void ChoiceTimings::output(int32_t choice, int64_t tokens, Clock::time_point at) {
  if (!on()) return;
  Choice& c = choices_.at(static_cast<size_t>(choice));
  if (!c.first) c.first = at;
  c.latest = at;
  c.predicted += tokens;
}

void ChoiceTimings::finished(int32_t choice, const Usage& usage, Clock::time_point at) {
  if (!on()) return;
  Choice& c = choices_.at(static_cast<size_t>(choice));
  c.prompt = usage.prompt_tokens;
  c.cached = usage.cached_tokens;
  c.predicted = usage.completion_tokens;
  if (!c.first) c.first = at;  // no text (an end at once): its first output is its end
  c.latest = at;
}

const LlamaTimings* ChoiceTimings::of(int32_t choice) {
  if (!on()) return nullptr;
  Choice& c = choices_.at(static_cast<size_t>(choice));
  const Clock::time_point first = c.first.value_or(accepted_);
  c.current = LlamaTimings{c.cached, c.prompt - c.cached, ms_between(accepted_, first), c.predicted,
                           ms_between(first, std::max(first, c.latest))};
  return &c.current;
}

std::optional<LlamaTimings> ChoiceTimings::whole(const Usage& usage) const {
  if (!on()) return std::nullopt;
  std::optional<Clock::time_point> first;
  Clock::time_point latest = accepted_;
  for (const Choice& c : choices_) {
    if (c.first && (!first || *c.first < *first)) first = c.first;
    latest = std::max(latest, c.latest);
  }
  const Clock::time_point start = first.value_or(accepted_);
  return LlamaTimings{usage.cached_tokens, usage.prompt_tokens - usage.cached_tokens,
                      ms_between(accepted_, start), usage.completion_tokens,
                      ms_between(start, std::max(start, latest))};
}

}  // namespace tandem::server
