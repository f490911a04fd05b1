// The request fields that steer when and how generation ends (min_tokens, stop_token_ids,
// include_stop_str_in_output, skip_special_tokens), the penalties and DRY: read by
// parse_completion_request, kept apart from it so that each file stays one concern.
// Internal to protocol/: throws request_fields::RequestRejected like the other readers.
#pragma once

#include <cstddef>
#include <cstdint>

#include "protocol/completion_request.h"
#include "protocol/request_fields.h"

namespace tandem::request_fields {

// llama.cpp's penalty window when a request names llama.cpp's penalties without one
// (llama-server's repeat_last_n default).
inline constexpr int64_t kLlamaDefaultPenaltyLastN = 64;

// DRY's sequence breakers: how many a request may send (each is matched against the whole
// vocabulary), and the bytes of each that count (llama.cpp's MAX_CHAR_LEN).
inline constexpr size_t kMaxDryBreakers = 64;
inline constexpr size_t kMaxDryBreakerBytes = 40;

// Reads the fields above into request (request.max_tokens must be read already: min_tokens
// may not exceed it).
void read_generation_controls(const Json& body, CompletionRequest& request);

}  // namespace tandem::request_fields
