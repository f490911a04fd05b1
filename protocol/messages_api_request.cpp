#include "protocol/messages_api_request.h"

#include <algorithm>
#include <string>
#include <utility>

#include "protocol/request_fields.h"

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
using Renames = ParamRenames;

constexpr const char* kNoMedia =
    "is not supported by this server (it reads no images or documents).";
constexpr const char* kNoHostedTools =
    "is not supported by this server: it runs no server tools (web search, code execution, "
    "MCP); send client tools with an input_schema.";

// The Messages fields this reader translates or refuses itself; every other field goes to
// the chat parser as it is (temperature, top_p, top_k, stream, and tandem's and vLLM's
// extensions: seed, min_p, the penalties, ...), which honours or refuses it as on
// /v1/chat/completions.
constexpr const char* kMessagesFields[] = {
    "messages",     "system",    "max_tokens",  "stop_sequences",    "tools",
    "tool_choice",  "metadata",  "thinking",    "output_format",     "output_config",
    "service_tier", "container", "mcp_servers", "context_management"};

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

// Block types of Anthropic's server tools, which only its own servers run.
bool is_hosted_tool_block(const std::string& type) {
  return type == "server_tool_use" || type == "mcp_tool_use" || type == "mcp_tool_result" ||
         type == "container_upload" || type.ends_with("_tool_result");
}

// The block's type, required.
const std::string& block_type(const Json& block, const std::string& param) {
  return required_string(require_object(block, param), "type", param);
}

// Text blocks' texts, one chat text part each (the chat parser joins them with "\n"):
// a string is one part. Anything but text is refused (param names the block).
Json text_parts(const Json& value, const std::string& param) {
  if (value.is_string()) return Json::array({Json{{"type", "text"}, {"text", value}}});
  require_array(value, param);
  Json parts = Json::array();
  for (size_t i = 0; i < value.size(); ++i) {
    const std::string block = element_param(param, i);
    const std::string& type = block_type(value[i], block);
    if (type == "image" || type == "document" || type == "search_result") {
      reject("'" + block + "' of type '" + type + "' " + kNoMedia, block + ".type");
    }
    if (type != "text") {
      reject("Invalid value for '" + block + ".type': '" + type + "'; expected 'text'.",
             block + ".type");
    }
    parts.push_back(Json{{"type", "text"}, {"text", required_string(value[i], "text", block)}});
  }
  return parts;
}

// The conversation as chat messages, with the renames that take their params back. Turns of
// one role in a row are one turn (a tool result ends the user turn it is in).
class Conversation {
 public:
  explicit Conversation(Renames& renames) : renames_(renames) {}

  void system(const Json& value) {
    Json parts = text_parts(value, "system");
    if (parts.empty()) return;
    messages_.push_back(Json{{"role", "system"}, {"content", std::move(parts)}});
    renames_.emplace_back("messages[0]", "system");
  }

  void message(const Json& value, size_t index) {
    const std::string param = element_param("messages", index);
    const Json& message = require_object(value, param);
    const std::string& role = required_string(message, "role", param);
    if (role != "user" && role != "assistant") {
      reject("Invalid value for '" + param + ".role': '" + role +
                 "'; expected 'user' or 'assistant'" +
                 (role == "system" ? " (send the system prompt as 'system')." : "."),
             param + ".role");
    }
    const Json* content = find_field(message, "content");
    if (content == nullptr) reject("'" + param + ".content' is required.", param + ".content");
    if (content->is_string()) {
      text(role, content->get<std::string>(), param, param + ".content");
      return;
    }
    require_array(*content, param + ".content");
    for (size_t b = 0; b < content->size(); ++b) {
      block(role, (*content)[b], param, element_param(param + ".content", b));
    }
  }

  Json take() { return std::move(messages_); }

