#include "protocol/messages_api_request.h"

#include <string>
#include <utility>

#include "protocol/messages_api_fields.h"
#include "protocol/request_fields.h"

namespace tandem {
namespace {

using request_fields::element_param;
using request_fields::find_field;
using request_fields::Json;
using request_fields::read_bool;
using request_fields::reject;
using request_fields::require_array;
using request_fields::require_object;
using request_fields::required_string;
using Renames = ParamRenames;
using messages_fields::kNoHostedTools;
using messages_fields::kNoMedia;
using messages_fields::refuse_unknown_keys;

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
    refuse_unknown_keys(value[i], {"type", "text", "cache_control", "citations"}, block);
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
    refuse_unknown_keys(message, {"role", "content"}, param);
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
      refuse_unknown_keys(value, {"type", "text", "cache_control", "citations"}, param);
      text(role, required_string(value, "text", param), message_param, param + ".text");
    } else if (type == "image" || type == "document" || type == "search_result") {
      reject("'" + param + "' of type '" + type + "' " + kNoMedia, param + ".type");
    } else if (type == "tool_use" && assistant) {
      tool_use(value, message_param, param);
    } else if (type == "tool_result" && !assistant) {
      tool_result(value, param);
    } else if (type == "thinking" && assistant) {
      refuse_unknown_keys(value, {"type", "thinking", "signature"}, param);
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
    refuse_unknown_keys(value, {"type", "id", "name", "input", "cache_control", "caller"}, param);
    if (const Json* caller = find_field(value, "caller")) {  // who made the call: the model
      if (required_string(require_object(*caller, param + ".caller"), "type", param + ".caller") !=
          "direct") {
        reject("'" + param + ".caller' other than {\"type\": \"direct\"} " + kNoHostedTools,
               param + ".caller");
      }
    }
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

  // A tool message of its own: the result's text (text blocks joined), by the call's id. A
  // chat template has no place for is_error, so a failed call's text says it: "Error: "
  // first, as the model could not tell otherwise.
  void tool_result(const Json& value, const std::string& param) {
    refuse_unknown_keys(value, {"type", "tool_use_id", "content", "is_error", "cache_control"},
                        param);
    const std::string& id = required_string(value, "tool_use_id", param);
    const Json* error = find_field(value, "is_error");
    const bool failed = error != nullptr && read_bool(*error, param + ".is_error");
    const Json* content = find_field(value, "content");
    Json parts = content == nullptr ? Json::array() : text_parts(*content, param + ".content");
    std::string text;
    for (size_t i = 0; i < parts.size(); ++i) {
      text += (i == 0 ? "" : "\n") + parts[i]["text"].get<std::string>();
    }
    if (failed) text = text.empty() ? "Error" : "Error: " + text;
    renames_.emplace_back(chat_param() + ".tool_call_id", param + ".tool_use_id");
    renames_.emplace_back(chat_param(), param);
    messages_.push_back(Json{{"role", "tool"}, {"tool_call_id", id}, {"content", std::move(text)}});
  }

  Renames& renames_;
  Json messages_ = Json::array();
};

// Whether a turn's text parts hold more than blanks.
bool has_text(const Json& turn) {
  for (const Json& part : turn["content"]) {
    const std::string& text = part["text"].get_ref<const std::string&>();
    if (text.find_first_not_of(" \t\r\n") != std::string::npos) return true;
  }
  return false;
}

// The conversation: system first, then the messages; a final assistant turn with text is
// the prefill the answer continues, one without (empty, or only thinking) is dropped, as
// there is nothing to continue.
Json read_conversation(const Json& body, Json& chat, Renames& renames) {
  Conversation conversation(renames);
  if (const Json* system = find_field(body, "system")) conversation.system(*system);
  const Json* messages = find_field(body, "messages");
  if (messages == nullptr) reject("'messages' is required.", "messages");
  require_array(*messages, "messages");
  if (messages->empty()) reject("'messages' must not be empty.", "messages");
  for (size_t i = 0; i < messages->size(); ++i) conversation.message((*messages)[i], i);
  Json turns = conversation.take();
  const auto final_assistant = [&] {
    return !turns.empty() && turns.back()["role"] == "assistant" &&
           !turns.back().contains("tool_calls");
  };
  // Nothing to continue: answered as if it were not there.
  if (final_assistant() && !has_text(turns.back())) turns.erase(turns.size() - 1);
  if (turns.empty() || turns.back()["role"] == "system") {
    reject("'messages' holds no content.", "messages");
  }
  if (final_assistant()) {
    chat["continue_final_message"] = true;
    renames.emplace_back("continue_final_message", "messages");
  }
  return turns;
}

Json chat_body(const Json& body, bool count_only, Renames& renames, bool& thinking) {
  Json chat = Json::object();
  for (const auto& [name, value] : body.items()) {
    if (messages_fields::passes_to_chat(name)) chat[name] = value;
  }
  // Where the template marks reasoning, it never reaches a text block: with thinking on it
  // is the thinking block, and a model that thinks anyway (a template that always opens
  // the block) has it split off too.
  if (!chat.contains("reasoning_format")) chat["reasoning_format"] = "deepseek";
  chat["messages"] = read_conversation(body, chat, renames);
  const Json* max = find_field(body, "max_tokens");
  if (max == nullptr && !count_only) reject("'max_tokens' is required.", "max_tokens");
  if (max != nullptr) {
    // Checked here: the chat form would take -1 as llama-server's "no limit".
    request_fields::read_integer(*max, "max_tokens", 1, kMaxTokensLimit);
    chat["max_tokens"] = *max;
  }
  if (const Json* stops = find_field(body, "stop_sequences")) {
    chat["stop"] = require_array(*stops, "stop_sequences");
    renames.emplace_back("stop", "stop_sequences");
  }
  if (const Json* tools = find_field(body, "tools")) {
    chat["tools"] = messages_fields::read_tools(*tools, renames);
  }
  if (const Json* choice = find_field(body, "tool_choice")) {
    messages_fields::read_tool_choice(*choice, chat, renames);
  }
  messages_fields::read_output_format(body, chat, renames);
  messages_fields::read_metadata(body, chat, renames);
  thinking = messages_fields::read_thinking(body, chat);
  renames.emplace_back("chat_template_kwargs.enable_thinking", "thinking");
  return chat;
}

std::variant<MessagesRequest, ApiError> parse(std::string_view body, bool count_only) {
  Renames renames;
  try {
    const Json parsed = request_fields::parse_body_object(body);
    // The fields passed on are checked by the chat parser as on chat; this API's own are
    // read here, in their own terms, and anything else is refused.
    messages_fields::refuse_unknown_fields(parsed);
    messages_fields::refuse_what_is_not_served(parsed);
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
