#include "protocol/generation_fields.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <string>

namespace tandem::request_fields {
namespace {

void read_min_tokens(const Json& body, CompletionRequest& request) {
  const Json* value = find_field(body, "min_tokens");
  if (value == nullptr) return;
  const auto min_tokens =
      static_cast<int32_t>(read_integer(*value, "min_tokens", 0, kMaxTokensLimit));
  // As vLLM: a floor above the ceiling is a mistake, not something to clamp.
  if (request.max_tokens && min_tokens > *request.max_tokens) {
    reject("'min_tokens' (" + std::to_string(min_tokens) + ") must not exceed 'max_tokens' (" +
               std::to_string(*request.max_tokens) + ").",
           "min_tokens");
  }
  request.sampling.min_tokens = min_tokens;
}

void read_stop_token_ids(const Json& body, CompletionRequest& request) {
  const Json* value = find_field(body, "stop_token_ids");
  if (value == nullptr) return;
  std::vector<int32_t> ids = read_token_ids(*value, "stop_token_ids");
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  request.sampling.stop_token_ids = std::move(ids);
}

// A repetition penalty under either of its names: a number > 0 (1: off).
float read_repetition(const Json& value, const char* name) {
  const float v = read_float(value, name);
  if (!(v > 0.0f)) {
    reject("Invalid value for '" + std::string(name) + "': expected a number > 0, got " +
               value.dump() + ".",
           name);
  }
  return v;
}

void read_penalties(const Json& body, SamplingParams& sampling) {
  for (auto [name, target] : {std::pair{"presence_penalty", &sampling.presence_penalty},
                              std::pair{"frequency_penalty", &sampling.frequency_penalty}}) {
    const Json* value = find_field(body, name);
    if (value == nullptr) continue;
    const float v = read_float(*value, name);
    if (v < -2.0f || v > 2.0f) {
      reject("Invalid value for '" + std::string(name) + "': expected a number in [-2, 2], got " +
                 value->dump() + ".",
             name);
    }
    *target = v;
  }
  if (const Json* value = find_field(body, "repetition_penalty")) {
    sampling.repetition_penalty = read_repetition(*value, "repetition_penalty");
  }
}

// One value from either of two names for it; both sent must agree.
std::optional<int64_t> read_window(const Json& body) {
  std::optional<int64_t> out;
  for (const char* name : {"repeat_last_n", "penalty_last_n"}) {
    const Json* value = find_field(body, name);
    if (value == nullptr) continue;
    const int64_t n = read_integer(*value, name, -1, SamplingParams::kWholeHistory);
    if (out && *out != n) {
      reject("'repeat_last_n' and 'penalty_last_n' name the same window and differ; send one.",
             name);
    }
    out = n;
  }
  return out;
}

// llama.cpp's names, which llama-server's clients send: repeat_penalty is
// repetition_penalty, and repeat_last_n (alias penalty_last_n) the window that makes all
// three penalties llama.cpp's (SamplingParams::penalty_last_n): -1 the whole history, 0 no
// penalty at all, as in llama.cpp. Either name picks llama.cpp's definitions, with its
// default window of 64.
void read_llama_penalties(const Json& body, SamplingParams& sampling) {
  const Json* repeat = find_field(body, "repeat_penalty");
  if (repeat != nullptr) {
    const float v = read_repetition(*repeat, "repeat_penalty");
    const Json* other = find_field(body, "repetition_penalty");
    if (other != nullptr && read_float(*other, "repetition_penalty") != v) {
      reject(
          "'repeat_penalty' and 'repetition_penalty' name the same penalty and differ; send "
          "one.",
          "repeat_penalty");
    }
    sampling.repetition_penalty = v;
  }
  const std::optional<int64_t> window = read_window(body);
  if (repeat == nullptr && !window) return;
  const int64_t n = window.value_or(kLlamaDefaultPenaltyLastN);
  if (n == 0) {
    sampling.repetition_penalty = 1.0f;
    sampling.frequency_penalty = 0.0f;
    sampling.presence_penalty = 0.0f;
    return;
  }
  sampling.penalty_last_n = n < 0 ? SamplingParams::kWholeHistory : static_cast<int32_t>(n);
}

// A number of at least `min` (the message's words for the range).
float read_float_from(const Json& body, const char* name, float fallback, float min,
                      const char* range) {
  const Json* value = find_field(body, name);
  if (value == nullptr) return fallback;
  const float v = read_float(*value, name);
  if (!(value->get<double>() >= min)) {  // the value sent, not its float
    reject("Invalid value for '" + std::string(name) + "': expected " + range + ", got " +
               value->dump() + ".",
           name);
  }
  return v;
}

// llama-server's DRY fields and defaults (SamplingParams::dry_*). dry_penalty_last_n -1 is
// the whole history (llama-server's context size), 0 turns DRY off. Breakers are strings,
// each cut to its first kMaxDryBreakerBytes bytes and the empty ones skipped, as llama.cpp
// does; the server turns them into token sequences.
void read_dry(const Json& body, CompletionRequest& request) {
  SamplingParams& sampling = request.sampling;
  sampling.dry_multiplier = read_float_from(body, "dry_multiplier", 0.0f, 0.0f, "a number >= 0");
  // llama-server puts a base below 1 back to its default; a client that sends one is told.
  sampling.dry_base = read_float_from(body, "dry_base", 1.75f, 1.0f, "a number >= 1");
  if (const Json* value = find_field(body, "dry_allowed_length")) {
    sampling.dry_allowed_length = static_cast<int32_t>(
        read_integer(*value, "dry_allowed_length", 0, std::numeric_limits<int32_t>::max()));
  }
  if (const Json* value = find_field(body, "dry_penalty_last_n")) {
    const int64_t n =
        read_integer(*value, "dry_penalty_last_n", -1, std::numeric_limits<int32_t>::max());
    sampling.dry_last_n = n < 0 ? SamplingParams::kWholeHistory : static_cast<int32_t>(n);
  }
  const Json* breakers = find_field(body, "dry_sequence_breakers");
  if (breakers == nullptr) return;
  const Json& list = require_array(*breakers, "dry_sequence_breakers");
  if (list.empty() || list.size() > kMaxDryBreakers) {
    reject("'dry_sequence_breakers' must be a non-empty array of at most " +
               std::to_string(kMaxDryBreakers) + " strings.",
           "dry_sequence_breakers");
  }
  request.dry_sequence_breakers.clear();
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string& text = read_string(list[i], element_param("dry_sequence_breakers", i));
    if (!text.empty()) request.dry_sequence_breakers.push_back(text.substr(0, kMaxDryBreakerBytes));
  }
}

// llama.cpp's Mirostat (SamplingParams::mirostat): 1 or 2, with llama-server's defaults for
// tau and eta. It replaces llama.cpp's chain by the temperature and its own cut, so the
// stages that chain would have run are turned off here: what the request carries on is
// what acts (generation_settings shows it so).
void read_mirostat(const Json& body, SamplingParams& sampling) {
  if (const Json* value = find_field(body, "mirostat")) {
    sampling.mirostat = static_cast<int32_t>(read_integer(*value, "mirostat", 0, 2));
  }
  sampling.mirostat_tau = read_float_from(body, "mirostat_tau", 5.0f, 0.0f, "a number >= 0");
  sampling.mirostat_eta = read_float_from(body, "mirostat_eta", 0.1f, 0.0f, "a number >= 0");
  if (sampling.mirostat == 0) return;
  sampling.top_k = 0;
  sampling.top_p = 1.0f;
  sampling.min_p = 0.0f;
  sampling.typical_p = 1.0f;
  sampling.top_n_sigma = -1.0f;
  sampling.xtc_probability = 0.0f;
  sampling.dynatemp_range = 0.0f;
  sampling.repetition_penalty = 1.0f;
  sampling.frequency_penalty = 0.0f;
  sampling.presence_penalty = 0.0f;
  sampling.dry_multiplier = 0.0f;
}

// Completions: logprobs is a count (false: none) and echo a flag. Chat: logprobs is a flag
// and top_logprobs the count, which needs logprobs (as OpenAI and vLLM say).
void read_logprobs(const Json& body, CompletionRequest& request) {
  SamplingParams& sampling = request.sampling;
  const Json* logprobs = find_field(body, "logprobs");
  if (request.endpoint == Endpoint::kCompletions) {
    if (logprobs != nullptr && !(logprobs->is_boolean() && !logprobs->get<bool>())) {
      sampling.logprobs =
          static_cast<int32_t>(read_integer(*logprobs, "logprobs", 0, kMaxLogprobs));
    }
    if (const Json* echo = find_field(body, "echo")) request.echo = read_bool(*echo, "echo");
    if (request.echo) sampling.prompt_logprobs = sampling.logprobs;
    return;
  }
  const bool on = logprobs != nullptr && read_bool(*logprobs, "logprobs");
  int32_t top = 0;
  if (const Json* value = find_field(body, "top_logprobs")) {
    top = static_cast<int32_t>(read_integer(*value, "top_logprobs", 0, kMaxLogprobs));
    if (top > 0 && !on) reject("'top_logprobs' needs 'logprobs' set to true.", "top_logprobs");
  }
  if (on) sampling.logprobs = top;
  // llama-server's: the draw's probabilities in place of the model's (unsupported_fields
  // refuses it on the other conversation routes).
  const Json* post = find_field(body, "post_sampling_probs");
  if (post != nullptr && request.endpoint == Endpoint::kChatCompletions) {
    sampling.post_sampling_probs = read_bool(*post, "post_sampling_probs");
  }
}

}  // namespace

void read_generation_controls(const Json& body, CompletionRequest& request) {
  read_penalties(body, request.sampling);
  read_llama_penalties(body, request.sampling);
  read_dry(body, request);
  read_mirostat(body, request.sampling);
  read_logprobs(body, request);
  read_min_tokens(body, request);
  read_stop_token_ids(body, request);
  if (const Json* value = find_field(body, "include_stop_str_in_output")) {
    request.include_stop_str_in_output = read_bool(*value, "include_stop_str_in_output");
  }
  if (const Json* value = find_field(body, "skip_special_tokens")) {
    request.skip_special_tokens = read_bool(*value, "skip_special_tokens");
  }
  if (const Json* value = find_field(body, "return_tokens_as_token_ids")) {
    request.tokens_as_ids = read_bool(*value, "return_tokens_as_token_ids");
  }
  if (const Json* value = find_field(body, "timings_per_token")) {
    request.timings_per_token = read_bool(*value, "timings_per_token");
  }
}

}  // namespace tandem::request_fields
