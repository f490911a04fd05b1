// llama-server's `timings` object, which its clients read for token rates and context use:
// the prompt tokens computed (prompt_n) and found in the prefix cache (cache_n), the time
// from the request's acceptance to its first output (prompt_ms), the tokens generated since
// (predicted_n) and their time (predicted_ms), with the per-token and per-second rates
// llama-server derives from them. /completion and /infill answer with it
// (native_writer.h), and the OpenAI routes add it when a request sends
// `timings_per_token: true` (responses.h).
#pragma once

#include <chrono>
#include <cstdint>

#include <nlohmann/json.hpp>

namespace tandem {

struct LlamaTimings {
  int64_t cache_n = 0;
  int64_t prompt_n = 0;
  double prompt_ms = 0;
  int64_t predicted_n = 0;
  double predicted_ms = 0;
};

// The object, in llama-server's field order: cache_n, prompt_n, prompt_ms,
// prompt_per_token_ms, prompt_per_second, predicted_n, predicted_ms, predicted_per_token_ms,
// predicted_per_second (a rate without data is 0).
nlohmann::ordered_json timings_json(const LlamaTimings& timings);

// Milliseconds from `from` to `to`.
double ms_between(std::chrono::steady_clock::time_point from,
                  std::chrono::steady_clock::time_point to);

}  // namespace tandem
