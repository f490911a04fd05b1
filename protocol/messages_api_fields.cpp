#include "protocol/messages_api_fields.h"

#include <algorithm>
#include <utility>

#include "protocol/completion_request.h"

namespace tandem::messages_fields {
namespace {

using request_fields::element_param;
using request_fields::find_field;
using request_fields::read_bool;
using request_fields::read_integer;
using request_fields::read_string;
using request_fields::reject;
using request_fields::require_array;
using request_fields::require_object;
using request_fields::required_string;

// The Messages API's fields that mean what chat's of the same name mean: passed to the chat
// parser as they are.
constexpr std::string_view kSameAsChat[] = {"model", "temperature", "top_p", "top_k", "stream"};

// The Messages API's fields read (or refused) by this reader and messages_api_request.cpp.
constexpr std::string_view kReadHere[] = {
    "messages",      "system",    "max_tokens",  "stop_sequences",     "tools",
    "tool_choice",   "metadata",  "thinking",    "output_format",      "output_config",
    "service_tier",  "container", "mcp_servers", "context_management",
    "cache_control",  // a prefix-cache hint: the prefix cache needs none
    "thread"};

// tandem's chat extensions (vLLM's and llama-server's) that mean the same here: passed to
// the chat parser, which honours or refuses them as on /v1/chat/completions.
constexpr std::string_view kChatExtensions[] = {"seed",
                                                "min_p",
                                                "presence_penalty",
                                                "frequency_penalty",
                                                "repetition_penalty",
                                                "repeat_penalty",
                                                "repeat_last_n",
                                                "penalty_last_n",
                                                "top_n_sigma",
                                                "typical_p",
                                                "dynatemp_range",
                                                "dynatemp_exponent",
                                                "xtc_probability",
                                                "xtc_threshold",
                                                "dry_multiplier",
                                                "dry_base",
                                                "dry_allowed_length",
                                                "dry_penalty_last_n",
                                                "dry_sequence_breakers",
                                                "mirostat",
                                                "mirostat_tau",
                                                "mirostat_eta",
                                                "logit_bias",
                                                "ignore_eos",
                                                "min_tokens",
                                                "stop_token_ids",
                                                "include_stop_str_in_output",
                                                "skip_special_tokens",
                                                "chat_template_kwargs",
                                                "documents",
                                                "cache_salt",
                                                "request_id",
                                                "reasoning_format",
                                                "guided_json",
                                                "guided_regex",
                                                "guided_grammar",
                                                "guided_choice",
                                                "grammar",
                                                "json_schema",
                                                "structured_outputs"};

// Chat's names for what this API names otherwise: refused, pointing at the field here.
constexpr std::pair<const char*, const char*> kChatNames[] = {
    {"stop", "send 'stop_sequences'"},
    {"max_completion_tokens", "send 'max_tokens'"},
    {"response_format", "send 'output_format'"},
    {"parallel_tool_calls", "send 'tool_choice.disable_parallel_tool_use'"},
    {"user", "send 'metadata.user_id'"},
    {"logprobs", "the Messages API returns none; use /v1/chat/completions"},
    {"top_logprobs", "the Messages API returns none; use /v1/chat/completions"},
    {"add_generation_prompt", "a final assistant message is continued, any other answered"},
    {"continue_final_message", "a final assistant message is continued, any other answered"},
    {"n", "this endpoint answers with one message"}};

template <typename Names>
bool listed(std::string_view key, const Names& names) {
  return std::ranges::find(names, key) != std::ranges::end(names);
}

// A forced call (tool_choice any or tool) or a JSON schema holds the answer to its grammar
// from the first token, so no reasoning could come before it: with thinking on, refused, as
// Anthropic refuses thinking with a forced tool.
void refuse_what_leaves_no_room_to_think(const Json& body) {
  if (const Json* choice = find_field(body, "tool_choice")) {
    const Json* type = choice->is_object() ? find_field(*choice, "type") : nullptr;
    if (type != nullptr && (*type == "any" || *type == "tool")) {
      reject(
          "'thinking' cannot be on while 'tool_choice' forces a tool: the call is written from "
          "the first token, with no thinking before it.",
          "thinking");
    }
  }
  const Json* config = find_field(body, "output_config");
  if (find_field(body, "output_format") != nullptr ||
      (config != nullptr && config->is_object() && find_field(*config, "format") != nullptr)) {
    reject(
        "'thinking' with a JSON schema output is not supported by this server: the schema "
        "holds from the first token, with no thinking before it.",
        "thinking");
  }
}

}  // namespace

void refuse_unknown_keys(const Json& object, std::initializer_list<std::string_view> known,
                         const std::string& param) {
  for (const auto& [key, value] : object.items()) {
    if (listed(key, known)) continue;
    const std::string name = param.empty() ? key : param + "." + key;
    reject("'" + name +
               "' is not a field of the Messages API (as Anthropic does, unknown "
               "fields are refused).",
           name);
  }
}

bool passes_to_chat(std::string_view name) {
  return listed(name, kSameAsChat) || listed(name, kChatExtensions);
}

void refuse_unknown_fields(const Json& body) {
  request_fields::refuse_chat_names(body, kChatNames, "/v1/messages");
  for (const auto& [key, value] : body.items()) {
    if (listed(key, kReadHere) || passes_to_chat(key) || value.is_null()) continue;
    reject("'" + key +
               "' is not a field of the Messages API, nor one of tandem's extensions (as "
               "Anthropic does, unknown fields are refused).",
           key);
  }
}

void refuse_what_is_not_served(const Json& body) {
  // Anthropic's temperature ranges over [0, 1] (chat's over [0, 2]); its API refuses more.
  if (const Json* temperature = find_field(body, "temperature");
      temperature != nullptr && temperature->is_number() && temperature->get<double>() > 1) {
    reject("Invalid value for 'temperature': " + temperature->dump() +
               "; the Messages API takes 0 to 1.",
           "temperature");
  }
  // The SDKs' message threads keep a conversation on the server, which stores none: the
  // code they recognise lets a caller that allows it go on without a thread.
  if (find_field(body, "thread") != nullptr) {
    throw request_fields::RequestRejected{
        ApiError{400, "invalid_request_error",
                 "'thread' is not supported by this server: it keeps no conversations; send "
                 "the whole conversation in 'messages'.",
                 "thread", "thread_unsupported_request"}};
  }
  for (const char* name : {"container", "context_management"}) {
    if (find_field(body, name) != nullptr) {
      reject("'" + std::string(name) + "' is not supported by this server.", name);
    }
  }
  if (const Json* servers = find_field(body, "mcp_servers")) {
    if (!require_array(*servers, "mcp_servers").empty()) {
      reject("'mcp_servers' " + std::string(kNoHostedTools), "mcp_servers");
    }
  }
  if (const Json* tier = find_field(body, "service_tier")) {
    const std::string& value = read_string(*tier, "service_tier");
    if (value != "auto" && value != "standard_only") {
      reject(
          "Invalid value for 'service_tier': '" + value + "'; expected 'auto' or 'standard_only'.",
          "service_tier");
    }
  }
}

// Anthropic's client tool {name, description, input_schema} in chat's form; a server
// tool (a versioned type: web_search_20250305, bash_20250124, ...) is refused, and chat's
// tool shape is pointed at this one.
Json read_tools(const Json& tools, ParamRenames& renames) {
  require_array(tools, "tools");
  Json chat = Json::array();
  for (size_t i = 0; i < tools.size(); ++i) {
    const std::string param = element_param("tools", i);
    const Json& tool = require_object(tools[i], param);
    if (const Json* type = find_field(tool, "type")) {
      const std::string& kind = read_string(*type, param + ".type");
      if (kind == "function") {
        reject("'" + param +
                   "' has chat's tool shape; the Messages API's is {name, description, "
                   "input_schema}.",
               param + ".type");
      }
      if (kind != "custom") {
        reject("'" + param + "' of type '" + kind + "' " + kNoHostedTools, param + ".type");
      }
    }
    // eager_input_streaming asks for a call's input in finer pieces; here it comes in one
    // piece, which is a valid stream of it either way.
    refuse_unknown_keys(tool,
                        {"type", "name", "description", "input_schema", "cache_control", "strict",
                         "eager_input_streaming", "allowed_callers"},
                        param);
    if (const Json* eager = find_field(tool, "eager_input_streaming")) {
      read_bool(*eager, param + ".eager_input_streaming");
    }
    if (const Json* callers = find_field(tool, "allowed_callers")) {
      require_array(*callers, param + ".allowed_callers");
      for (size_t c = 0; c < callers->size(); ++c) {
        const std::string caller_param = element_param(param + ".allowed_callers", c);
        if (read_string((*callers)[c], caller_param) != "direct") {
          reject("'" + caller_param + "' other than \"direct\" " + kNoHostedTools, caller_param);
        }
      }
    }
    const Json* schema = find_field(tool, "input_schema");
    if (schema == nullptr) {
      reject("'" + param + ".input_schema' is required.", param + ".input_schema");
    }
    Json function{{"name", required_string(tool, "name", param)}};
    if (const Json* description = find_field(tool, "description")) {
      function["description"] = *description;
    }
    function["parameters"] = *schema;
    if (const Json* strict = find_field(tool, "strict")) function["strict"] = *strict;
    chat.push_back(Json{{"type", "function"}, {"function", std::move(function)}});
    renames.emplace_back(param + ".function.parameters", param + ".input_schema");
    renames.emplace_back(param + ".function", param);
  }
  return chat;
}

// tool_choice {type: auto | any | tool | none, name, disable_parallel_tool_use} in chat's
// tool_choice and parallel_tool_calls.
void read_tool_choice(const Json& value, Json& chat, ParamRenames& renames) {
  const Json& choice = require_object(value, "tool_choice");
  refuse_unknown_keys(choice, {"type", "name", "disable_parallel_tool_use"}, "tool_choice");
  const std::string& type = required_string(choice, "type", "tool_choice");
  if (type == "auto") {
    chat["tool_choice"] = "auto";
  } else if (type == "any") {
    chat["tool_choice"] = "required";
  } else if (type == "none") {
    chat["tool_choice"] = "none";
  } else if (type == "tool") {
    chat["tool_choice"] =
        Json{{"type", "function"},
             {"function", {{"name", required_string(choice, "name", "tool_choice")}}}};
    renames.emplace_back("tool_choice.function.name", "tool_choice.name");
  } else {
    reject("Invalid value for 'tool_choice.type': '" + type +
               "'; expected 'auto', 'any', 'tool' or 'none'.",
           "tool_choice.type");
  }
  renames.emplace_back("tool_choice", "tool_choice");
  if (const Json* single = find_field(choice, "disable_parallel_tool_use")) {
    chat["parallel_tool_calls"] = !read_bool(*single, "tool_choice.disable_parallel_tool_use");
    renames.emplace_back("parallel_tool_calls", "tool_choice.disable_parallel_tool_use");
  }
}

// output_format, or output_config.format: {type: "json_schema", schema} as chat's
// response_format.
void read_output_format(const Json& body, Json& chat, ParamRenames& renames) {
  const Json* format = find_field(body, "output_format");
  std::string param = "output_format";
  if (const Json* config = find_field(body, "output_config")) {
    refuse_unknown_keys(require_object(*config, "output_config"), {"format", "effort"},
                        "output_config");
    if (const Json* effort = find_field(*config, "effort")) {
      if (read_string(*effort, "output_config.effort") != "high") {
        reject(
            "'output_config.effort' other than \"high\" is not supported by this server: "
            "it spends what the answer needs, up to max_tokens.",
            "output_config.effort");
      }
    }
    if (const Json* inner = find_field(*config, "format")) {
      format = inner;
      param = "output_config.format";
    }
  }
  if (format == nullptr) return;
  refuse_unknown_keys(require_object(*format, param), {"type", "schema"}, param);
  const std::string& type = required_string(*format, "type", param);
  if (type != "json_schema") {
    reject("Invalid value for '" + param + ".type': '" + type + "'; expected 'json_schema'.",
           param + ".type");
  }
  const Json* schema = find_field(*format, "schema");
  if (schema == nullptr) reject("'" + param + ".schema' is required.", param + ".schema");
  chat["response_format"] =
      Json{{"type", "json_schema"}, {"json_schema", {{"name", "output"}, {"schema", *schema}}}};
  renames.emplace_back("response_format.json_schema.schema", param + ".schema");
  renames.emplace_back("response_format", param);
}

// thinking: enabled (budget_tokens, at least 1024 and below max_tokens, as Anthropic checks
// it), adaptive, or disabled; absent is disabled, as Anthropic's default is. It sets the
// template's enable_thinking, unless the request set it in chat_template_kwargs itself.
bool read_thinking(const Json& body, Json& chat) {
  const Json* thinking = find_field(body, "thinking");
  bool on = false;
  if (thinking != nullptr) {
    refuse_unknown_keys(require_object(*thinking, "thinking"), {"type", "budget_tokens", "display"},
                        "thinking");
    // "summarized" is what a thinking block may hold; here it holds the whole reasoning.
    if (const Json* display = find_field(*thinking, "display")) {
      if (read_string(*display, "thinking.display") != "summarized") {
        reject("'thinking.display' other than \"summarized\" is not supported by this server.",
               "thinking.display");
      }
    }
    const std::string& type = required_string(*thinking, "type", "thinking");
    if (type != "enabled" && type != "adaptive" && type != "disabled") {
      reject("Invalid value for 'thinking.type': '" + type +
                 "'; expected 'enabled', 'adaptive' or 'disabled'.",
             "thinking.type");
    }
    on = type != "disabled";
    const Json* budget = find_field(*thinking, "budget_tokens");
    if (type == "enabled" && budget == nullptr) {
      reject("'thinking.budget_tokens' is required when thinking is enabled.",
             "thinking.budget_tokens");
    }
    if (budget != nullptr) {
      const int64_t tokens =
          read_integer(*budget, "thinking.budget_tokens", 1024, int64_t{kMaxTokensLimit});
      const Json* max = find_field(body, "max_tokens");
      if (max != nullptr && max->is_number_integer() && tokens >= max->get<int64_t>()) {
        reject(
            "'thinking.budget_tokens' must be less than 'max_tokens' (thinking counts "
            "against it).",
            "thinking.budget_tokens");
      }
    }
    if (on) refuse_what_leaves_no_room_to_think(body);
  }
  Json& kwargs = chat["chat_template_kwargs"];
  if (kwargs.is_null()) kwargs = Json::object();
  if (kwargs.is_object() && !kwargs.contains("enable_thinking")) kwargs["enable_thinking"] = on;
  return on;
}

// metadata {user_id}: chat's user (the access log's).
void read_metadata(const Json& body, Json& chat, ParamRenames& renames) {
  const Json* metadata = find_field(body, "metadata");
  if (metadata == nullptr) return;
  refuse_unknown_keys(require_object(*metadata, "metadata"), {"user_id"}, "metadata");
  if (const Json* user = find_field(*metadata, "user_id")) {
    chat["user"] = read_string(*user, "metadata.user_id");
  }
  renames.emplace_back("user", "metadata.user_id");
}

}  // namespace tandem::messages_fields
