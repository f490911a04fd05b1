// OpenAI's POST /v1/embeddings: the request, read as OpenAI, vLLM and llama-server clients
// send it, and the response body.
//
// Request: {"model", "input": a string, a list of strings, a list of token ids or a list of
// such lists (at most kMaxEmbeddingInputs, none empty), "encoding_format": "float" (the
// default) or "base64" (the floats' little-endian bytes, as the openai SDKs ask by default),
// "dimensions" (the model's width only: tandem does not cut embeddings short), "user",
// vLLM's "normalize" (default true), "truncate_prompt_tokens" (keep the last k tokens; -1:
// the context), "add_special_tokens" (default true: BOS and EOS as the model's metadata
// says) and "cache_salt", llama-server's "embd_normalize" (2: Euclidean, -1: none; its
// other norms are refused by name)}. Other fields are ignored, as everywhere (vLLM too).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "protocol/api_error.h"

namespace tandem {

inline constexpr size_t kMaxEmbeddingInputs = 2048;  // OpenAI's limit per request

struct EmbeddingInput {
  std::string text;             // a text input (tokens empty)
  std::vector<int32_t> tokens;  // a token input, each id in [0, INT32_MAX] (text empty)
  bool is_tokens = false;
};

struct EmbeddingRequest {
  std::string model;
  std::vector<EmbeddingInput> inputs;  // at least one, none empty
  bool listed = false;                 // `input` was a list of inputs: errors name input[i]
  bool base64 = false;
  bool normalize = true;              // to unit Euclidean length
  std::optional<int64_t> dimensions;  // >= 1; the server checks it against the model
  // Keep only the last k tokens of each input (vLLM's left truncation); -1: as many as the
  // context holds; nullopt: an input longer than the context is refused.
  std::optional<int64_t> truncate_prompt_tokens;
  bool add_special_tokens = true;  // texts only: token inputs are fed as given
  std::string user;
  std::string cache_salt;
};

std::variant<EmbeddingRequest, ApiError> parse_embedding_request(std::string_view body);

// Scales v to unit Euclidean length (a zero vector stays zero), in double.
void normalize_embedding(std::vector<float>& v);

// The response: {"object": "list", "data": [{"object": "embedding", "index": i,
// "embedding": [...] or "BASE64"}], "model", "usage": {"prompt_tokens", "total_tokens"}}.
std::string embedding_response_json(std::string_view model,
                                    std::span<const std::vector<float>> embeddings, bool base64,
                                    int64_t prompt_tokens);

}  // namespace tandem