 private:
  // The chat message this turn goes on: the last one when it is this role's (not a tool
  // result), else a new one, renamed to the message that began it.
  Json& turn(const std::string& role, const std::string& param) {
    if (messages_.empty() || messages_.back()["role"] != role) {
      renames_.emplace_back(chat_param(), param);
      messages_.push_back(Json{{"role", role}, {"content", Json::array()}});
    }
    return messages_.back();
  }
  std::string chat_param() const { return element_param("messages", messages_.size()); }
  std::string last_param() const { return element_param("messages", messages_.size() - 1); }

  void text(const std::string& role, const std::string& value, const std::string& message_param,
            const std::string& param) {
    Json& chat = turn(role, message_param);
    Json& parts = chat["content"];
    renames_.emplace_back(element_param(last_param() + ".content", parts.size()), param);
    parts.push_back(Json{{"type", "text"}, {"text", value}});
  }

  void block(const std::string& role, const Json& value, const std::string& message_param,
             const std::string& param) {
    const std::string& type = block_type(value, param);
    const bool assistant = role == "assistant";
    if (type == "text") {
      text(role, required_string(value, "text", param), message_param, param + ".text");
    } else if (type == "image" || type == "document" || type == "search_result") {
      reject("'" + param + "' of type '" + type + "' " + kNoMedia, param + ".type");
    } else if (type == "tool_use" && assistant) {
      tool_use(value, message_param, param);
    } else if (type == "tool_result" && !assistant) {
      tool_result(value, param);
    } else if (type == "thinking" && assistant) {
      Json& chat = turn(role, message_param);
      std::string reasoning =
          chat.contains("reasoning_content") ? chat["reasoning_content"].get<std::string>() : "";
      if (!reasoning.empty()) reasoning += "\n\n";
      reasoning += required_string(value, "thinking", param);
      chat["reasoning_content"] = std::move(reasoning);
      renames_.emplace_back(last_param() + ".reasoning_content", param + ".thinking");
    } else if (type == "redacted_thinking") {
      reject("'" + param +
                 "' of type 'redacted_thinking' is not supported by this server: it encrypts "
                 "no reasoning; send the thinking's text.",
             param + ".type");
    } else if (is_hosted_tool_block(type)) {
      reject("'" + param + "' of type '" + type + "' " + kNoHostedTools, param + ".type");
    } else if (type == "tool_use" || type == "tool_result" || type == "thinking") {
      reject("'" + param + "' of type '" + type + "' belongs in " +
                 (assistant ? "a user" : "an assistant") + " message.",
             param + ".type");
    } else {
      reject("Invalid value for '" + param + ".type': '" + type + "' is not a content block type.",
             param + ".type");
    }
  }

  void tool_use(const Json& value, const std::string& message_param, const std::string& param) {
    const Json* input = find_field(value, "input");
    if (input == nullptr) reject("'" + param + ".input' is required.", param + ".input");
    require_object(*input, param + ".input");
    Json call{{"id", required_string(value, "id", param)},
              {"type", "function"},
              {"function",
               {{"name", required_string(value, "name", param)}, {"arguments", input->dump()}}}};
    Json& chat = turn("assistant", message_param);
    Json& calls = chat["tool_calls"];
    const std::string call_param =
        element_param(last_param() + ".tool_calls", calls.is_array() ? calls.size() : 0);
    renames_.emplace_back(call_param + ".function.arguments", param + ".input");
    renames_.emplace_back(call_param + ".function", param);
    renames_.emplace_back(call_param, param);
    calls.push_back(std::move(call));
  }

  // A tool message of its own: the result's text (text blocks joined), by the call's id.
  void tool_result(const Json& value, const std::string& param) {
    const std::string& id = required_string(value, "tool_use_id", param);
    if (const Json* error = find_field(value, "is_error")) read_bool(*error, param + ".is_error");
    const Json* content = find_field(value, "content");
    Json parts = content == nullptr ? Json::array() : text_parts(*content, param + ".content");
    std::string text;
    for (size_t i = 0; i < parts.size(); ++i) {
      text += (i == 0 ? "" : "\n") + parts[i]["text"].get<std::string>();
    }
    renames_.emplace_back(chat_param() + ".tool_call_id", param + ".tool_use_id");
    renames_.emplace_back(chat_param(), param);
    messages_.push_back(Json{{"role", "tool"}, {"tool_call_id", id}, {"content", std::move(text)}});
  }

