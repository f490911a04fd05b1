#include "protocol/api_error.h"

#include <nlohmann/json.hpp>
#include <utility>

namespace tandem {
namespace {

ApiError make(int status, const char* type, std::string message, std::string param,
              std::string code) {
  return ApiError{status, type, std::move(message), std::move(param), std::move(code)};
}

}  // namespace

ApiError bad_request(std::string message, std::string param) {
  return make(400, "invalid_request_error", std::move(message), std::move(param), "");
}

ApiError context_length_exceeded(std::string message, std::string param) {
  return make(400, "invalid_request_error", std::move(message), std::move(param),
              "context_length_exceeded");
}

ApiError unauthorized(std::string message) {
  return make(401, "authentication_error", std::move(message), "", "invalid_api_key");
}

ApiError not_found(std::string message) {
  return make(404, "not_found_error", std::move(message), "", "");
}

ApiError model_not_found(std::string_view model) {
  // The name comes from the request: a bound keeps a megabyte of it out of the answer.
  constexpr size_t kMaxQuoted = 160;
  std::string quoted(model.substr(0, kMaxQuoted));
  if (model.size() > kMaxQuoted) quoted += "...";
  return make(404, "not_found_error",
              "The model '" + quoted + "' does not exist or is not served here.", "model",
              "model_not_found");
}

ApiError method_not_allowed(std::string message) {
  return make(405, "invalid_request_error", std::move(message), "", "method_not_allowed");
}

ApiError payload_too_large(std::string message) {
  return make(413, "invalid_request_error", std::move(message), "", "request_too_large");
}

ApiError overloaded(std::string message) {
  return make(503, "server_error", std::move(message), "", "overloaded");
}

ApiError service_unavailable(std::string message) {
  return make(503, "server_error", std::move(message), "", "unavailable");
}

ApiError internal_error(std::string message) {
  return make(500, "server_error", std::move(message), "", "");
}

ApiError api_error_for(ErrorKind kind, std::string detail) {
  switch (kind) {
    case ErrorKind::kInvalidRequest:
      return bad_request(std::move(detail));
    case ErrorKind::kOverloaded:
      return overloaded();
    case ErrorKind::kShuttingDown:
      return service_unavailable("The server is shutting down.");
    case ErrorKind::kInternal:
      break;
  }
  return internal_error();
}

std::string to_json_body(const ApiError& error) {
  // OpenAI's order: message, type, param, code.
  using Json = nlohmann::ordered_json;
  Json inner = {{"message", error.message}, {"type", error.type}};
  inner["param"] = error.param.empty() ? Json(nullptr) : Json(error.param);
  inner["code"] = error.code.empty() ? Json(nullptr) : Json(error.code);
  // A message may quote request bytes (a JSON parse error's "last read"); replace keeps
  // the body valid JSON instead of throwing on invalid UTF-8.
  return Json{{"error", std::move(inner)}}.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace tandem
