// Log-probabilities as a response carries them: per token, its text and log-probability
// and the k most likely alternatives. The scheduler fills them from the sampler's ids
// (runner/sampler/sampler.h says what the values are: the model's log-softmax before
// logit_bias, penalties, temperature and filters); the encoder writes them as
// OpenAI's completions or chat `logprobs` object.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "protocol/completion_request.h"

namespace tandem {

struct LogprobEntry {
  std::string token;  // the token's bytes (may be part of a UTF-8 sequence)
  float logprob = 0;  // NaN: none (the first prompt token's, which nothing predicts)
};

struct TokenLogprobs {
  LogprobEntry chosen;
  std::vector<LogprobEntry> top;  // most likely first
};

// A body's or a chunk's tokens. text_offset: where the first token's text begins in the
// choice's text (echoed prompt included), in characters (code points, as OpenAI's and
// vLLM's Python servers count them) of the tokens' texts laid end to end.
struct LogprobsPiece {
  std::span<const TokenLogprobs> tokens;
  int64_t text_offset = 0;
};

// The choice's `logprobs` value: null without a piece. Completions:
// {tokens, token_logprobs, top_logprobs: [{token: logprob}, most likely first, the sampled
// token among them], text_offset}; chat:
// {content: [{token, logprob, bytes, top_logprobs: [{token, logprob, bytes}]}]}. A NaN
// logprob (the first prompt token's) is null, and its top_logprobs null.
nlohmann::ordered_json logprobs_json(Endpoint endpoint, const LogprobsPiece* piece);

// The characters of a piece's token texts, laid end to end: what the next piece's offset
// adds.
int64_t logprobs_text_units(std::span<const TokenLogprobs> tokens);

}  // namespace tandem
