#include "protocol/tokenize_request.h"

#include <nlohmann/json.hpp>

#include "protocol/jinja/unicode.h"
#include "protocol/request_fields.h"
#include "protocol/tool_calls/tool_fields.h"

namespace tandem {

using request_fields::find_field;

namespace {

// llama-server's "content" or vLLM's "prompt".
void read_plain_text(const request_fields::Json& object, TokenizeRequest& request) {
  const request_fields::Json* content = find_field(object, "content");
  const request_fields::Json* prompt = find_field(object, "prompt");
  if (content == nullptr && prompt == nullptr) {
    request_fields::reject("'content' (or vLLM's 'prompt') is required.", "content");
  }
  if (content != nullptr) {
    request.content = request_fields::read_string(*content, "content");
    return;
  }
  request.content = request_fields::read_string(*prompt, "prompt");
  request.vllm_form = true;
  request.add_special = true;
}

// llama-server's "content", vLLM's "prompt" (whose special tokens are added unless
// add_special_tokens says not, as vLLM's default is), or vLLM's chat form ("messages",
// rendered as a chat completion renders them: check_chat_form).
void read_text(const request_fields::Json& object, TokenizeRequest& request) {
  if (find_field(object, "messages") != nullptr) {
    if (find_field(object, "content") != nullptr || find_field(object, "prompt") != nullptr)
      request_fields::reject("Send 'messages' or a text ('content', 'prompt'), not both.",
                             "messages");
    request.chat = request_fields::read_chat_inputs(object);
    request.chat->tools = request_fields::read_tool_request(object).definitions;
    request.vllm_form = true;
  } else {
    read_plain_text(object, request);
  }
  if (request.vllm_form) {
    if (const request_fields::Json* strs = find_field(object, "return_token_strs"))
      request.token_strs = request_fields::read_bool(*strs, "return_token_strs");
  }
}

// The chat form's tokens are what a chat completion feeds: the template's markers parsed
// as special tokens, the model's BOS rule applied already (vLLM's add_special_tokens true
// would add a second), answered in vLLM's shape. Flags asking otherwise are refused by name.
void check_chat_form(const TokenizeRequest& request, const char* add_field) {
  auto refuse = [](const std::string& field, const char* value, const char* why) {
    request_fields::reject("'" + field + "' cannot be " + value + " with 'messages': " + why,
                           field);
  };
  if (request.add_special)
    refuse(add_field, "true",
           "the tokens are the prompt a chat completion feeds, with the model's special tokens "
           "already added.");
  if (!request.parse_special)
    refuse("parse_special", "false", "the chat template's markers are its special tokens.");
  if (request.with_pieces)
    refuse("with_pieces", "true", "the chat form answers in vLLM's shape (ask return_token_strs).");
}

}  // namespace

std::variant<TokenizeRequest, ApiError> parse_tokenize_request(std::string_view body) {
  try {
    const request_fields::Json object = request_fields::parse_body_object(body);
    TokenizeRequest request;
    read_text(object, request);
    const char* add_field = "add_special_tokens";  // the flag's name as sent
    if (const request_fields::Json* add = find_field(object, "add_special_tokens")) {
      request.add_special = request_fields::read_bool(*add, "add_special_tokens");
    }
    if (const request_fields::Json* add = find_field(object, "add_special")) {
      request.add_special = request_fields::read_bool(*add, "add_special");
      add_field = "add_special";
    }
    if (const request_fields::Json* parse = find_field(object, "parse_special")) {
      request.parse_special = request_fields::read_bool(*parse, "parse_special");
    }
    if (const request_fields::Json* pieces = find_field(object, "with_pieces")) {
      request.with_pieces = request_fields::read_bool(*pieces, "with_pieces");
    }
    if (request.chat) check_chat_form(request, add_field);
    return request;
  } catch (const request_fields::RequestRejected& rejected) {
    return rejected.error;
  }
}

std::variant<DetokenizeRequest, ApiError> parse_detokenize_request(std::string_view body) {
  try {
    const request_fields::Json object = request_fields::parse_body_object(body);
    const request_fields::Json* tokens = find_field(object, "tokens");
    if (tokens == nullptr) request_fields::reject("'tokens' is required.", "tokens");
    return DetokenizeRequest{request_fields::read_token_ids(*tokens, "tokens")};
  } catch (const request_fields::RequestRejected& rejected) {
    return rejected.error;
  }
}

std::string tokenize_response_json(std::span<const int32_t> tokens,
                                   std::span<const std::string> pieces) {
  using Json = request_fields::Json;
  Json ids = Json::array();
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (pieces.empty()) {
      ids.push_back(tokens[i]);
      continue;
    }
    Json piece = Json::array();
    if (jinja::is_valid_utf8(pieces[i])) {
      piece = pieces[i];
    } else {
      for (unsigned char c : pieces[i]) piece.push_back(static_cast<int>(c));
    }
    ids.push_back(Json{{"id", tokens[i]}, {"piece", std::move(piece)}});
  }
  return Json{{"tokens", std::move(ids)}}.dump();
}

std::string vllm_tokenize_response_json(std::span<const int32_t> tokens,
                                        const VllmTokenizeExtras& extras) {
  using Json = request_fields::Json;
  Json body = {{"count", tokens.size()},
               {"max_model_len", extras.max_model_len},
               {"tokens", Json(std::vector<int32_t>(tokens.begin(), tokens.end()))},
               {"token_strs", nullptr}};
  if (!extras.token_strs.empty()) body["token_strs"] = extras.token_strs;
  return body.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string detokenize_response_json(std::string_view content) {
  // llama-server's name and vLLM's, for the same text.
  return request_fields::Json{{"content", content}, {"prompt", content}}.dump(
      -1, ' ', false, request_fields::Json::error_handler_t::replace);
}

}  // namespace tandem
