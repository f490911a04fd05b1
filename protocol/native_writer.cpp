#include "protocol/native_writer.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "protocol/api_error.h"
#include "protocol/choice_seed.h"
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

}  // namespace

NativeWriter::NativeWriter(ResponseHeader header, std::string prompt, int64_t prompt_tokens,
                           Json settings, std::vector<std::string> response_fields,
                           bool timings_per_token, bool return_tokens)
    : header_(std::move(header)),
      prompt_(std::move(prompt)),
      settings_(std::move(settings)),
      response_fields_(std::move(response_fields)),
      accepted_(Clock::now()),
      prompt_tokens_(prompt_tokens),
      timings_per_token_(timings_per_token),
      return_tokens_(return_tokens) {
  settings_["seed"] = reported_seed(header_.seed);
  settings_["model"] = header_.model;
}

void NativeWriter::output_seen(int32_t tokens) {
  if (!first_output_) first_output_ = Clock::now();
  predicted_ += tokens;
}

void NativeWriter::tokens_seen(std::span<const int32_t> ids) {
  ids_.insert(ids_.end(), ids.begin(), ids.end());
}

Json NativeWriter::timings(const Usage& usage) const {
  const Clock::time_point end = Clock::now();
  const Clock::time_point first = first_output_.value_or(end);
  return timings_json(LlamaTimings{usage.cached_tokens, usage.prompt_tokens - usage.cached_tokens,
                                   ms_between(accepted_, first), usage.completion_tokens,
                                   ms_between(first, end)});
}

Json NativeWriter::final_object(std::string_view content, Json tokens, FinishReason finish,
                                const Usage& usage, std::string_view stop) const {
  return Json{
      {"index", 0},
      {"content", content},
      {"tokens", std::move(tokens)},
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
      {"seed", reported_seed(header_.seed)},
      {"system_fingerprint", header_.system_fingerprint}};
}

std::string NativeWriter::text_events(std::string_view text, const LogprobsPiece* logprobs) {
  // A piece without text still carries its tokens' probabilities (a stop string's, an EOS):
  // the stream lists every token the whole object does.
  const bool probs = logprobs != nullptr && !logprobs->tokens.empty();
  // Nor does a piece of tokens that made no text (an EOS, a stop string's, bytes cut) go
  // unsent: the stream lists every id, as llama-server's pieces (one per token) do.
  if (text.empty() && !probs && ids_streamed_ == ids_.size()) return {};
  if (text.find('\n') != std::string_view::npos) new_line_ = true;
  Json ids =
      std::vector<int32_t>(ids_.begin() + static_cast<std::ptrdiff_t>(ids_streamed_), ids_.end());
  ids_streamed_ = ids_.size();
  Json piece{{"index", 0},
             {"content", text},
             {"tokens", std::move(ids)},
             {"stop", false},
             {"id_slot", -1},
             {"tokens_predicted", predicted()},
             {"tokens_evaluated", prompt_tokens_},
             {"id", header_.id}};
  if (probs) piece["completion_probabilities"] = llama_probabilities_json(*logprobs);
  if (timings_per_token_) {
    piece["timings"] = timings(Usage{prompt_tokens_, predicted(), cached_});
  }
  return sse_data(native_json_text(piece));
}

// No reasoning is split off on these routes (they read no chat template): never called.
std::string NativeWriter::reasoning_events(std::string_view text) {
  return text_events(text, nullptr);
}

std::string NativeWriter::closing_events(std::span<const ToolCallOut>, FinishReason finish,
                                         const Usage& usage, std::string_view stop) {
  // The ids no piece listed yet (tokens after the last text) go in a piece of their own.
  std::string events = text_events("", nullptr);
  Json last = final_object("", Json::array(), finish, usage, stop);
  if (!response_fields_.empty()) last = pick_fields(last, response_fields_);  // as llama-server
  return events + sse_data(native_json_text(last));
}

std::string NativeWriter::error_events(const ApiError& error) {
  return sse_data(to_json_body(error));
}

std::string NativeWriter::whole_body(std::string_view text, std::span<const ToolCallOut>,
                                     FinishReason finish, const Usage& usage,
                                     const LogprobsPiece* logprobs, std::string_view,
                                     std::string_view stop) {
  Json object =
      final_object(text, return_tokens_ ? Json(ids_) : Json::array(), finish, usage, stop);
  // As llama-server: no key where no token was generated.
  if (logprobs != nullptr && !logprobs->tokens.empty()) {
    object["completion_probabilities"] = llama_probabilities_json(*logprobs);
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
