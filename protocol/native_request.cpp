#include "protocol/native_request.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "protocol/generation_fields.h"
#include "protocol/native_samplers.h"
#include "protocol/request_fields.h"

namespace tandem {
namespace {

using request_fields::element_param;
using request_fields::find_field;
using request_fields::Json;
using request_fields::read_integer;
using request_fields::read_string;
using request_fields::reject;
using request_fields::require_array;
using request_fields::require_object;

// llama-server's defaults for the sampling fields a body leaves out (common_params_sampling).
constexpr double kDefaultTemperature = 0.8, kDefaultTopP = 0.95, kDefaultMinP = 0.05;
constexpr int kDefaultTopK = 40;
// LLAMA_DEFAULT_SEED: llama-server draws a seed for it, as for -1.
constexpr uint64_t kLlamaDefaultSeed = 0xFFFFFFFFu;

// Read here, in llama-server's terms; everything else goes on to the completion parser.
// `model` is not read at all: llama-server ignores it, and a proxy's model name (llama-swap)
// must not turn a plugin's request into a 404.
const std::set<std::string> kNativeFields = {"prompt",
                                             "n_predict",
                                             "max_tokens",
                                             "seed",
                                             "samplers",
                                             "n_indent",
                                             "t_max_predict_ms",
                                             "t_max_prompt_ms",
                                             "response_fields",
                                             "logit_bias",
                                             "n_keep",
                                             "n_discard",
                                             "timings_per_token",
                                             "input_prefix",
                                             "input_suffix",
                                             "input_extra",
                                             "n",
                                             "echo",
                                             "logprobs",
                                             "stream_options",
                                             "suffix",
                                             "n_probs",
                                             "post_sampling_probs",
                                             "return_tokens",
                                             "model"};

// The output limit: n_predict, else max_tokens (-1: none). nullopt: until EOS or the context.
std::optional<int32_t> read_limit(const Json& body, ParamRenames& renames) {
  for (const char* name : {"n_predict", "max_tokens"}) {
    const Json* value = find_field(body, name);
    if (value == nullptr) continue;
    renames.emplace_back("max_tokens", name);
    const int64_t limit = read_integer(*value, name, -1, kMaxTokensLimit);
    if (limit < 0) return std::nullopt;
    return static_cast<int32_t>(limit);
  }
  return std::nullopt;
}

// A bias of false is llama-server's ban: the completion parser's -100.
bool is_ban(const Json& bias) { return bias.is_boolean() && !bias.get<bool>(); }

// llama-server's logit_bias as a list of [token id, bias or false] pairs, or OpenAI's object
// (false a ban in either); the completion parser reads the object, and checks its values.
Json read_logit_bias(const Json& value) {
  if (value.is_object()) {
    Json object = value;
    for (auto& [id, bias] : object.items()) {
      if (is_ban(bias)) bias = -100;
    }
    return object;
  }
  const Json& pairs = require_array(value, "logit_bias");
  Json object = Json::object();
  for (size_t i = 0; i < pairs.size(); ++i) {
    const std::string param = element_param("logit_bias", i);
    const Json& pair = require_array(pairs[i], param);
    if (pair.size() != 2 || !pair[0].is_number_integer()) {
      reject("Invalid value for '" + param +
                 "': expected [token id, bias] (a token given as text is not supported).",
             param);
    }
    const Json& bias = pair[1];
    if (is_ban(bias)) {
      object[pair[0].dump()] = -100;
    } else if (bias.is_number()) {
      object[pair[0].dump()] = std::clamp(bias.get<double>(), -100.0, 100.0);
    } else {
      reject("Invalid value for '" + param + "': the bias must be a number or false.", param);
    }
  }
  return object;
}

void read_infill_inputs(const Json& body, NativeRequest& out) {
  InfillInputs& text = out.infill_inputs;
  if (const Json* v = find_field(body, "input_prefix"))
    text.prefix = read_string(*v, "input_prefix");
  if (const Json* v = find_field(body, "input_suffix"))
    text.suffix = read_string(*v, "input_suffix");
  if (const Json* v = find_field(body, "prompt")) text.prompt = read_string(*v, "prompt");
  const Json* extra = find_field(body, "input_extra");
  if (extra == nullptr) return;
  const Json& chunks = require_array(*extra, "input_extra");
  for (size_t i = 0; i < chunks.size(); ++i) {
    const std::string param = element_param("input_extra", i);
    const Json& chunk = require_object(chunks[i], param);
    InfillChunk& item = text.extra.emplace_back();  // filename "tmp" where the item has none
    if (const Json* name = find_field(chunk, "filename"))
      item.filename = read_string(*name, param + ".filename");
    const Json* chunk_text = find_field(chunk, "text");
    if (chunk_text == nullptr) reject("'" + param + ".text' is required.", param + ".text");
    item.text = read_string(*chunk_text, param + ".text");
  }
}

void refuse_other_endpoints_fields(const Json& body, bool infill) {
  const char* where = infill ? "/infill" : "/completion";
  for (const char* name : {"n", "echo", "stream_options", "suffix"}) {
    const Json* value = find_field(body, name);
    if (value == nullptr || (std::string(name) == "n" && *value == 1)) continue;
    reject("'" + std::string(name) + "' is not read on " + where +
               " (llama-server's API); send it to /v1/completions.",
           name);
  }
  if (!infill) {
    for (const char* name : {"input_prefix", "input_suffix", "input_extra"}) {
      if (find_field(body, name) != nullptr) {
        reject("'" + std::string(name) + "' is read on /infill only.", name);
      }
    }
  }
}

void read_line_limits(const Json& body, NativeRequest& out) {
  if (const Json* indent = find_field(body, "n_indent")) {
    out.min_indent = static_cast<int32_t>(read_integer(*indent, "n_indent", 0, 1 << 20));
  }
  if (const Json* limit = find_field(body, "t_max_predict_ms")) {
    const float ms = request_fields::read_float(*limit, "t_max_predict_ms");
    if (!std::isfinite(ms) || ms > 1e9f) {
      reject("Invalid value for 't_max_predict_ms': expected a number of milliseconds.",
             "t_max_predict_ms");
    }
    out.time_limit_ms = ms > 0 ? ms : 0;
  }
  // n_keep and n_discard steer llama-server's context shift, which this server never does
  // (it ends at the context, as llama-server without the shift): checked, not used. So is
  // t_max_prompt_ms, which llama-server reads but does not apply.
  for (const char* name : {"n_keep", "n_discard"}) {
    if (const Json* v = find_field(body, name)) read_integer(*v, name, -1, 1 << 30);
  }
  if (const Json* v = find_field(body, "t_max_prompt_ms")) {
    request_fields::read_float(*v, "t_max_prompt_ms");
  }
  if (const Json* fields = find_field(body, "response_fields")) {
    const Json& list = require_array(*fields, "response_fields");
    for (size_t i = 0; i < list.size(); ++i) {
      out.response_fields.push_back(read_string(list[i], element_param("response_fields", i)));
    }
  }
}

// n_probs: the k most likely tokens at each step, llama-server's completion_probabilities
// (the same raw log-softmax as /v1/completions' logprobs: k). llama-server also reads an
// OpenAI-style `logprobs` count here where n_probs is absent (SillyTavern sends both).
std::optional<int64_t> read_n_probs(const Json& body) {
  std::optional<int64_t> n_probs, logprobs;
  if (const Json* value = find_field(body, "n_probs"))
    n_probs = request_fields::read_integer(*value, "n_probs", 0, kMaxNativeProbs);
  if (const Json* value = find_field(body, "logprobs"))
    logprobs = request_fields::read_integer(*value, "logprobs", 0, kMaxNativeProbs);
  // llama-server reads logprobs where n_probs is left at its default (0).
  if (!n_probs || *n_probs == 0) return logprobs ? logprobs : n_probs;
  if (logprobs && *logprobs != *n_probs) {
    reject(
        "'logprobs' and 'n_probs' both count the alternatives per token and differ; send "
        "'n_probs'.",
        "logprobs");
  }
  return n_probs;
}

// The /v1/completions body the native one amounts to.
// n_probs: read_n_probs's count.
Json completion_body(const Json& body, bool infill, std::optional<int64_t> n_probs,
                     request_fields::SamplerChain& chain) {
  Json completion = Json::object();
  for (const auto& [name, value] : body.items()) {
    if (!kNativeFields.contains(name)) completion[name] = value;
  }
  if (infill) {
    completion["prompt"] = Json::array({0});  // the server puts the FIM prompt in its place
  } else {
    const Json* prompt = find_field(body, "prompt");
    if (prompt != nullptr && prompt->is_array() && !prompt->empty() &&
        !prompt->front().is_number_integer()) {
      reject(
          "'prompt' on /completion is one prompt (text or token ids) here; send lists of "
          "prompts to /v1/completions.",
          "prompt");
    }
    if (prompt != nullptr) completion["prompt"] = *prompt;
  }
  if (const Json* seed = find_field(body, "seed")) {
    const bool draw = (seed->is_number_integer() && seed->get<int64_t>() == -1) ||
                      (seed->is_number_unsigned() && seed->get<uint64_t>() == kLlamaDefaultSeed);
    if (!draw) completion["seed"] = *seed;
  }
  if (const Json* bias = find_field(body, "logit_bias"))
    completion["logit_bias"] = read_logit_bias(*bias);
  // The completion parser holds OpenAI's bound; the count is set after it (parse_native_request).
  if (n_probs && *n_probs > 0) completion["logprobs"] = std::min<int64_t>(*n_probs, kMaxLogprobs);
  if (!completion.contains("temperature")) completion["temperature"] = kDefaultTemperature;
  if (!completion.contains("top_k")) completion["top_k"] = kDefaultTopK;
  if (!completion.contains("top_p")) completion["top_p"] = kDefaultTopP;
  if (!completion.contains("min_p")) completion["min_p"] = kDefaultMinP;
  chain = request_fields::apply_sampler_chain(body, completion);
  // llama-server's penalties are llama.cpp's, over its window (64 unless sent).
  if (!completion.contains("repeat_last_n") && !completion.contains("penalty_last_n")) {
    completion["repeat_last_n"] = request_fields::kLlamaDefaultPenaltyLastN;
  }
  return completion;
}

Json settings_of(const NativeRequest& native, const Json& body) {
  const CompletionRequest& r = native.request;
  const SamplingParams& s = r.sampling;
  Json settings{
      {"n_predict", r.max_tokens ? *r.max_tokens : -1},
      {"temperature", s.temperature},
      {"dynatemp_range", s.dynatemp_range},
      {"dynatemp_exponent", s.dynatemp_exponent},
      {"top_k", s.top_k},
      {"top_p", s.top_p},
      {"min_p", s.min_p},
      {"top_n_sigma", s.top_n_sigma},
      {"typical_p", s.typical_p},
      {"presence_penalty", s.presence_penalty},
      {"frequency_penalty", s.frequency_penalty},
      {"repetition_penalty", s.repetition_penalty},
      {"repeat_penalty", s.repetition_penalty},
      {"repeat_last_n", s.penalty_last_n == SamplingParams::kWholeHistory ? -1 : s.penalty_last_n},
      {"xtc_probability", s.xtc_probability},
      {"xtc_threshold", s.xtc_threshold},
      {"dry_multiplier", s.dry_multiplier},
      {"dry_base", s.dry_base},
      {"dry_allowed_length", s.dry_allowed_length},
      {"dry_penalty_last_n", s.dry_last_n == SamplingParams::kWholeHistory ? -1 : s.dry_last_n},
      {"dry_sequence_breakers", r.dry_sequence_breakers},
      {"mirostat", s.mirostat},
      {"mirostat_tau", s.mirostat_tau},
      {"mirostat_eta", s.mirostat_eta},
      {"ignore_eos", s.ignore_eos},
      {"stop", r.stop},
      {"stream", r.stream},
      {"n_indent", native.min_indent},
      {"t_max_predict_ms", native.time_limit_ms > 0 ? native.time_limit_ms : -1.0},
      {"n_probs", std::max(0, s.logprobs)},
      {"post_sampling_probs", s.post_sampling_probs}};
  settings["samplers"] = request_fields::sampler_chain_names(body);
  return settings;
}

}  // namespace

void report_windows_as_context(nlohmann::ordered_json& settings, int32_t context_length) {
  for (const char* window : {"repeat_last_n", "dry_penalty_last_n"}) {
    if (settings.contains(window) && settings[window] == -1) settings[window] = context_length;
  }
}

std::variant<NativeRequest, ApiError> parse_native_request(std::string_view text, bool infill) {
  NativeRequest out;
  out.infill = infill;
  try {
    const Json body = request_fields::parse_body_object(text);
    refuse_other_endpoints_fields(body, infill);
    const std::optional<int32_t> limit = read_limit(body, out.renames);
    if (infill) read_infill_inputs(body, out);
    read_line_limits(body, out);
    if (const Json* per_token = find_field(body, "timings_per_token"))
      out.timings_per_token = request_fields::read_bool(*per_token, "timings_per_token");
    request_fields::SamplerChain chain;
    const std::optional<int64_t> n_probs = read_n_probs(body);
    Json completion = completion_body(body, infill, n_probs, chain);
    // min_tokens is checked against it; 0 (nothing generated) is set after.
    completion["max_tokens"] = limit && *limit > 0 ? *limit : kMaxTokensLimit;
    auto read = parse_completion_request(completion.dump(), Endpoint::kCompletions);
    if (auto* error = std::get_if<ApiError>(&read)) {
      return renamed_params(std::move(*error), out.renames);
    }
    out.request = std::move(std::get<CompletionRequest>(read));
    chain.apply_to(out.request.sampling);
    out.request.max_tokens = limit;
    if (n_probs && *n_probs > 0) out.request.sampling.logprobs = static_cast<int32_t>(*n_probs);
    if (const Json* post = find_field(body, "post_sampling_probs")) {
      out.request.sampling.post_sampling_probs =
          request_fields::read_bool(*post, "post_sampling_probs");
    }
    if (const Json* tokens = find_field(body, "return_tokens"))
      out.return_tokens = request_fields::read_bool(*tokens, "return_tokens");
    out.settings = settings_of(out, body);
    return out;
  } catch (const request_fields::RequestRejected& rejected) {
    return rejected.error;
  }
}

}  // namespace tandem
