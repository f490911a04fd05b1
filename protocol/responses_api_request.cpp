#include "protocol/responses_api_request.h"

#include <string>
#include <utility>
#include <vector>

#include "protocol/request_fields.h"
#include "protocol/unsupported_fields.h"

namespace tandem {
namespace {

using request_fields::element_param;
using request_fields::find_field;
using request_fields::Json;
using request_fields::read_bool;
using request_fields::read_integer;
using request_fields::read_string;
using request_fields::reject;
using request_fields::require_array;
using request_fields::require_object;
using request_fields::required_string;

constexpr const char* kNoMedia =
    "is not supported by this server (it reads no images, files or "
    "audio).";
constexpr const char* kNotStored =
    "is not supported by this server: it stores no responses; send the whole conversation "
    "in 'input'.";

// The include values OpenAI defines. Only the output's logprobs change what comes back here:
// the others name outputs of hosted tools, media or reasoning items, which are refused or
// never made, so including them adds nothing.
constexpr const char* kIncludeValues[] = {"message.output_text.logprobs",
                                          "reasoning.encrypted_content",
                                          "file_search_call.results",
                                          "web_search_call.results",
                                          "web_search_call.action.sources",
                                          "message.input_image.image_url",
                                          "computer_call_output.output.image_url",
                                          "code_interpreter_call.outputs"};
constexpr const char* kLogprobsInclude = "message.output_text.logprobs";

// The Responses fields this reader translates or refuses itself; every other field goes to
// the chat parser as it is (temperature, top_p, stream, user, metadata, and chat's
// extensions: seed, top_k, the penalties, stop, guided_json, grammar, ...), which honours
// or refuses it as on /v1/chat/completions.
constexpr const char* kResponsesFields[] = {
    "input",      "instructions",   "max_output_tokens",    "tools",          "tool_choice",
    "text",       "include",        "top_logprobs",         "stream_options", "store",
    "background", "conversation",   "previous_response_id", "prompt",         "reasoning",
    "truncation", "max_tool_calls", "context_management"};

// Chat's names for what this endpoint names otherwise: refused, pointing at the field here.
constexpr std::pair<const char*, const char*> kChatNames[] = {
    {"messages", "send 'input' (and 'instructions')"},
    {"response_format", "send 'text.format'"},
    {"max_tokens", "send 'max_output_tokens'"},
    {"max_completion_tokens", "send 'max_output_tokens'"},
    {"logprobs", "send 'include': [\"message.output_text.logprobs\"] with 'top_logprobs'"},
    {"n", "this endpoint answers with one output"}};

using Renames = ParamRenames;

// What needs a stored response, and the settings this server cannot honour.
void refuse_what_is_not_served(const Json& body) {
  for (const char* name : {"previous_response_id", "conversation", "prompt"}) {
    if (find_field(body, name) != nullptr) {
      reject("'" + std::string(name) + "' " + kNotStored, name);
    }
  }
  for (const char* name : {"store", "background"}) {
    if (const Json* value = find_field(body, name)) {
      if (read_bool(*value, name)) {
        reject("'" + std::string(name) + "' set to true " + kNotStored, name);
      }
    }
  }
  if (const Json* max_calls = find_field(body, "max_tool_calls")) {
    read_integer(*max_calls, "max_tool_calls", 0, INT32_MAX);
    reject(
        "'max_tool_calls' is not supported by this server; 'parallel_tool_calls': false "
        "allows one call.",
        "max_tool_calls");
  }
  if (const Json* truncation = find_field(body, "truncation")) {
    if (read_string(*truncation, "truncation") != "disabled") {
      reject(
          "'truncation' other than \"disabled\" is not supported by this server: a prompt "
          "past the context is refused.",
          "truncation");
    }
  }
  if (const Json* reasoning = find_field(body, "reasoning")) {
    for (const auto& [key, value] : require_object(*reasoning, "reasoning").items()) {
      // effort is honoured as chat's reasoning_effort (apply_reasoning_effort).
      if (value.is_null() || key == "effort") continue;
      reject("'reasoning." + key + "' is not supported by this server.", "reasoning." + key);
    }
  }
  if (find_field(body, "context_management") != nullptr) {
    reject("'context_management' is not supported by this server: it compacts no context.",
           "context_management");
  }
  if (const Json* options = find_field(body, "stream_options")) {
    if (const Json* obfuscate =
            find_field(require_object(*options, "stream_options"), "include_obfuscation")) {
      if (read_bool(*obfuscate, "stream_options.include_obfuscation")) {
        reject(
            "'stream_options.include_obfuscation' set to true is not supported by this "
            "server: its deltas carry no padding.",
            "stream_options.include_obfuscation");
      }
    }
  }
}

// Whether the output's logprobs were asked for; every other known value adds nothing.
bool read_include(const Json& body) {
  const Json* include = find_field(body, "include");
  if (include == nullptr) return false;
  require_array(*include, "include");
  bool logprobs = false;
  for (size_t i = 0; i < include->size(); ++i) {
    const std::string param = element_param("include", i);
    const std::string& value = read_string((*include)[i], param);
    bool known = false;
    for (const char* name : kIncludeValues) known = known || value == name;
    if (!known) reject("Invalid value for '" + param + "': '" + value + "'.", param);
    logprobs = logprobs || value == kLogprobsInclude;
  }
  return logprobs;
}

// A content part's text: input_text, or output_text in an assistant's message.
Json read_part(const Json& value, const std::string& param) {
  const Json& part = require_object(value, param);
  const Json* type = find_field(part, "type");
  if (type == nullptr) reject("'" + param + ".type' is required.", param + ".type");
  const std::string& kind = read_string(*type, param + ".type");
  if (kind == "input_image" || kind == "input_file" || kind == "input_audio") {
    reject("'" + param + "' of type '" + kind + "' " + kNoMedia, param + ".type");
  }
  if (kind != "input_text" && kind != "output_text") {
    reject("Invalid value for '" + param + ".type': '" + kind +
               "' is not supported; expected 'input_text' or 'output_text'.",
           param + ".type");
  }
  const Json* text = find_field(part, "text");
  if (text == nullptr) reject("'" + param + ".text' is required.", param + ".text");
  return Json{{"type", "text"}, {"text", read_string(*text, param + ".text")}};
}

Json read_content(const Json& item, const std::string& param) {
  const Json* content = find_field(item, "content");
  if (content == nullptr) reject("'" + param + ".content' is required.", param + ".content");
  if (content->is_string()) return *content;
  require_array(*content, param + ".content");
  Json parts = Json::array();
  for (size_t i = 0; i < content->size(); ++i) {
    parts.push_back(read_part((*content)[i], element_param(param + ".content", i)));
  }
  return parts;
}

// A function_call_output's output: a string, or input_text parts (joined).
std::string read_call_output(const Json& item, const std::string& param) {
  const Json* output = find_field(item, "output");
  if (output == nullptr) reject("'" + param + ".output' is required.", param + ".output");
  if (output->is_string()) return output->get<std::string>();
  require_array(*output, param + ".output");
  std::string text;
  for (size_t i = 0; i < output->size(); ++i) {
    text += read_part((*output)[i], element_param(param + ".output", i))["text"].get<std::string>();
  }
  return text;
}

// A reasoning item's text: its reasoning_text parts, else its summary's texts.
std::string read_reasoning(const Json& item, const std::string& param) {
  if (find_field(item, "encrypted_content") != nullptr) {
    reject("'" + param +
               ".encrypted_content' is not supported by this server: it encrypts no "
               "reasoning; send the reasoning's text.",
           param + ".encrypted_content");
  }
  const bool has_content = find_field(item, "content") != nullptr;
  const char* key = has_content ? "content" : "summary";
  const char* part_type = has_content ? "reasoning_text" : "summary_text";
  std::string text;
  const Json* parts = find_field(item, key);
  if (parts == nullptr) return text;
  require_array(*parts, param + "." + key);
  for (size_t i = 0; i < parts->size(); ++i) {
    const std::string part_param = element_param(param + "." + key, i);
    const Json& part = require_object((*parts)[i], part_param);
    const Json* type = find_field(part, "type");
    if (type == nullptr || read_string(*type, part_param + ".type") != part_type) {
      reject("'" + part_param + ".type' must be '" + part_type + "'.", part_param + ".type");
    }
    if (!text.empty()) text += "\n\n";
    text += required_string(part, "text", part_param);
  }
  return text;
}

// Whether the last message is an assistant turn a reasoning item began, awaiting its text.
bool awaits_answer(const Json& messages) {
  if (messages.empty()) return false;
  const Json& last = messages.back();
  return last["role"] == "assistant" && last.contains("reasoning_content") &&
         last["content"].is_null() && !last.contains("tool_calls");
}

// Appends item `index` of `input` to the chat messages: a message, a reasoning item (its
// text the reasoning_content of the assistant turn it begins, as the templates render a
// past turn's), a function call (joined to the assistant turn before it, as chat keeps one
// turn's calls together) or a call's output (a tool message).
void add_item(const Json& value, size_t index, Json& messages, Renames& renames) {
  const std::string param = element_param("input", index);
  const Json& item = require_object(value, param);
  const Json* type_field = find_field(item, "type");
  const std::string type =
      type_field == nullptr ? "message" : read_string(*type_field, param + ".type");
  const std::string chat_param = element_param("messages", messages.size());
  if (type == "message") {
    const Json* role = find_field(item, "role");
    if (role == nullptr) reject("'" + param + ".role' is required.", param + ".role");
    if (*role == "tool") {  // chat's tool turn is a function_call_output item here
      reject("Invalid value for '" + param +
                 ".role': 'tool'; send a 'function_call_output' "
                 "item.",
             param + ".role");
    }
    if (*role == "assistant" && awaits_answer(messages)) {
      messages.back()["content"] = read_content(item, param);
      renames.emplace_back(element_param("messages", messages.size() - 1) + ".content",
                           param + ".content");
      return;
    }
    messages.push_back(Json{{"role", *role}, {"content", read_content(item, param)}});
  } else if (type == "reasoning") {
    messages.push_back(Json{{"role", "assistant"},
                            {"content", nullptr},
                            {"reasoning_content", read_reasoning(item, param)}});
  } else if (type == "function_call") {
    Json call{{"id", required_string(item, "call_id", param)},
              {"type", "function"},
              {"function",
               {{"name", required_string(item, "name", param)},
                {"arguments", required_string(item, "arguments", param)}}}};
    const bool joins = !messages.empty() && messages.back()["role"] == "assistant";
    if (!joins) {
      renames.emplace_back(chat_param, param);
      messages.push_back(Json{{"role", "assistant"}, {"content", nullptr}});
    }
    Json& calls = messages.back()["tool_calls"];
    const std::string call_param =
        element_param(element_param("messages", messages.size() - 1) + ".tool_calls",
                      calls.is_array() ? calls.size() : 0);
    renames.emplace_back(call_param + ".function", param);
    renames.emplace_back(call_param, param);
    calls.push_back(std::move(call));
    return;
  } else if (type == "function_call_output") {
    messages.push_back(Json{{"role", "tool"},
                            {"tool_call_id", required_string(item, "call_id", param)},
                            {"content", read_call_output(item, param)}});
  } else if (type == "item_reference") {
    reject("'" + param + "' of type 'item_reference' " + kNotStored, param + ".type");
  } else {
    reject("Invalid value for '" + param + ".type': '" + type +
               "' is not supported; expected 'message', 'reasoning', 'function_call' or "
               "'function_call_output'.",
           param + ".type");
  }
  renames.emplace_back(chat_param, param);
}

Json read_messages(const Json& body, Renames& renames) {
  Json messages = Json::array();
  if (const Json* instructions = find_field(body, "instructions")) {
    messages.push_back(
        Json{{"role", "system"}, {"content", read_string(*instructions, "instructions")}});
    renames.emplace_back("messages[0]", "instructions");
  }
  const Json* input = find_field(body, "input");
  if (input == nullptr) reject("'input' is required.", "input");
  if (input->is_string()) {
    renames.emplace_back(element_param("messages", messages.size()), "input");
    messages.push_back(Json{{"role", "user"}, {"content", *input}});
    return messages;
  }
  if (!input->is_array()) {
    reject("Invalid type for 'input': expected a string or an array of items, but got " +
               request_fields::describe_type(*input) + ".",
           "input");
  }
  if (input->empty()) reject("'input' must not be empty.", "input");
  for (size_t i = 0; i < input->size(); ++i) add_item((*input)[i], i, messages, renames);
  return messages;
}

// Responses' function tool {type, name, description, parameters, strict} in chat's form.
Json read_tools(const Json& tools, Renames& renames) {
  require_array(tools, "tools");
  Json chat = Json::array();
  for (size_t i = 0; i < tools.size(); ++i) {
    const std::string param = element_param("tools", i);
    const Json& tool = require_object(tools[i], param);
    const Json* type = find_field(tool, "type");
    if (type == nullptr) reject("'" + param + ".type' is required.", param + ".type");
    const std::string& kind = read_string(*type, param + ".type");
    if (kind != "function") {
      reject("'" + param + "' of type '" + kind +
                 "' is not supported by this server: it runs no hosted tools; send function "
                 "tools.",
             param + ".type");
    }
    Json function = Json::object();
    for (const auto& [key, value] : tool.items()) {
      if (key != "type") function[key] = value;
    }
    chat.push_back(Json{{"type", "function"}, {"function", std::move(function)}});
    renames.emplace_back(param + ".function", param);
  }
  return chat;
}

Json read_tool_choice(const Json& choice) {
  if (!choice.is_object()) return choice;  // "auto", "none", "required"; chat checks them
  const Json* type = find_field(choice, "type");
  if (type == nullptr) reject("'tool_choice.type' is required.", "tool_choice.type");
  const std::string& kind = read_string(*type, "tool_choice.type");
  if (kind != "function") {
    reject("'tool_choice' of type '" + kind +
               "' is not supported by this server; name a "
               "function, or send \"auto\", \"none\" or \"required\".",
           "tool_choice.type");
  }
  const Json* name = find_field(choice, "name");
  if (name == nullptr) reject("'tool_choice.name' is required.", "tool_choice.name");
  return Json{{"type", "function"}, {"function", {{"name", *name}}}};
}

// text.format in chat's response_format form; null for plain text.
Json read_text_format(const Json& body) {
  const Json* text = find_field(body, "text");
  if (text == nullptr) return nullptr;
  require_object(*text, "text");
  if (const Json* verbosity = find_field(*text, "verbosity")) {
    if (read_string(*verbosity, "text.verbosity") != "medium") {
      reject("'text.verbosity' other than \"medium\" is not supported by this server.",
             "text.verbosity");
    }
  }
  const Json* format = find_field(*text, "format");
  if (format == nullptr) return nullptr;
  require_object(*format, "text.format");
  const Json* type = find_field(*format, "type");
  if (type == nullptr) reject("'text.format.type' is required.", "text.format.type");
  const std::string& kind = read_string(*type, "text.format.type");
  if (kind == "text") return nullptr;
  if (kind == "json_object") return Json{{"type", "json_object"}};
  if (kind != "json_schema") {
    reject("Invalid value for 'text.format.type': '" + kind +
               "'; expected 'text', 'json_object' or 'json_schema'.",
           "text.format.type");
  }
  Json schema = Json::object();
  for (const auto& [key, value] : format->items()) {
    if (key != "type") schema[key] = value;
  }
  return Json{{"type", "json_schema"}, {"json_schema", std::move(schema)}};
}

// The chat body the request amounts to, and the renames that take its params back.
bool is_responses_field(const std::string& name) {
  for (const char* field : kResponsesFields) {
    if (name == field) return true;
  }
  return false;
}

// Every field but this endpoint's own, for the chat parser; chat's names for this
// endpoint's fields are refused.
Json passed_fields(const Json& body) {
  request_fields::refuse_chat_names(body, kChatNames, "/v1/responses");
  Json chat = Json::object();
  for (const auto& [name, value] : body.items()) {
    if (!is_responses_field(name)) chat[name] = value;
  }
  return chat;
}

// reasoning.effort is chat's reasoning_effort: the template's variable (and "none" its
// enable_thinking false), refused where the template reads neither.
void apply_reasoning_effort(const Json& body, Json& chat, Renames& renames) {
  const Json* reasoning = find_field(body, "reasoning");
  const Json* effort = reasoning != nullptr ? find_field(*reasoning, "effort") : nullptr;
  if (effort == nullptr) return;
  if (chat.contains("reasoning_effort") && chat["reasoning_effort"] != *effort) {
    reject("'reasoning_effort' and 'reasoning.effort' differ; send 'reasoning.effort'.",
           "reasoning_effort");
  }
  chat["reasoning_effort"] = *effort;
  renames.emplace_back("reasoning_effort", "reasoning.effort");
}

// tool_choice "required" or a named function: the turn is a call, which text.format (the
// message's shape) does not govern.
bool call_required(const Json& body) {
  const Json* choice = find_field(body, "tool_choice");
  return choice != nullptr && (*choice == "required" || choice->is_object());
}

Json chat_body(const Json& body, Renames& renames) {
  Json chat = passed_fields(body);
  apply_reasoning_effort(body, chat, renames);
  chat["messages"] = read_messages(body, renames);
  if (const Json* max = find_field(body, "max_output_tokens")) {
    // Checked here: the chat form would take -1 as llama-server's "no limit".
    request_fields::read_integer(*max, "max_output_tokens", 1, kMaxTokensLimit);
    chat["max_completion_tokens"] = *max;
    renames.emplace_back("max_completion_tokens", "max_output_tokens");
  }
  if (const Json* tools = find_field(body, "tools")) chat["tools"] = read_tools(*tools, renames);
  if (const Json* choice = find_field(body, "tool_choice")) {
    chat["tool_choice"] = read_tool_choice(*choice);
    renames.emplace_back("tool_choice.function", "tool_choice");
  }
  Json format = read_text_format(body);
  if (!format.is_null() && !call_required(body)) {
    chat["response_format"] = std::move(format);
    renames.emplace_back("response_format.json_schema", "text.format");
    renames.emplace_back("response_format", "text.format");
  }
  const bool logprobs = read_include(body);
  if (logprobs) chat["logprobs"] = true;
  if (const Json* top = find_field(body, "top_logprobs")) {
    if (!logprobs && !(top->is_number() && top->get<double>() == 0)) {
      reject("'top_logprobs' needs 'include' to hold \"" + std::string(kLogprobsInclude) + "\".",
             "top_logprobs");
    }
    chat["top_logprobs"] = *top;
  }
  renames.emplace_back("logprobs", "include");
  return chat;
}

const Json& value_or(const Json& body, const char* name, const Json& fallback) {
  const Json* value = find_field(body, name);
  return value != nullptr ? *value : fallback;
}

// What the response object repeats from the request (OpenAI's defaults where absent).
Json echo_of(const Json& body, const CompletionRequest& request) {
  Json text{{"format", {{"type", "text"}}}, {"verbosity", "medium"}};
  if (const Json* given = find_field(body, "text")) {
    if (const Json* format = find_field(*given, "format")) text["format"] = *format;
  }
  return Json{{"instructions", value_or(body, "instructions", nullptr)},
              {"max_output_tokens", value_or(body, "max_output_tokens", nullptr)},
              {"max_tool_calls", nullptr},
              {"metadata", value_or(body, "metadata", Json::object())},
              {"parallel_tool_calls", request.tools.parallel},
              {"previous_response_id", nullptr},
              {"prompt_cache_key", value_or(body, "prompt_cache_key", nullptr)},
              {"reasoning",
               {{"effort", find_field(body, "reasoning") != nullptr
                               ? value_or(*find_field(body, "reasoning"), "effort", nullptr)
                               : Json()},
                {"summary", nullptr}}},
              {"safety_identifier", value_or(body, "safety_identifier", nullptr)},
              {"service_tier", "default"},
              {"store", false},
              {"temperature", value_or(body, "temperature", 1.0)},
              {"text", std::move(text)},
              {"tool_choice", value_or(body, "tool_choice", "auto")},
              {"tools", value_or(body, "tools", Json::array())},
              {"top_logprobs", value_or(body, "top_logprobs", 0)},
              {"top_p", value_or(body, "top_p", 1.0)},
              {"truncation", "disabled"},
              {"user", value_or(body, "user", nullptr)}};
}

}  // namespace

// A prefix counts where the end, '.' or '[' follows it in the param.
ApiError renamed_params(ApiError error, const ParamRenames& renames) {
  const std::pair<std::string, std::string>* best = nullptr;
  for (const auto& rename : renames) {
    const std::string& from = rename.first;
    const bool prefix = error.param.compare(0, from.size(), from) == 0 &&
                        (error.param.size() == from.size() || error.param[from.size()] == '.' ||
                         error.param[from.size()] == '[');
    if (prefix && (best == nullptr || from.size() > best->first.size())) best = &rename;
  }
  if (best == nullptr) return error;
  const std::string old_param = error.param;
  error.param = best->second + old_param.substr(best->first.size());
  for (size_t at = error.message.find(old_param); at != std::string::npos;
       at = error.message.find(old_param, at + error.param.size())) {
    error.message.replace(at, old_param.size(), error.param);
  }
  return error;
}

std::variant<ResponsesRequest, ApiError> parse_responses_request(std::string_view body) {
  Renames renames;
  try {
    const Json parsed = request_fields::parse_body_object(body);
    refuse_what_is_not_served(parsed);  // first: its messages say what this endpoint lacks
    request_fields::reject_unimplemented_fields(parsed, Endpoint::kResponses);
    const Json chat = chat_body(parsed, renames);
    auto read = parse_completion_request(chat.dump(), Endpoint::kResponses);
    if (auto* error = std::get_if<ApiError>(&read)) {
      return renamed_params(std::move(*error), renames);
    }
    ResponsesRequest request{std::move(std::get<CompletionRequest>(read)), {}, std::move(renames)};
    request.echo = echo_of(parsed, request.request);
    return request;
  } catch (const request_fields::RequestRejected& rejected) {
    return rejected.error;
  }
}

}  // namespace tandem
