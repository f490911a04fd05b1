#include "protocol/tokenize_request.h"

#include <nlohmann/json.hpp>

#include "protocol/jinja/unicode.h"
#include "protocol/request_fields.h"

namespace tandem {

using request_fields::find_field;

namespace {

// llama-server's "content", or vLLM's "prompt" (whose special tokens are added unless
// add_special_tokens says not, as vLLM's default is). vLLM's chat form is refused by name.
void read_text(const request_fields::Json& object, TokenizeRequest& request) {
  if (find_field(object, "messages") != nullptr) {
    request_fields::reject(
        "'messages' (vLLM's chat form of /tokenize) is not supported by this server; render "
        "them with /apply-template and send its prompt as 'content'.",
        "messages");
  }
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
  if (const request_fields::Json* strs = find_field(object, "return_token_strs")) {
    request.token_strs = request_fields::read_bool(*strs, "return_token_strs");
  }
}

}  // namespace

std::variant<TokenizeRequest, ApiError> parse_tokenize_request(std::string_view body) {
  try {
    const request_fields::Json object = request_fields::parse_body_object(body);
    TokenizeRequest request;
    read_text(object, request);
    if (const request_fields::Json* add = find_field(object, "add_special_tokens")) {
      request.add_special = request_fields::read_bool(*add, "add_special_tokens");
    }
    if (const request_fields::Json* add = find_field(object, "add_special")) {
      request.add_special = request_fields::read_bool(*add, "add_special");
    }
    if (const request_fields::Json* parse = find_field(object, "parse_special")) {
      request.parse_special = request_fields::read_bool(*parse, "parse_special");
    }
    if (const request_fields::Json* pieces = find_field(object, "with_pieces")) {
      request.with_pieces = request_fields::read_bool(*pieces, "with_pieces");
    }
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
