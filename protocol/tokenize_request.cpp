#include "protocol/tokenize_request.h"

#include <nlohmann/json.hpp>

#include "protocol/jinja/unicode.h"
#include "protocol/request_fields.h"

namespace tandem {

using request_fields::find_field;

std::variant<TokenizeRequest, ApiError> parse_tokenize_request(std::string_view body) {
  try {
    const request_fields::Json object = request_fields::parse_body_object(body);
    TokenizeRequest request;
    const request_fields::Json* content = find_field(object, "content");
    if (content == nullptr) request_fields::reject("'content' is required.", "content");
    request.content = request_fields::read_string(*content, "content");
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

std::string detokenize_response_json(std::string_view content) {
  return request_fields::Json{{"content", content}}.dump(
      -1, ' ', false, request_fields::Json::error_handler_t::replace);
}

}  // namespace tandem