  Renames& renames_;
  Json messages_ = Json::array();
};

// Anthropic's client tool {name, description, input_schema} in chat's form; a server
// tool (a versioned type: web_search_20250305, bash_20250124, ...) is refused.
Json read_tools(const Json& tools, Renames& renames) {
  require_array(tools, "tools");
  Json chat = Json::array();
  for (size_t i = 0; i < tools.size(); ++i) {
    const std::string param = element_param("tools", i);
    const Json& tool = require_object(tools[i], param);
    if (const Json* type = find_field(tool, "type")) {
      const std::string& kind = read_string(*type, param + ".type");
      if (kind != "custom") {
        reject("'" + param + "' of type '" + kind + "' " + kNoHostedTools, param + ".type");
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
void read_tool_choice(const Json& value, Json& chat, Renames& renames) {
  const Json& choice = require_object(value, "tool_choice");
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
void read_output_format(const Json& body, Json& chat, Renames& renames) {
  const Json* format = find_field(body, "output_format");
  std::string param = "output_format";
  if (const Json* config = find_field(body, "output_config")) {
    for (const auto& [key, value] : require_object(*config, "output_config").items()) {
      if (key == "format" && !value.is_null()) {
        format = &value;
        param = "output_config.format";
      } else if (key == "effort" && !value.is_null() &&
                 read_string(value, "output_config.effort") != "high") {
        reject(
            "'output_config.effort' other than \"high\" is not supported by this server: "
            "it spends what the answer needs, up to max_tokens.",
            "output_config.effort");
      } else if (key != "format" && key != "effort") {
        reject("'output_config." + key + "' is not supported by this server.",
               "output_config." + key);
      }
    }
  }
  if (format == nullptr) return;
  const std::string& type = required_string(require_object(*format, param), "type", param);
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
// it), adaptive, or disabled: the template's enable_thinking, unless the request set it in
// chat_template_kwargs itself; enabled also splits the reasoning off (thinking blocks).
bool read_thinking(const Json& body, Json& chat) {
  const Json* thinking = find_field(body, "thinking");
  if (thinking == nullptr) return false;
  const std::string& type =
      required_string(require_object(*thinking, "thinking"), "type", "thinking");
  if (type != "enabled" && type != "adaptive" && type != "disabled") {
    reject("Invalid value for 'thinking.type': '" + type +
               "'; expected 'enabled', 'adaptive' or 'disabled'.",
           "thinking.type");
  }
  const bool on = type != "disabled";
  if (type == "enabled") {
    const Json* budget = find_field(*thinking, "budget_tokens");
    if (budget == nullptr) {
      reject("'thinking.budget_tokens' is required when thinking is enabled.",
             "thinking.budget_tokens");
    }
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
  Json& kwargs = chat["chat_template_kwargs"];
  if (kwargs.is_null()) kwargs = Json::object();
  if (kwargs.is_object() && !kwargs.contains("enable_thinking")) kwargs["enable_thinking"] = on;
  if (on && find_field(body, "reasoning_format") == nullptr) chat["reasoning_format"] = "deepseek";
  return on;
}

// metadata {user_id}: chat's user (the access log's).
void read_metadata(const Json& body, Json& chat, Renames& renames) {
  const Json* metadata = find_field(body, "metadata");
  if (metadata == nullptr) return;
  for (const auto& [key, value] : require_object(*metadata, "metadata").items()) {
    if (key != "user_id") {
      reject("'metadata." + key + "' is not a field of the Messages API's metadata.",
             "metadata." + key);
    }
    if (!value.is_null()) chat["user"] = read_string(value, "metadata.user_id");
  }
  renames.emplace_back("user", "metadata.user_id");
}

void refuse_what_is_not_served(const Json& body) {
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
  for (const auto& [name, instead] : kChatNames) {
    const Json* value = find_field(body, name);
    if (value != nullptr && !(std::string_view(name) == "n" && *value == 1)) {
      reject("'" + std::string(name) + "' is not a field of /v1/messages; " + instead + ".", name);
    }
  }
}

bool is_messages_field(const std::string& name) {
  for (const char* field : kMessagesFields) {
    if (name == field) return true;
  }
  return false;
}

// The conversation: system first, then the messages; a final assistant turn with text is
// the prefill the answer continues.
Json read_conversation(const Json& body, Json& chat, Renames& renames) {
  Conversation conversation(renames);
  if (const Json* system = find_field(body, "system")) conversation.system(*system);
  const Json* messages = find_field(body, "messages");
  if (messages == nullptr) reject("'messages' is required.", "messages");
  require_array(*messages, "messages");
  if (messages->empty()) reject("'messages' must not be empty.", "messages");
  for (size_t i = 0; i < messages->size(); ++i) conversation.message((*messages)[i], i);
  Json turns = conversation.take();
  if (turns.empty() || turns.back()["role"] == "system") {
    reject("'messages' holds no content.", "messages");
  }
  const Json& last = turns.back();
  if (last["role"] == "assistant" && !last.contains("tool_calls")) {
    chat["continue_final_message"] = true;
    renames.emplace_back("continue_final_message", "messages");
  }
  return turns;
}

Json chat_body(const Json& body, bool count_only, Renames& renames, bool& thinking) {
  Json chat = Json::object();
  for (const auto& [name, value] : body.items()) {
    if (!is_messages_field(name)) chat[name] = value;
  }
  chat["messages"] = read_conversation(body, chat, renames);
  const Json* max = find_field(body, "max_tokens");
  if (max == nullptr && !count_only) reject("'max_tokens' is required.", "max_tokens");
  if (max != nullptr) chat["max_tokens"] = *max;
  if (const Json* stops = find_field(body, "stop_sequences")) {
    chat["stop"] = require_array(*stops, "stop_sequences");
    renames.emplace_back("stop", "stop_sequences");
  }
  if (const Json* tools = find_field(body, "tools")) chat["tools"] = read_tools(*tools, renames);
  if (const Json* choice = find_field(body, "tool_choice")) {
    read_tool_choice(*choice, chat, renames);
  }
  read_output_format(body, chat, renames);
  read_metadata(body, chat, renames);
  thinking = read_thinking(body, chat);
  renames.emplace_back("chat_template_kwargs.enable_thinking", "thinking");
  return chat;
}

std::variant<MessagesRequest, ApiError> parse(std::string_view body, bool count_only) {
  Renames renames;
  try {
    const Json parsed = request_fields::parse_body_object(body);
    // The fields passed on are checked by the chat parser (reject_unimplemented_fields):
    // this API's own (service_tier, metadata) are read here, in their own terms.
    refuse_what_is_not_served(parsed);
    bool thinking = false;
    const Json chat = chat_body(parsed, count_only, renames, thinking);
    auto read = parse_completion_request(chat.dump(), Endpoint::kMessages);
    if (auto* error = std::get_if<ApiError>(&read)) {
      return renamed_params(std::move(*error), renames);
    }
    return MessagesRequest{std::move(std::get<CompletionRequest>(read)), std::move(renames),
                           thinking};
  } catch (const request_fields::RequestRejected& rejected) {
    return rejected.error;
  }
}

}  // namespace

std::variant<MessagesRequest, ApiError> parse_messages_request(std::string_view body) {
  return parse(body, false);
}

std::variant<MessagesRequest, ApiError> parse_count_tokens_request(std::string_view body) {
  return parse(body, true);
}

}  // namespace tandem
