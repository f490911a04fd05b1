// OpenAI-style error objects: the one shape every failed HTTP request answers with,
// {"error": {"message", "type", "param", "code"}}. Plain values; the makers fix the
// status and type so that every layer reports the same failure the same way.
#pragma once

#include <string>
#include <string_view>

#include "protocol/outcomes.h"

namespace tandem {

struct ApiError {
  int status = 400;
  std::string type;     // OpenAI's error type, e.g. "invalid_request_error"
  std::string message;  // for a person; names the offending value where it helps
  std::string param;    // the request field at fault ("messages[1].content"); empty: none
  std::string code;     // a machine-readable reason ("context_length_exceeded"); empty: none
};

// 400 invalid_request_error: malformed JSON, wrong types, out-of-range values.
ApiError bad_request(std::string message, std::string param = {});
// 400 with code context_length_exceeded: the prompt leaves no room to generate.
ApiError context_length_exceeded(std::string message, std::string param = "prompt");
// 401 authentication_error, code invalid_api_key.
ApiError unauthorized(std::string message = "Incorrect API key provided.");
// 404 not_found_error: an unknown route.
ApiError not_found(std::string message);
// 404 not_found_error, code model_not_found: a request naming a model not served here.
ApiError model_not_found(std::string_view model);
// 405 invalid_request_error, code method_not_allowed.
ApiError method_not_allowed(std::string message);
// 413 invalid_request_error, code request_too_large.
ApiError payload_too_large(std::string message);
// 503 server_error, code overloaded: the queue is full (the server adds Retry-After).
ApiError overloaded(std::string message = "The server is overloaded; retry later.");
// 503 server_error, code unavailable: the model is not loaded or the server is stopping.
ApiError service_unavailable(std::string message);
// 500 server_error: a bug or an internal failure; the message must not leak internals.
ApiError internal_error(std::string message = "Internal server error.");

// The answer for a generation that ended in an error or was refused at submission:
// kInvalidRequest is a 400 with `detail` as its message; kOverloaded and kShuttingDown
// are 503s (overloaded(), "The server is shutting down."); kInternal is a 500 whose
// message leaves the detail out.
ApiError api_error_for(ErrorKind kind, std::string detail = {});

// The response body for an error. Always valid JSON, whatever bytes message holds
// (invalid UTF-8 is replaced by U+FFFD). param and code are null when empty.
std::string to_json_body(const ApiError& error);

}  // namespace tandem
