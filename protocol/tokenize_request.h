// llama-server's /tokenize and /detokenize bodies, so its clients work unchanged:
// {"content": TEXT, "add_special": BOOL, "parse_special": BOOL} -> {"tokens": [IDS]} and
// {"tokens": [IDS]} -> {"content": TEXT}. Errors are 400s in the completions' style.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "protocol/api_error.h"

namespace tandem {

struct TokenizeRequest {
  std::string content;
  bool add_special = true;    // add BOS as the model's metadata says, as a completion prompt does
  bool parse_special = true;  // markers such as "<|im_start|>" become their special tokens
};

struct DetokenizeRequest {
  std::vector<int32_t> tokens;  // each in [0, INT32_MAX]; the server checks the vocabulary
};

std::variant<TokenizeRequest, ApiError> parse_tokenize_request(std::string_view body);
std::variant<DetokenizeRequest, ApiError> parse_detokenize_request(std::string_view body);

std::string tokenize_response_json(std::span<const int32_t> tokens);
// Valid JSON for any bytes: a token sequence cut inside a character decodes to invalid
// UTF-8, which becomes U+FFFD.
std::string detokenize_response_json(std::string_view content);

}  // namespace tandem
