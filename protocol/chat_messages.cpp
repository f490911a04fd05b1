#include "protocol/chat_messages.h"

#include <algorithm>
#include <iterator>
#include <string>
#include <utility>

#include "protocol/request_fields.h"
#include "protocol/tool_calls/tool_fields.h"

namespace tandem::request_fields {
namespace {

// The text of one content part: "text" (and the Responses API's "input_text" and
// "output_text", which vLLM reads alike), or on an assistant turn "refusal" (OpenAI's part
// for a refusal the model gave, its `refusal` field). Other parts carry media.
std::string read_text_part(const Json& part, const std::string& part_param, bool assistant) {
  const Json* type = find_field(part, "type");
  if (type == nullptr) reject("'" + part_param + ".type' is required.", part_param + ".type");
  const std::string& type_name = read_string(*type, part_param + ".type");
  const char* field = "text";
  if (type_name == "refusal" && assistant) {
    field = "refusal";
  } else if (type_name == "refusal") {
    reject("A content part of type 'refusal' belongs to an assistant turn.", part_param + ".type");
  } else if (type_name != "text" && type_name != "input_text" && type_name != "output_text") {
    reject("Content parts of type '" + type_name +
               "' are not supported; only text parts are ('text', 'input_text', "
               "'output_text'" +
               (assistant ? ", and 'refusal'" : "") + ").",
           part_param + ".type");
  }
  const std::string field_param = part_param + "." + field;
  const Json* part_text = find_field(part, field);
  if (part_text == nullptr) reject("'" + field_param + "' is required.", field_param);
  return read_string(*part_text, field_param);
}

// A string, or an array of text parts joined with newlines (vLLM's "string" content
// format, which every text-only template expects); absent or null: "".
std::string read_content(const Json& message, const std::string& param, bool assistant) {
  const Json* content = find_field(message, "content");
  if (content == nullptr) return "";
  if (content->is_string()) return content->get<std::string>();
  if (!content->is_array()) {
    reject("Invalid type for '" + param + "': expected a string or an array of text parts, " +
               "but got " + describe_type(*content) + ".",
           param);
  }
  std::string text;
  for (size_t i = 0; i < content->size(); ++i) {
    const std::string part_param = element_param(param, i);
    const Json& part = require_object((*content)[i], part_param);
    if (i > 0) text += '\n';
    text += read_text_part(part, part_param, assistant);
  }
  return text;
}

// OpenAI sends a call's arguments as a JSON string; templates want the object.
Json read_tool_call(const Json& call, const std::string& param) {
  Json shaped = require_object(call, param);
  const Json* function = find_field(call, "function");
  if (function == nullptr) reject("'" + param + ".function' is required.", param + ".function");
  require_object(*function, param + ".function");
  const Json* name = find_field(*function, "name");
  if (name == nullptr) {
    reject("'" + param + ".function.name' is required.", param + ".function.name");
  }
  read_string(*name, param + ".function.name");
  const std::string args_param = param + ".function.arguments";
  const Json* arguments = find_field(*function, "arguments");
  Json parsed = Json::object();
  if (arguments != nullptr && arguments->is_string()) {
    const std::string& text = arguments->get_ref<const std::string&>();
    if (!text.empty()) {
      try {
        // Wide integers pass (as doubles, as before): the model may have written them in
        // a call this server returned, and its next turn must not be refused for it.
        parsed = parse_json_value(text, /*wide_integers=*/true);
      } catch (const RequestRejected& rejected) {
        reject("Invalid value for '" + args_param + "': not valid JSON (" + rejected.error.message +
                   ")",
               args_param);
      }
    }
  } else if (arguments != nullptr && (arguments->is_object() || arguments->is_array())) {
    parsed = *arguments;
  } else if (arguments != nullptr) {
    reject("Invalid type for '" + args_param + "': expected a JSON string, but got " +
               describe_type(*arguments) + ".",
           args_param);
  }
  shaped["function"]["arguments"] = std::move(parsed);
  return shaped;
}

Json read_message(const Json& value, const std::string& param) {
  const Json& message = require_object(value, param);
  const Json* role_field = find_field(message, "role");
  if (role_field == nullptr) reject("'" + param + ".role' is required.", param + ".role");
  std::string role = read_string(*role_field, param + ".role");
  if (role == "developer") role = "system";  // OpenAI's newer name for the system turn
  if (role != "system" && role != "user" && role != "assistant" && role != "tool") {
    reject("Invalid value for '" + param + ".role': '" + role +
               "' is not supported; expected 'system', 'developer', 'user', 'assistant' or "
               "'tool'.",
           param + ".role");
  }
  const std::string content_param = param + ".content";
  if (role != "assistant" && find_field(message, "content") == nullptr) {
    reject("'" + content_param + "' is required.", content_param);
  }
  Json shaped = Json::object();
  shaped["role"] = role;
  shaped["content"] = read_content(message, content_param, role == "assistant");
  if (const Json* calls = find_field(message, "tool_calls")) {
    if (role != "assistant") {
      reject("'" + param + ".tool_calls' is only allowed in assistant messages.",
             param + ".tool_calls");
    }
    Json shaped_calls = Json::array();
    require_array(*calls, param + ".tool_calls");
    for (size_t i = 0; i < calls->size(); ++i) {
      shaped_calls.push_back(read_tool_call((*calls)[i], element_param(param + ".tool_calls", i)));
    }
    shaped["tool_calls"] = std::move(shaped_calls);
  }
  // A tool's answer says which call it answers (OpenAI and the templates need it).
  if (role == "tool" && find_field(message, "tool_call_id") == nullptr) {
    reject("'" + param + ".tool_call_id' is required in tool messages.", param + ".tool_call_id");
  }
  for (const char* key : {"reasoning_content", "tool_call_id", "name"}) {
    if (const Json* field = find_field(message, key)) {
      shaped[key] = read_string(*field, param + "." + key);
    }
  }
  return shaped;
}

// The template variables the server sets from the request and the model. vLLM lets
// chat_template_kwargs replace them; here they could not (the server's are set last), so
// the request was rendered without them in silence. Each is refused by name instead,
// pointing at the field that sets it.
void refuse_reserved_kwargs(const Json& kwargs) {
  static constexpr std::pair<const char*, const char*> kReserved[] = {
      {"messages", "send 'messages'"},
      {"tools", "send 'tools'"},
      {"documents", "send 'documents'"},
      {"add_generation_prompt", "send 'add_generation_prompt'"},
      {"bos_token", "the model's own token is used"},
      {"eos_token", "the model's own token is used"}};
  for (const auto& [key, instead] : kReserved) {
    if (kwargs.contains(key)) {
      const std::string param = std::string("chat_template_kwargs.") + key;
      reject("'" + param + "' is set by the server, not by chat_template_kwargs; " + instead + ".",
             param);
    }
  }
}

// continue_final_message: the last message is continued rather than answered, so no
// generation prompt follows it (absent means false here; vLLM asks the client to say so),
// and it needs text to continue.
void read_final_message(ChatInputs& inputs, bool generation_prompt_given) {
  if (generation_prompt_given && inputs.add_generation_prompt) {
    reject(
        "'add_generation_prompt' and 'continue_final_message' cannot both be true: the final "
        "message is continued, not answered.",
        "add_generation_prompt");
  }
  inputs.add_generation_prompt = false;
  const Json& last = inputs.messages.back();
  const Json* content = last.contains("content") ? &last["content"] : nullptr;
  if (content == nullptr || !content->is_string() ||
      content->get_ref<const std::string&>().find_first_not_of(" \t\r\n") == std::string::npos) {
    const std::string param = element_param("messages", inputs.messages.size() - 1) + ".content";
    reject("'continue_final_message' needs text in the final message to continue; '" + param +
               "' has none.",
           param);
  }
}

// reasoning_effort: OpenAI's levels, handed to the template (ChatInputs::reasoning_effort).
void read_reasoning_effort(const Json& body, ChatInputs& inputs) {
  const Json* value = find_field(body, "reasoning_effort");
  if (value == nullptr) return;
  static constexpr std::string_view kLevels[] = {"none",   "minimal", "low",
                                                 "medium", "high",    "xhigh"};
  const std::string effort = read_string(*value, "reasoning_effort");
  if (std::ranges::find(kLevels, effort) == std::end(kLevels)) {
    reject(
        "Invalid value for 'reasoning_effort': expected one of \"none\", \"minimal\", "
        "\"low\", \"medium\", \"high\" or \"xhigh\".",
        "reasoning_effort");
  }
  if (!inputs.template_kwargs.is_object()) inputs.template_kwargs = Json::object();
  Json& kwargs = inputs.template_kwargs;
  // The request's own kwargs may say the same (null: not said), never the opposite.
  const auto said = [&](const char* key) { return kwargs.contains(key) && !kwargs[key].is_null(); };
  if (said("reasoning_effort")) {
    if (kwargs["reasoning_effort"] != effort) {
      reject("'reasoning_effort' and 'chat_template_kwargs.reasoning_effort' differ; send one.",
             "reasoning_effort");
    }
    inputs.effort_in_kwargs = true;
  }
  if (effort == "none" && said("enable_thinking") && kwargs["enable_thinking"] != false) {
    reject(
        "'reasoning_effort': \"none\" and 'chat_template_kwargs.enable_thinking' differ; send "
        "one.",
        "reasoning_effort");
  }
  put_reasoning_effort(kwargs, effort);
  inputs.reasoning_effort = effort;
}

}  // namespace

ChatInputs read_chat_inputs(const Json& body) {
  ChatInputs inputs;
  const Json* messages = find_field(body, "messages");
  if (messages == nullptr) reject("'messages' is required.", "messages");
  require_array(*messages, "messages");
  if (messages->empty()) reject("'messages' must not be empty.", "messages");
  for (size_t i = 0; i < messages->size(); ++i) {
    inputs.messages.push_back(read_message((*messages)[i], element_param("messages", i)));
  }
  if (const Json* kwargs = find_field(body, "chat_template_kwargs")) {
    inputs.template_kwargs = require_object(*kwargs, "chat_template_kwargs");
    refuse_reserved_kwargs(inputs.template_kwargs);
  }
  read_reasoning_effort(body, inputs);
  if (const Json* documents = find_field(body, "documents")) {
    inputs.documents = require_array(*documents, "documents");
  }
  const Json* add = find_field(body, "add_generation_prompt");
  if (add != nullptr) inputs.add_generation_prompt = read_bool(*add, "add_generation_prompt");
  if (const Json* proceed = find_field(body, "continue_final_message")) {
    inputs.continue_final_message = read_bool(*proceed, "continue_final_message");
  }
  if (inputs.continue_final_message) read_final_message(inputs, add != nullptr);
  if (find_field(body, "chat_template") != nullptr) {
    reject(
        "'chat_template' in a request is not supported by this server; start it with "
        "--chat-template FILE instead.",
        "chat_template");
  }
  return inputs;
}

}  // namespace tandem::request_fields

namespace tandem {

void put_reasoning_effort(nlohmann::ordered_json& kwargs, const std::string& effort) {
  kwargs["reasoning_effort"] = effort;
  const auto thinking = kwargs.find("enable_thinking");
  if (effort == "none" && (thinking == kwargs.end() || thinking->is_null())) {
    kwargs["enable_thinking"] = false;
  }
}

std::variant<ChatInputs, ApiError> parse_apply_template_request(std::string_view body) {
  try {
    const request_fields::Json parsed = request_fields::parse_body_object(body);
    ChatInputs inputs = request_fields::read_chat_inputs(parsed);
    inputs.tools = request_fields::read_tool_request(parsed).definitions;
    return inputs;
  } catch (const request_fields::RequestRejected& rejected) {
    return rejected.error;
  }
}

std::string apply_template_response_json(std::string_view prompt) {
  // Invalid UTF-8 cannot reach here (requests are checked), but replace, never throw.
  return nlohmann::ordered_json{{"prompt", prompt}}.dump(-1, ' ', false,
                                                         nlohmann::json::error_handler_t::replace);
}

}  // namespace tandem
