#include "protocol/unsupported_fields.h"

#include <limits>
#include <string>

#include "protocol/native_samplers.h"

namespace tandem::request_fields {
namespace {

// kChat: every conversation route; kOutsideChat: every route but /v1/chat/completions.
enum class Where { kBoth, kCompletions, kChat, kOutsideChat };

// Whether a value changes nothing. It sees the whole body for fields whose effect depends
// on another one, and may itself refuse a value of the wrong type (a RequestRejected naming
// `name`).
using NeutralTest = bool (*)(const Json& value, const Json& body, const std::string& name);

struct UnsupportedField {
  const char* name;  // "a.b": field b of the object in field a
  Where where;
  NeutralTest neutral;
  const char* refusal;  // follows "'name' " in the message
};

bool never(const Json&, const Json&, const std::string&) { return false; }
bool always(const Json&, const Json&, const std::string&) { return true; }
bool is_false(const Json& value, const Json&, const std::string& name) {
  return !read_bool(value, name);  // "true" or 1 is a type error, not a true
}
bool is_true(const Json& value, const Json&, const std::string& name) {
  return read_bool(value, name);
}
bool is_empty(const Json& value, const Json&, const std::string&) {
  // nlohmann's empty() is false for every string: "" is checked as text.
  if (value.is_string()) return value.get_ref<const std::string&>().empty();
  return (value.is_array() || value.is_object()) && value.empty();
}
template <int N>
bool number_is(const Json& value, const Json&, const std::string&) {
  return value.is_number() && value.get<double>() == N;
}
template <int N>
bool at_most(const Json& value, const Json&, const std::string&) {
  return value.is_number() && value.get<double>() <= N;
}
bool below_zero(const Json& value, const Json&, const std::string&) {
  return value.is_number() && value.get<double>() < 0;
}
// adaptive-p is a stage of llama.cpp's chain, which Mirostat replaces: it never acts then.
bool adaptive_p_off(const Json& value, const Json& body, const std::string& name) {
  return mirostat_replaces_chain(body) || below_zero(value, body, name);
}
bool only_text(const Json& value, const Json&, const std::string&) {
  return value.is_array() && value.size() == 1 && value[0] == "text";
}
// vLLM types these as dicts: [] is a type error there, not an empty value.
bool empty_object(const Json& value, const Json&, const std::string& name) {
  return require_object(value, name).empty();
}
// OpenAI's metadata: string keys to string values; it tags a stored completion and
// changes no output, but a value of another type is refused as OpenAI refuses it.
bool string_map(const Json& value, const Json&, const std::string& name) {
  for (const auto& [key, text] : require_object(value, name).items()) {
    if (!text.is_string()) read_string(text, name + "." + key);
  }
  return true;
}
// Accepted at any value of the right type; a value of another type is refused.
bool any_bool(const Json& value, const Json&, const std::string& name) {
  read_bool(value, name);
  return true;
}
bool any_integer(const Json& value, const Json&, const std::string& name) {
  read_integer(value, name, std::numeric_limits<int64_t>::min(),
               std::numeric_limits<int64_t>::max());
  return true;
}
bool is_none(const Json& value, const Json&, const std::string&) { return value == "none"; }
bool is_medium(const Json& value, const Json&, const std::string&) { return value == "medium"; }
bool standard_tier(const Json& value, const Json&, const std::string&) {
  return value == "auto" || value == "default";
}

bool best_of_one(const Json& value, const Json&, const std::string& name) {
  return read_integer(value, name, std::numeric_limits<int64_t>::min(),
                      std::numeric_limits<int64_t>::max()) == 1;
}
bool empty_suffix(const Json& value, const Json&, const std::string& name) {
  return read_string(value, name).empty();
}

// llama-server's name for max_tokens: accepted when it says what max_tokens says.
bool same_as_max_tokens(const Json& value, const Json& body, const std::string&) {
  for (const char* name : {"max_completion_tokens", "max_tokens"}) {
    if (const Json* max = find_field(body, name)) return value.is_number() && value == *max;
  }
  return false;
}

// Chat without a limit runs until EOS or the context, which n_predict -1 says too.
bool same_as_chat_limit(const Json& value, const Json& body, const std::string& name) {
  const bool unlimited = find_field(body, "max_completion_tokens") == nullptr &&
                         find_field(body, "max_tokens") == nullptr;
  return unlimited ? value.is_number_integer() && !value.is_number_unsigned() &&
                         value.get<int64_t>() == -1
                   : same_as_max_tokens(value, body, name);
}

constexpr const char* kNotSupported = "is not supported by this server.";
constexpr const char* kNoMedia = "is not supported by this server (it reads no images or audio).";

const UnsupportedField kFields[] = {
    // OpenAI.
    {"best_of", Where::kBoth, best_of_one, "other than 1 is not supported by this server."},
    {"suffix", Where::kCompletions, empty_suffix, "(non-empty) is not supported by this server."},
    {"functions", Where::kBoth, is_empty,
     "(the legacy function calling) is not supported by this server; send 'tools' instead."},
    {"function_call", Where::kBoth, never,
     "(the legacy function calling) is not supported by this server; send 'tool_choice' "
     "instead."},
    {"modalities", Where::kBoth, only_text,
     "other than [\"text\"] is not supported by this server."},
    {"audio", Where::kBoth, never, "(audio output) is not supported by this server."},
    // Predicted outputs only speed a response up (OpenAI's output is the same with or
    // without): nothing to honour.
    {"prediction", Where::kBoth, always, ""},
    {"reasoning_effort", Where::kCompletions, never,
     "is read by chat templates; send it to /v1/chat/completions."},
    {"web_search_options", Where::kBoth, never, "(web search) is not supported by this server."},
    {"store", Where::kBoth, is_false,
     "set to true (stored completions) is not supported by this server."},
    // The tags of a stored completion, and a routing hint for OpenAI's prompt cache (this
    // server's prefix cache needs none, and by its law a hit changes no output): neither
    // changes what is generated.
    {"metadata", Where::kBoth, string_map, ""},
    {"prompt_cache_key", Where::kBoth, always, ""},
    {"service_tier", Where::kBoth, standard_tier,
     "other than \"auto\" or \"default\" is not supported by this server."},
    {"verbosity", Where::kBoth, is_medium,
     "other than \"medium\" is not supported by this server."},
    {"tools", Where::kCompletions, is_empty,
     "is not supported on /v1/completions; use /v1/chat/completions."},
    {"tool_choice", Where::kCompletions, is_none,
     "is not supported on /v1/completions; use /v1/chat/completions."},
    {"top_logprobs", Where::kCompletions, number_is<0>,
     "is not supported on /v1/completions; send 'logprobs' as the number of alternatives."},
    // vLLM.
    {"use_beam_search", Where::kBoth, is_false, "(beam search) is not supported by this server."},
    {"length_penalty", Where::kBoth, number_is<1>,
     "other than 1 (a beam search option) is not supported by this server."},
    {"bad_words", Where::kBoth, is_empty, "(non-empty) is not supported by this server."},
    {"allowed_token_ids", Where::kBoth, is_empty, "(non-empty) is not supported by this server."},
    {"prompt_logprobs", Where::kBoth, never,
     "is not supported by this server; on /v1/completions send 'echo' with 'logprobs'."},
    {"truncate_prompt_tokens", Where::kBoth, never, kNotSupported},
    {"logits_processors", Where::kBoth, is_empty, "(non-empty) is not supported by this server."},
    {"spaces_between_special_tokens", Where::kBoth, is_true,
     "set to false is not supported by this server."},
    {"priority", Where::kBoth, number_is<0>, "other than 0 is not supported by this server."},
    {"echo", Where::kChat, is_false,
     "set to true is not supported on /v1/chat/completions by this server."},
    {"add_special_tokens", Where::kChat, is_false,
     "set to true is not supported on /v1/chat/completions (the chat template writes the "
     "special tokens)."},
    {"mm_processor_kwargs", Where::kBoth, is_empty, kNoMedia},
    {"stream_options.continuous_usage_stats", Where::kBoth, is_false,
     "set to true is not supported by this server; usage comes in the last chunk."},
    {"guided_whitespace_pattern", Where::kBoth, never, kNotSupported},
    {"guided_decoding_backend", Where::kBoth, always, ""},  // picks an engine, not an output
    {"prompt_embeds", Where::kBoth, is_empty,
     "(prompt embeddings) is not supported by this server; send 'prompt'."},
    {"return_token_ids", Where::kBoth, is_false,
     "set to true is not supported by this server; on /v1/completions 'logprobs' gives each "
     "token's text."},
    {"vllm_xargs", Where::kBoth, empty_object, "(non-empty) is not supported by this server."},
    {"kv_transfer_params", Where::kBoth, empty_object,
     "(disaggregated prefill) is not supported by this server."},
    // llama-server.
    {"adaptive_target", Where::kBoth, adaptive_p_off,  // llama.cpp: negative is off
     "other than a negative number (llama.cpp's adaptive-p sampler, off) is not supported by "
     "this server."},
    {"adaptive_decay", Where::kBoth, always, ""},  // only read with adaptive_target
    {"n_probs", Where::kBoth, number_is<0>,
     "is read on /completion and /infill; on the OpenAI routes send 'logprobs' (and on chat "
     "'top_logprobs')."},
    {"n_predict", Where::kCompletions, same_as_max_tokens,
     "is llama-server's name for the output limit; send 'max_tokens' (or the same value in "
     "both)."},
    {"n_predict", Where::kChat, same_as_chat_limit,
     "is llama-server's name for the output limit; send 'max_tokens' (or the same value in "
     "both)."},
    {"lora", Where::kBoth, is_empty, "(non-empty) is not supported by this server."},
    {"reasoning_format", Where::kCompletions, is_none,
     "other than \"none\" is not supported on /v1/completions: only chat answers split a "
     "reasoning off."},
    // vLLM: false drops the reasoning a reasoning parser split off.
    {"include_reasoning", Where::kBoth, is_true,
     "set to false is not supported by this server; send 'reasoning_format': \"none\" to "
     "keep the reasoning in the content."},
    {"parse_tool_calls", Where::kBoth, is_true,
     "set to false is not supported by this server: with 'tools' it reads the output for "
     "calls."},
    {"grammar_lazy", Where::kBoth, is_false,
     "set to true is not supported by this server: a grammar holds from the first token."},
    {"grammar_triggers", Where::kBoth, is_empty, "(non-empty) is not supported by this server."},
    // Every filter keeps the top token, so keeping at least one changes nothing.
    {"min_keep", Where::kBoth, at_most<1>, "above 1 is not supported by this server."},
    {"t_max_predict_ms", Where::kBoth, at_most<0>,  // llama.cpp: <= 0 is off
     "(a time limit) is not supported by this server; send 'max_tokens'."},
    {"n_cmpl", Where::kBoth, number_is<1>,
     "other than 1 is not supported by this server; send 'n'."},
    // Read on /completion, /infill (native_request.cpp) and chat (generation_fields.cpp),
    // which write llama-server's shape for them.
    {"post_sampling_probs", Where::kOutsideChat, is_false,
     "set to true is not supported on this route, whose logprobs are the model's "
     "(llama-server's /completion reads it, and so does chat)."},
    {"return_tokens", Where::kBoth, is_false,
     "set to true is read on /completion and /infill (llama-server's API)."},
    // Prompt caching and slots are how llama-server reuses a prefix; this server's prefix
    // cache does so for every request, and by its law a hit changes no output.
    {"cache_prompt", Where::kBoth, any_bool, ""},
    {"id_slot", Where::kBoth, any_integer, ""},
    {"image_data", Where::kBoth, is_empty, kNoMedia},
    {"multimodal_data", Where::kBoth, is_empty, kNoMedia},
};

// The field's value in body (null and absent: nullptr), following one dot into an object.
const Json* find_path(const Json& body, const std::string& name) {
  const size_t dot = name.find('.');
  if (dot == std::string::npos) return find_field(body, name.c_str());
  const Json* parent = find_field(body, name.substr(0, dot).c_str());
  if (parent == nullptr || !parent->is_object()) return nullptr;
  return find_field(*parent, name.substr(dot + 1).c_str());
}

bool applies(Where where, Endpoint endpoint) {
  if (where == Where::kOutsideChat) return endpoint != Endpoint::kChatCompletions;
  return where == Where::kBoth ||
         (where == Where::kCompletions) == (endpoint == Endpoint::kCompletions);
}

}  // namespace

void reject_unimplemented_fields(const Json& body, Endpoint endpoint) {
  for (const UnsupportedField& field : kFields) {
    if (!applies(field.where, endpoint)) continue;
    const Json* value = find_path(body, field.name);
    if (value == nullptr || field.neutral(*value, body, field.name)) continue;
    reject("'" + std::string(field.name) + "' " + field.refusal, field.name);
  }
}

}  // namespace tandem::request_fields
