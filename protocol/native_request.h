// llama-server's own completion API: POST /completion (also /completions) and POST /infill,
// the fill-in-the-middle request that editor plugins (llama.vscode, llama.vim) send for code
// completion. Each is read as the /v1/completions request it amounts to, so the scheduler,
// the sampler and every law hold unchanged, in llama-server's terms:
// - `n_predict` is the output limit (absent or -1: until EOS or the context; 0: the prompt is
//   processed and nothing generated, as llama.vscode warms its cache); `max_tokens` is read
//   where n_predict is absent, as llama-server reads it;
// - the sampling fields default to llama-server's values (temperature 0.8, top_k 40,
//   top_p 0.95, min_p 0.05); a `seed` of -1 is "draw one", as llama-server's default;
// - `samplers` (names or llama.cpp's letters; absent: llama-server's default chain) names
//   the filters that apply, in their order: one it leaves out is off (temperature left out
//   is 1), `infill` turns on llama.cpp's infill filter, and an order the sampler has no form
//   for is refused by name (native_samplers.cpp);
// - /infill: `input_prefix`, `input_suffix`, `input_extra` ([{filename, text}]) and
//   `prompt` (text after the prefix, before the hole) become the FIM prompt, which the
//   server builds from the model's FIM tokens; `n_indent` and `t_max_predict_ms` are
//   scheduler/line_limits.h's limits;
// - `response_fields` picks the whole answer's fields by path ("timings/prompt_n"), as
//   llama-server does.
// Errors name the fields the client sent (n_predict, not max_tokens). Not thread-safe state:
// plain values.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "protocol/api_error.h"
#include "protocol/completion_request.h"
#include "protocol/infill_inputs.h"
#include "protocol/responses_api_request.h"  // ParamRenames

namespace tandem {

struct NativeRequest {
  // endpoint kCompletions, n 1. For /infill the prompt is a placeholder the server
  // replaces with the FIM prompt's tokens.
  CompletionRequest request;
  ParamRenames renames;
  bool infill = false;
  InfillInputs infill_inputs;  // /infill's, which the server tokenizes into the FIM prompt
  int32_t min_indent = 0;      // n_indent
  double time_limit_ms = 0;    // t_max_predict_ms (<= 0: none)
  // timings_per_token: each streamed piece carries the timings so far (the last one always
  // does).
  bool timings_per_token = false;
  // return_tokens: the whole answer's `tokens` lists the generated token ids (streamed
  // pieces always list theirs, as llama-server's do).
  bool return_tokens = false;
  // response_fields: the whole answer's fields to keep, by path; empty: all.
  std::vector<std::string> response_fields;
  // The settings as the answer's generation_settings repeats them.
  nlohmann::ordered_json settings;
};

// infill: the body of /infill, else of /completion.
std::variant<NativeRequest, ApiError> parse_native_request(std::string_view body, bool infill);

// llama-server reports a whole-history window (repeat_last_n, dry_penalty_last_n: -1) as
// the context it spans: settings' -1 windows become context_length.
void report_windows_as_context(nlohmann::ordered_json& settings, int32_t context_length);

}  // namespace tandem
