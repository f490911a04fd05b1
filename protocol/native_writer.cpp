#include "protocol/native_writer.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "protocol/api_error.h"
#include "protocol/llama_timings.h"
#include "protocol/logprobs.h"
#include "protocol/sse.h"

namespace tandem {
namespace {

using Json = nlohmann::ordered_json;

std::string native_json_text(const Json& value) {
  return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

const char* stop_type_of(FinishReason finish, std::string_view stop) {
  if (finish == FinishReason::kLength) return "limit";
  if (!stop.empty()) return "word";
  return finish == FinishReason::kStop ? "eos" : "none";
}

// The token's text as llama-server shows it: cut before a UTF-8 sequence the token leaves
// open (its bytes say the whole).
std::string_view whole_characters(std::string_view bytes) {
  for (size_t back = 1; back <= std::min<size_t>(3, bytes.size()); ++back) {
    const auto c = static_cast<unsigned char>(bytes[bytes.size() - back]);
    if ((c & 0xC0) == 0x80) continue;  // a continuation byte: look further back
    const size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    return need > back ? bytes.substr(0, bytes.size() - back) : bytes;
  }
  return bytes;
}

Json probability_entry(const LogprobEntry& entry) {
  Json bytes = Json::array();
  for (const char c : entry.token) bytes.push_back(static_cast<unsigned char>(c));
  // llama-server writes the lowest float where the probability is 0 (JSON has no -inf).
  const float logprob =
      std::isfinite(entry.logprob) ? entry.logprob : std::numeric_limits<float>::lowest();
  return Json{{"id", entry.id},
              {"token", whole_characters(entry.token)},
              {"bytes", std::move(bytes)},
              {"logprob", logprob}};
}

// llama-server's completion_probabilities for n_probs: per token its id, text, bytes and
// logprob, and top_logprobs, the n_probs most likely in the same form.
Json completion_probabilities(const LogprobsPiece& piece) {
  Json out = Json::array();
  for (const TokenLogprobs& token : piece.tokens) {
    Json entry = probability_entry(token.chosen);
    Json top = Json::array();
    for (const LogprobEntry& alternative : token.top) top.push_back(probability_entry(alternative));
    entry["top_logprobs"] = std::move(top);
    out.push_back(std::move(entry));
  }
  return out;
}

}  // namespace

NativeWriter::NativeWriter(ResponseHeader header, std::string prompt, int64_t prompt_tokens,
                           Json settings, std::vector<std::string> response_fields,
                           bool timings_per_token)
    : header_(std::move(header)),
      prompt_(std::move(prompt)),
      settings_(std::move(settings)),
      response_fields_(std::move(response_fields)),
      accepted_(Clock::now()),
      prompt_tokens_(prompt_tokens),
      timings_per_token_(timings_per_token) {
  settings_["seed"] = header_.seed;
  settings_["model"] = header_.model;
}

void NativeWriter::output_seen(int32_t tokens) {
  if (!first_output_) first_output_ = Clock::now();
  predicted_ += tokens;
}

Json NativeWriter::timings(const Usage& usage) const {
  const Clock::time_point end = Clock::now();
  const Clock::time_point first = first_output_.value_or(end);
  return timings_json(LlamaTimings{usage.cached_tokens, usage.prompt_tokens - usage.cached_tokens,
                                   ms_between(accepted_, first), usage.completion_tokens,
                                   ms_between(first, end)});
}

Json NativeWriter::final_object(std::string_view content, FinishReason finish, const Usage& usage,
                                std::string_view stop) const {
  return Json{
      {"index", 0},
      {"content", content},
      {"tokens", Json::array()},
      {"id_slot", -1},
      {"stop", true},
      {"model", header_.model},
      {"tokens_predicted", usage.completion_tokens},
      {"tokens_evaluated", usage.prompt_tokens},
      {"generation_settings", settings_},
      {"prompt", prompt_},
      {"has_new_line", new_line_ || content.find('\n') != std::string_view::npos},
      {"truncated", false},
      {"stop_type", stop_type_of(finish, stop)},
      {"stopping_word", finish == FinishReason::kLength ? std::string_view() : stop},
      // llama-server's n_past: the last token was sampled, never fed.
      {"tokens_cached", usage.prompt_tokens + std::max<int64_t>(0, usage.completion_tokens - 1)},
      {"timings", timings(usage)},
      // tandem's additions, as on its other endpoints: what replays the answer.
      {"id", header_.id},
      {"seed", header_.seed},
      {"system_fingerprint", header_.system_fingerprint}};
}

std::string NativeWriter::text_events(std::string_view text, const LogprobsPiece* logprobs) {
  // A piece without text still carries its tokens' probabilities (a stop string's, an EOS):
  // the stream lists every token the whole object does.
  const bool probs = logprobs != nullptr && !logprobs->tokens.empty();
  if (text.empty() && !probs) return {};
  if (text.find('\n') != std::string_view::npos) new_line_ = true;
  Json piece{{"index", 0},
             {"content", text},
             {"tokens", Json::array()},
             {"stop", false},
             {"id_slot", -1},
             {"tokens_predicted", predicted_},
             {"tokens_evaluated", prompt_tokens_},
             {"id", header_.id}};
  if (probs) piece["completion_probabilities"] = completion_probabilities(*logprobs);
  if (timings_per_token_) {
    piece["timings"] = timings(Usage{prompt_tokens_, predicted_, cached_});
  }
  return sse_data(native_json_text(piece));
}

// No reasoning is split off on these routes (they read no chat template): never called.
std::string NativeWriter::reasoning_events(std::string_view text) {
  return text_events(text, nullptr);
}

std::string NativeWriter::closing_events(std::span<const ToolCallOut>, FinishReason finish,
                                         const Usage& usage, std::string_view stop) {
  return sse_data(native_json_text(final_object("", finish, usage, stop)));
}

std::string NativeWriter::error_events(const ApiError& error) {
  return sse_data(to_json_body(error));
}

std::string NativeWriter::whole_body(std::string_view text, std::span<const ToolCallOut>,
                                     FinishReason finish, const Usage& usage,
                                     const LogprobsPiece* logprobs, std::string_view,
                                     std::string_view stop) {
  Json object = final_object(text, finish, usage, stop);
  // As llama-server: no key where no token was generated.
  if (logprobs != nullptr && !logprobs->tokens.empty()) {
    object["completion_probabilities"] = completion_probabilities(*logprobs);
  }
  if (!response_fields_.empty()) object = pick_fields(object, response_fields_);
  return native_json_text(object);
}

Json pick_fields(const Json& object, const std::vector<std::string>& paths) {
  Json picked = Json::object();
  for (const std::string& path : paths) {
    const Json* at = &object;
    size_t begin = 0;
    while (at != nullptr) {
      const size_t slash = path.find('/', begin);
      const std::string key = path.substr(begin, slash - begin);
      at = at->is_object() && at->contains(key) ? &at->at(key) : nullptr;
      if (slash == std::string::npos) break;
      begin = slash + 1;
    }
    if (at != nullptr) picked[path] = *at;
  }
  return picked;
}

}  // namespace tandem
