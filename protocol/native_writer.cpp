#include "protocol/native_writer.h"

#include <algorithm>
#include <utility>

#include "protocol/api_error.h"
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

double ms_between(std::chrono::steady_clock::time_point from,
                  std::chrono::steady_clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

// n per second over ms, and ms per one of n, as llama-server derives them (0 without data).
Json rates(const char* prefix, int64_t n, double ms) {
  const std::string p = prefix;
  return Json{{p + "_per_token_ms", n > 0 ? ms / static_cast<double>(n) : 0.0},
              {p + "_per_second", ms > 0 ? 1000.0 * static_cast<double>(n) / ms : 0.0}};
}

}  // namespace

NativeWriter::NativeWriter(ResponseHeader header, std::string prompt, int64_t prompt_tokens,
                           Json settings, std::vector<std::string> response_fields)
    : header_(std::move(header)),
      prompt_(std::move(prompt)),
      settings_(std::move(settings)),
      response_fields_(std::move(response_fields)),
      accepted_(Clock::now()),
      prompt_tokens_(prompt_tokens) {
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
  const int64_t computed = usage.prompt_tokens - usage.cached_tokens;
  const double prompt_ms = ms_between(accepted_, first), predicted_ms = ms_between(first, end);
  Json out{{"cache_n", usage.cached_tokens}, {"prompt_n", computed}, {"prompt_ms", prompt_ms}};
  out.update(rates("prompt", computed, prompt_ms));
  out["predicted_n"] = usage.completion_tokens;
  out["predicted_ms"] = predicted_ms;
  out.update(rates("predicted", usage.completion_tokens, predicted_ms));
  return out;
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

std::string NativeWriter::text_events(std::string_view text, const LogprobsPiece*) {
  if (text.empty()) return {};
  if (text.find('\n') != std::string_view::npos) new_line_ = true;
  return sse_data(native_json_text(Json{{"index", 0},
                                        {"content", text},
                                        {"tokens", Json::array()},
                                        {"stop", false},
                                        {"id_slot", -1},
                                        {"tokens_predicted", predicted_},
                                        {"tokens_evaluated", prompt_tokens_},
                                        {"id", header_.id}}));
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
                                     FinishReason finish, const Usage& usage, const LogprobsPiece*,
                                     std::string_view, std::string_view stop) {
  Json object = final_object(text, finish, usage, stop);
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
