// The answer of llama-server's own API (/completion, /infill) in its shape: the whole object
// {index, content, tokens, id_slot, stop, model, tokens_predicted, tokens_evaluated,
// generation_settings, prompt, has_new_line, truncated, stop_type, stopping_word,
// tokens_cached, timings} (tokens: the generated ids with return_tokens, else empty), or
// streamed as `data: {...}` lines, one per piece of text ({index, content, tokens: the ids
// of the tokens that made it, stop: false, id_slot, tokens_predicted: the tokens that made
// the pieces so far, tokens_evaluated: the prompt's length}, as llama-server's partial
// chunks; tokens that made no text get a piece with an empty content), then the final
// object with an empty content, tokens [] and stop: true (response_fields apply to it); no
// [DONE] (llama-server sends none on these routes).
//
// stop_type: "eos" (end of generation), "word" (a stop string, in stopping_word), "limit"
// (n_predict, the context, n_indent or t_max_predict_ms). timings are the server's clock:
// prompt_ms from the request's acceptance to its first output (queueing included),
// predicted_ms from there to the end; prompt_n counts the prompt tokens computed, cache_n
// those the prefix cache held. With n_probs, each piece and the whole object carry
// completion_probabilities (logprobs.h's llama_probabilities_json: the model's logprob and
// top_logprobs, or with post_sampling_probs the draw's prob and top_probs). tokens_cached is the
// sequence's length in the cache at the end (the prompt and the output but its last token), as
// llama-server's n_past. response_fields keeps only the named paths of the whole object
// ("timings/prompt_n" names a member of timings), each under its path, as llama-server does.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "protocol/single_output_writer.h"

namespace tandem {

class NativeWriter final : public SingleOutputWriter {
 public:
  using Json = nlohmann::ordered_json;
  // prompt: the prompt's text (special tokens shown) and its length in tokens; settings:
  // generation_settings.
  // timings_per_token: each streamed piece carries the timings so far too. return_tokens:
  // the whole object's tokens lists every generated id (each streamed piece always lists
  // those that made it, and the final streamed object none, as llama-server's).
  NativeWriter(ResponseHeader header, std::string prompt, int64_t prompt_tokens, Json settings,
               std::vector<std::string> response_fields, bool timings_per_token = false,
               bool return_tokens = false);

  void output_seen(int32_t tokens) override;
  void tokens_seen(std::span<const int32_t> ids) override;
  std::string prompt_cached(int64_t tokens) override {
    cached_ = tokens;
    return {};
  }
  std::string opening_events() override { return {}; }
  std::string text_events(std::string_view text, const LogprobsPiece* logprobs) override;
  std::string reasoning_events(std::string_view text) override;
  std::string closing_events(std::span<const ToolCallOut> calls, FinishReason finish,
                             const Usage& usage, std::string_view stop = {}) override;
  std::string error_events(const ApiError& error) override;
  std::string whole_body(std::string_view text, std::span<const ToolCallOut> calls,
                         FinishReason finish, const Usage& usage, const LogprobsPiece* logprobs,
                         std::string_view reasoning = {}, std::string_view stop = {}) override;

 private:
  using Clock = std::chrono::steady_clock;
  Json final_object(std::string_view content, Json tokens, FinishReason finish, const Usage& usage,
                    std::string_view stop) const;
  Json timings(const Usage& usage) const;
  // The tokens accepted so far: those whose text was seen, or every id where ids come.
  int64_t predicted() const {
    return std::max<int64_t>(predicted_, static_cast<int64_t>(ids_.size()));
  }

  ResponseHeader header_;
  std::string prompt_;
  Json settings_;
  std::vector<std::string> response_fields_;
  Clock::time_point accepted_;
  std::optional<Clock::time_point> first_output_;
  bool new_line_ = false;  // streamed: a newline was sent
  int64_t prompt_tokens_ = 0;
  int64_t predicted_ = 0;  // the tokens that made the pieces so far
  int64_t cached_ = 0;     // the prompt tokens the prefix cache held
  bool timings_per_token_ = false;
  bool return_tokens_ = false;
  std::vector<int32_t> ids_;  // every id seen
  size_t ids_streamed_ = 0;   // the first ones, which streamed pieces listed
};

// Keeps the paths of `object` that `paths` names ("a/b": member b of member a), each under
// its path; a path that names nothing is left out. As llama-server's response_fields.
nlohmann::ordered_json pick_fields(const nlohmann::ordered_json& object,
                                   const std::vector<std::string>& paths);

}  // namespace tandem
