#include "protocol/completion_request.h"

#include <cmath>
#include <limits>
#include <map>
#include <utility>

#include "protocol/chat_messages.h"
#include "protocol/generation_fields.h"
#include "protocol/native_samplers.h"
#include "protocol/output_constraint_fields.h"
#include "protocol/request_fields.h"
#include "protocol/responses.h"
#include "protocol/tool_calls/tool_fields.h"
#include "protocol/unsupported_fields.h"

namespace tandem {
namespace {

using request_fields::element_param;
using request_fields::find_field;
using request_fields::Json;
using request_fields::read_bool;
using request_fields::read_float;
using request_fields::read_integer;
using request_fields::read_string;
using request_fields::reject;

void read_prompt(const Json& body, CompletionRequest& request) {
  const Json* prompt = find_field(body, "prompt");
  if (prompt == nullptr) reject("'prompt' is required.", "prompt");
  if (prompt->is_string()) {
    request.prompt_text = prompt->get<std::string>();
    if (request.prompt_text.empty()) reject("'prompt' must not be empty.", "prompt");
    return;
  }
  if (!prompt->is_array()) {
    reject("Invalid type for 'prompt': expected a string or an array of token ids, but got " +
               request_fields::describe_type(*prompt) + ".",
           "prompt");
  }
  if (prompt->empty()) reject("'prompt' must not be empty.", "prompt");
  const Json& first = prompt->front();
  if (first.is_string() || first.is_array()) {
    // A batch of prompts, all of one kind: texts or token id lists.
    if (prompt->size() > kMaxPrompts) {
      reject("'prompt' may hold at most " + std::to_string(kMaxPrompts) + " prompts, got " +
                 std::to_string(prompt->size()) + ".",
             "prompt");
    }
    for (size_t i = 0; i < prompt->size(); ++i) {
      const Json& one = (*prompt)[i];
      const std::string param = element_param("prompt", i);
      if (first.is_string()) {
        std::string text = read_string(one, param);
        if (text.empty()) reject("'prompt' must not be empty.", param);
        (i == 0 ? request.prompt_text : request.more_prompt_texts.emplace_back()) = std::move(text);
      } else {
        std::vector<int32_t> ids = request_fields::read_token_ids(one, param);
        if (ids.empty()) reject("'prompt' must not be empty.", param);
        (i == 0 ? request.prompt_tokens : request.more_prompt_tokens.emplace_back()) =
            std::move(ids);
      }
    }
    return;
  }
  request.prompt_tokens = request_fields::read_token_ids(*prompt, "prompt");
}

void read_max_tokens(const Json& body, CompletionRequest& request) {
  // Scoring a prompt (echo with max_tokens 0) generates nothing: lm-evaluation-harness asks so.
  const Json* echo =
      request.endpoint == Endpoint::kCompletions ? find_field(body, "echo") : nullptr;
  const int64_t least = echo != nullptr && echo->is_boolean() && echo->get<bool>() ? 0 : 1;
  if (request.endpoint == Endpoint::kCompletions) {
    request.max_tokens = kDefaultCompletionMaxTokens;
  }
  // max_completion_tokens is OpenAI's newer name; when both are given it wins (as in vLLM),
  // and both are checked. Read last, so it is the one kept.
  for (const char* name : {"max_tokens", "max_completion_tokens"}) {
    const Json* value = find_field(body, name);
    if (value == nullptr) continue;
    if (value->is_number_integer() && !value->is_number_unsigned()) {
      const int64_t signed_value = value->get<int64_t>();
      // llama-server's "no limit" (until EOS or the context), which llama.cpp's web UI
      // sends with every chat.
      if (signed_value == -1) {
        request.max_tokens = std::nullopt;
        continue;
      }
      if (signed_value < least) {
        reject("'" + std::string(name) + "' must be -1 (no limit) or an integer in [" +
                   std::to_string(least) + ", " + std::to_string(kMaxTokensLimit) + "], got " +
                   value->dump() + ".",
               name);
      }
    }
    request.max_tokens = static_cast<int32_t>(read_integer(*value, name, least, kMaxTokensLimit));
  }
}

float read_float_in(const Json& body, const char* name, float fallback, float low, bool low_open,
                    float high, const char* range_text) {
  const Json* value = find_field(body, name);
  if (value == nullptr) return fallback;
  const float v = read_float(*value, name);
  // The range holds the value sent, not its float (-1e-300 rounds to -0, inside [0, 1]).
  const double sent = value->get<double>();
  const bool above_low = low_open ? sent > low : sent >= low;
  if (!above_low || sent > high) {
    reject("Invalid value for '" + std::string(name) + "': expected a number " + range_text +
               ", got " + value->dump() + ".",
           name);
  }
  return v;
}

void read_logit_bias(const Json& body, SamplingParams& sampling) {
  const Json* bias = find_field(body, "logit_bias");
  if (bias == nullptr) return;
  if (!bias->is_object()) {
    reject("Invalid type for 'logit_bias': expected an object mapping token ids to biases, " +
               std::string("but got ") + request_fields::describe_type(*bias) + ".",
           "logit_bias");
  }
  std::map<int32_t, float> by_id;  // sorted, so equal requests give equal params
  for (const auto& [key, value] : bias->items()) {
    bool digits = !key.empty() && key.size() <= 10;
    for (char c : key) digits = digits && c >= '0' && c <= '9';
    int64_t id = digits ? std::stoll(key) : -1;
    if (id < 0 || id > std::numeric_limits<int32_t>::max()) {
      reject("Invalid key in 'logit_bias': '" + key.substr(0, 32) +
                 "' is not a token id (a non-negative integer).",
             "logit_bias");
    }
    float v = read_float(value, "logit_bias");
    if (v < -100.0f || v > 100.0f) {
      reject("Invalid value in 'logit_bias' for token " + key + ": expected a number in " +
                 "[-100, 100], got " + value.dump() + ".",
             "logit_bias");
    }
    by_id[static_cast<int32_t>(id)] = v;
  }
  sampling.logit_bias.assign(by_id.begin(), by_id.end());
}

std::optional<uint64_t> read_seed(const Json& body) {
  const Json* seed = find_field(body, "seed");
  if (seed == nullptr) return std::nullopt;
  if (seed->is_number_unsigned()) return seed->get<uint64_t>();
  if (seed->is_number_integer()) return static_cast<uint64_t>(seed->get<int64_t>());
  if (seed->is_number_float()) {
    double v = seed->get<double>();
    if (std::isfinite(v) && v == std::floor(v) && v >= -0x1p63 && v < 0x1p64) {
      return v < 0 ? static_cast<uint64_t>(static_cast<int64_t>(v)) : static_cast<uint64_t>(v);
    }
  }
  reject(
      "Invalid value for 'seed': expected an integer in [-2^63, 2^64), got " + seed->dump() + ".",
      "seed");
}

void read_stop(const Json& body, CompletionRequest& request) {
  const Json* stop = find_field(body, "stop");
  if (stop == nullptr) return;
  if (stop->is_string()) {
    if (!stop->get_ref<const std::string&>().empty())
      request.stop.push_back(stop->get<std::string>());
    return;
  }
  if (!stop->is_array()) {
    reject("Invalid type for 'stop': expected a string or an array of strings, but got " +
               request_fields::describe_type(*stop) + ".",
           "stop");
  }
  const size_t most =
      request.endpoint == Endpoint::kMessages ? kMaxMessagesStopSequences : kMaxStopSequences;
  if (stop->size() > most) {
    reject("'stop' may hold at most " + std::to_string(most) + " sequences, got " +
               std::to_string(stop->size()) + ".",
           "stop");
  }
  for (size_t i = 0; i < stop->size(); ++i) {
    const std::string& sequence = read_string((*stop)[i], element_param("stop", i));
    if (!sequence.empty()) request.stop.push_back(sequence);
  }
}

void read_reasoning_format(const Json& body, CompletionRequest& request) {
  const Json* format = find_field(body, "reasoning_format");
  if (format == nullptr || !is_chat(request.endpoint)) return;  // completions: refused if set
  const std::string& value = read_string(*format, "reasoning_format");
  if (value != "none" && value != "deepseek" && value != "auto") {
    reject("Invalid value for 'reasoning_format': '" + value +
               "'; expected \"none\", \"deepseek\" or \"auto\".",
           "reasoning_format");
  }
  request.split_reasoning = value != "none";
}

void read_streaming(const Json& body, CompletionRequest& request) {
  if (const Json* stream = find_field(body, "stream"))
    request.stream = read_bool(*stream, "stream");
  const Json* options = find_field(body, "stream_options");
  if (options == nullptr) return;
  if (!request.stream) {
    reject("'stream_options' is only allowed when 'stream' is true.", "stream_options");
  }
  request_fields::require_object(*options, "stream_options");
  if (const Json* usage = find_field(*options, "include_usage")) {
    request.include_usage = read_bool(*usage, "stream_options.include_usage");
  }
}

// tools reach the chat template whatever tool_choice says (as vLLM renders them); a
// required or named call constrains the output, so it cannot stand beside another constraint.
// Under "auto" another constraint stands beside the tools: a JSON format's answer is a call
// or the shaped message (server/tool_grammar.h, compile_call_or_answer_grammar), a client's
// grammar or regex holds the output alone. Agents rely on it: the Agents SDK's agent with
// tools and an output type sends tools, "auto" and the format.
void read_tools(const Json& body, CompletionRequest& request) {
  request.tools = request_fields::read_tool_request(body);
  request.chat.tools = request.tools.definitions;
  if (request.tools.constrains() && request.constraint.active()) {
    reject("'tool_choice' " +
               std::string(request.tools.choice.mode == ToolChoice::Mode::kRequired
                               ? "'required'"
                               : "naming a function") +
               " and '" + request.constraint.param +
               "' both constrain the output; send one of them.",
           "tool_choice");
  }
}

CompletionRequest read_request(const Json& body, Endpoint endpoint) {
  CompletionRequest request;
  request.endpoint = endpoint;
  if (const Json* model = find_field(body, "model")) request.model = read_string(*model, "model");
  if (endpoint == Endpoint::kCompletions) {
    read_prompt(body, request);
    if (const Json* add = find_field(body, "add_special_tokens")) {
      request.add_special_tokens = read_bool(*add, "add_special_tokens");
    }
  } else {
    request.chat = request_fields::read_chat_inputs(body);
    request.add_special_tokens = false;  // true is refused with the unimplemented fields
  }
  read_max_tokens(body, request);
  if (const Json* n = find_field(body, "n")) {
    request.n = static_cast<int32_t>(read_integer(*n, "n", 1, kMaxChoices));
  }

  SamplingParams& sampling = request.sampling;
  sampling.temperature = read_float_in(body, "temperature", 1.0f, 0.0f, false,
                                       std::numeric_limits<float>::max(), ">= 0");
  sampling.top_p = read_float_in(body, "top_p", 1.0f, 0.0f, true, 1.0f, "in (0, 1]");
  sampling.min_p = read_float_in(body, "min_p", 0.0f, 0.0f, false, 1.0f, "in [0, 1]");
  sampling.typical_p = read_float_in(body, "typical_p", 1.0f, 0.0f, false, 1.0f, "in [0, 1]");
  // llama.cpp's dynamic temperature (llama-server's fields and defaults).
  sampling.dynatemp_range = read_float_in(body, "dynatemp_range", 0.0f, 0.0f, false,
                                          std::numeric_limits<float>::max(), ">= 0");
  sampling.dynatemp_exponent = read_float_in(body, "dynatemp_exponent", 1.0f, 0.0f, false,
                                             std::numeric_limits<float>::max(), ">= 0");
  if (sampling.dynatemp_range > 0.0f && !(sampling.temperature > 0.0f)) {
    reject(
        "'dynatemp_range' needs a temperature above 0 here (temperature 0 is greedy); send "
        "the temperature the range is around.",
        "dynatemp_range");
  }
  // llama.cpp's top-n-sigma: any number, <= 0 (llama-server's default -1) is off.
  if (const Json* sigma = find_field(body, "top_n_sigma")) {
    sampling.top_n_sigma = read_float(*sigma, "top_n_sigma");
    // A positive value too small for a float stays on rather than rounding to off.
    if (sampling.top_n_sigma == 0.0f && sigma->get<double>() > 0.0) {
      sampling.top_n_sigma = std::numeric_limits<float>::denorm_min();
    }
  }
  // llama.cpp's XTC (llama-server's fields and defaults; a threshold above 0.5 turns it off).
  sampling.xtc_probability =
      read_float_in(body, "xtc_probability", 0.0f, 0.0f, false, 1.0f, "in [0, 1]");
  sampling.xtc_threshold =
      read_float_in(body, "xtc_threshold", 0.1f, 0.0f, false, 1.0f, "in [0, 1]");
  if (const Json* top_k = find_field(body, "top_k")) {
    int64_t k = read_integer(*top_k, "top_k", -1, std::numeric_limits<int32_t>::max());
    sampling.top_k = k < 0 ? 0 : static_cast<int32_t>(k);  // -1 is vLLM's "off"
  }
  read_logit_bias(body, sampling);
  if (const Json* ignore_eos = find_field(body, "ignore_eos")) {
    sampling.ignore_eos = read_bool(*ignore_eos, "ignore_eos");
  }
  request.seed = read_seed(body);
  read_stop(body, request);
  request_fields::read_generation_controls(body, request);
  read_streaming(body, request);
  // OpenAI's safety_identifier replaces user; recorded the same way where user is absent.
  if (const Json* user = find_field(body, "safety_identifier")) {
    request.user = read_string(*user, "safety_identifier");
  }
  if (const Json* user = find_field(body, "user")) request.user = read_string(*user, "user");
  if (const Json* id = find_field(body, "request_id")) {
    request.request_id = read_string(*id, "request_id");
    if (!is_client_request_id(request.request_id))
      reject("'request_id' must be 1 to 128 visible ASCII characters.", "request_id");
  }
  if (const Json* salt = find_field(body, "cache_salt")) {
    request.cache_salt = read_string(*salt, "cache_salt");
    if (request.cache_salt.empty())  // as vLLM: an empty salt is a mistake, not the default
      reject("'cache_salt' must be a non-empty string when given.", "cache_salt");
  }
  request_fields::reject_unimplemented_fields(body, endpoint);
  read_reasoning_format(body, request);
  request.constraint = request_fields::read_output_constraint(body);
  if (is_chat(endpoint)) read_tools(body, request);
  if (request.constraint.active() || request.tools.constrains()) {
    // The grammar decides where the output ends: end-of-generation is allowed exactly where
    // it accepts, so a ban on it cannot be honoured.
    const std::string by =
        request.constraint.active() ? request.constraint.param : std::string("tool_choice");
    if (sampling.ignore_eos) {
      reject("'ignore_eos' cannot be combined with '" + by +
                 "': the grammar decides where the output ends.",
             "ignore_eos");
    }
    if (sampling.min_tokens > 0) {
      reject("'min_tokens' cannot be combined with '" + by +
                 "': the grammar decides where the output ends.",
             "min_tokens");
    }
  }
  return request;
}

}  // namespace

std::variant<CompletionRequest, ApiError> parse_completion_request(std::string_view body,
                                                                   Endpoint endpoint) {
  try {
    Json parsed = request_fields::parse_body_object(body);
    // llama-server's `samplers`, which llama.cpp's web UI sends with every chat: the chain
    // becomes the fields and the sampler's order flags it amounts to, as on /completion
    // (native_samplers.h). Without it the order is vLLM's.
    std::optional<request_fields::SamplerChain> chain;
    if (find_field(parsed, "samplers") != nullptr) {
      Json applied = parsed;
      chain = request_fields::apply_sampler_chain(parsed, applied);
      applied.erase("samplers");
      parsed = std::move(applied);
    }
    CompletionRequest request = read_request(parsed, endpoint);
    if (chain) chain->apply_to(request.sampling);
    return request;
  } catch (const request_fields::RequestRejected& rejected) {
    return rejected.error;
  }
}

std::optional<ApiError> check_token_ids(const CompletionRequest& request, int32_t vocab_size) {
  const std::string range = " is outside the vocabulary [0, " + std::to_string(vocab_size) + ").";
  for (size_t p = 0; p < request.prompt_count() && request.has_prompt_tokens(); ++p) {
    const std::vector<int32_t>& ids =
        p == 0 ? request.prompt_tokens : request.more_prompt_tokens[p - 1];
    const std::string where = request.more_prompt_tokens.empty()
                                  ? std::string("prompt[")
                                  : "prompt[" + std::to_string(p) + "][";
    for (size_t i = 0; i < ids.size(); ++i) {
      if (ids[i] >= vocab_size) {
        return bad_request(
            "Token id " + std::to_string(ids[i]) + " at " + where + std::to_string(i) + "]" + range,
            "prompt");
      }
    }
  }
  for (const auto& [id, bias] : request.sampling.logit_bias) {
    if (id >= vocab_size) {
      return bad_request("Token id " + std::to_string(id) + " in 'logit_bias'" + range,
                         "logit_bias");
    }
  }
  for (int32_t id : request.sampling.stop_token_ids) {
    if (id >= vocab_size) {
      return bad_request("Token id " + std::to_string(id) + " in 'stop_token_ids'" + range,
                         "stop_token_ids");
    }
  }
  return std::nullopt;
}

std::optional<ApiError> check_prompt_length(size_t prompt_tokens, int32_t context_length,
                                            Endpoint endpoint, bool generates) {
  const char* param = prompt_param(endpoint);
  if (prompt_tokens == 0) return bad_request("The prompt encodes to no tokens.", param);
  const auto context = static_cast<size_t>(context_length);
  // Anthropic's words, which its clients read (Claude Code compacts its history on them).
  const size_t most = generates ? context - 1 : context;
  if (endpoint == Endpoint::kMessages && prompt_tokens > most) {
    return context_length_exceeded("prompt is too long: " + std::to_string(prompt_tokens) +
                                       " tokens > " + std::to_string(most) + " maximum",
                                   param);
  }
  if (!generates && prompt_tokens > context) {
    return context_length_exceeded(
        "This model's maximum context length is " + std::to_string(context_length) +
            " tokens, but the prompt is " + std::to_string(prompt_tokens) + " tokens.",
        param);
  }
  if (generates && prompt_tokens >= context) {
    return context_length_exceeded(
        "This model's maximum context length is " + std::to_string(context_length) +
            " tokens, but the prompt is " + std::to_string(prompt_tokens) +
            " tokens, which leaves no room to generate.",
        param);
  }
  return std::nullopt;
}

}  // namespace tandem
