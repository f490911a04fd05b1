#include "protocol/llama_timings.h"

#include <string>

namespace tandem {
namespace {

using Json = nlohmann::ordered_json;

// n per second over ms, and ms per one of n, as llama-server derives them (0 without data).
void add_rates(Json& out, const char* prefix, int64_t n, double ms) {
  const std::string p = prefix;
  out[p + "_per_token_ms"] = n > 0 ? ms / static_cast<double>(n) : 0.0;
  out[p + "_per_second"] = ms > 0 ? 1000.0 * static_cast<double>(n) / ms : 0.0;
}

}  // namespace

Json timings_json(const LlamaTimings& t) {
  Json out{{"cache_n", t.cache_n}, {"prompt_n", t.prompt_n}, {"prompt_ms", t.prompt_ms}};
  add_rates(out, "prompt", t.prompt_n, t.prompt_ms);
  out["predicted_n"] = t.predicted_n;
  out["predicted_ms"] = t.predicted_ms;
  add_rates(out, "predicted", t.predicted_n, t.predicted_ms);
  return out;
}

double ms_between(std::chrono::steady_clock::time_point from,
                  std::chrono::steady_clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

}  // namespace tandem
