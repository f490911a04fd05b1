// llama-server's timings for each choice of a generation whose request sent
// `timings_per_token: true` (protocol/llama_timings.h): its prompt's length and how much of
// it the prefix cache held (from admission), when its first output and its latest came,
// and the tokens so far. The session feeds it on its strand; not thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <vector>

#include "protocol/llama_timings.h"
#include "protocol/outcomes.h"

namespace tandem::server {

class ChoiceTimings {
 public:
  using Clock = std::chrono::steady_clock;

  ChoiceTimings() = default;  // off: of() is null, whole() nullopt
  // accepted: when the generation was accepted; prompt_tokens: each choice's prompt length.
  ChoiceTimings(Clock::time_point accepted, const std::vector<int64_t>& prompt_tokens);

  bool on() const { return !choices_.empty(); }
  // The prompt tokens the prefix cache held for `choice` (its admission).
  void cached(int32_t choice, int64_t tokens);
  // `tokens` more tokens of `choice` made output at `at`.
  void output(int32_t choice, int64_t tokens, Clock::time_point at);
  // `choice` finished at `at` with `usage` (its own prompt, cached and completion tokens).
  void finished(int32_t choice, const Usage& usage, Clock::time_point at);
  // `choice`'s timings as of its latest output; null when off.
  const LlamaTimings* of(int32_t choice);
  // The whole generation's: every choice's tokens (each prompt once, as usage counts
  // them), from the first output to the latest.
  std::optional<LlamaTimings> whole(const Usage& usage) const;

 private:
  struct Choice {
    int64_t prompt = 0;
    int64_t cached = 0;
    int64_t predicted = 0;
    std::optional<Clock::time_point> first;
    Clock::time_point latest;
    LlamaTimings current;
  };
  Clock::time_point accepted_;
  std::vector<Choice> choices_;
};

}  // namespace tandem::server
