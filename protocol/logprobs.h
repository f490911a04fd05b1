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
#include <string_view>
#include <vector>

#include "protocol/completion_request.h"

namespace tandem {

struct LogprobEntry {
  std::string token;  // the token's bytes (may be part of a UTF-8 sequence)
  float logprob = 0;  // NaN: none (the first prompt token's, which nothing predicts)
  int32_t id = -1;    // the token's id
};

struct TokenLogprobs {
  LogprobEntry chosen;
  std::vector<LogprobEntry> top;  // most likely first
};

// Where the next token's text begins in a choice's text (echoed prompt included): the
// offset in characters (code points, as OpenAI's and vLLM's Python servers count them) of
// the tokens' bytes laid end to end and decoded as Python's bytes.decode("utf-8",
// "replace") does, and the UTF-8 sequence left open there. A token that ends inside a
// character counts it and the token holding the rest counts nothing; a byte that cannot
// continue or begin a character is one U+FFFD, as in the text.
struct TextPosition {
  int64_t offset = 0;
  uint8_t expected = 0;             // continuation bytes the open sequence still needs
  uint8_t low = 0x80, high = 0xBF;  // the range its next byte must be in
  void advance(std::string_view bytes);
};

// How a response names and weighs its tokens.
struct LogprobsStyle {
  // vLLM's return_tokens_as_token_ids: each token is named "token_id:N" (tokens whose
  // texts look alike, or are parts of one character, stay apart); chat's bytes and the
  // text offsets stay the token's own.
  bool token_ids = false;
  // llama-server's post_sampling_probs: the values are the draw's (SamplingParams), written
  // as probabilities: llama_probabilities_json's prob and top_probs.
  bool probabilities = false;
};

// A body's or a chunk's tokens, and where the first one's text begins.
struct LogprobsPiece {
  std::span<const TokenLogprobs> tokens;
  TextPosition start;
  LogprobsStyle style = {};
};

// The choice's `logprobs` value: null without a piece. Completions:
// {tokens, token_logprobs, top_logprobs: [{token: logprob}, most likely first, the sampled
// token among them], text_offset}; chat:
// {content: [{token, logprob, bytes, top_logprobs: [{token, logprob, bytes}]}]}. A NaN
// logprob (the first prompt token's) is null, and its top_logprobs null.
nlohmann::ordered_json logprobs_json(Endpoint endpoint, const LogprobsPiece* piece);

// llama-server's per-token probabilities (/completion's completion_probabilities, and chat's
// logprobs.content with post_sampling_probs): per token {id, token, bytes, logprob,
// top_logprobs: [{id, token, bytes, logprob}], most likely first}, with piece.style.probabilities
// {id, token, bytes, prob, top_probs: [{id, token, bytes, prob}]}. token is the text cut
// before a UTF-8 sequence the token leaves open (bytes hold all of it); a logprob of -inf is
// the lowest float, as llama-server writes it (JSON has no -inf).
nlohmann::ordered_json llama_probabilities_json(const LogprobsPiece& piece);

// Where the text after these tokens begins, from where theirs began: the next piece's start.
TextPosition advanced(TextPosition position, std::span<const TokenLogprobs> tokens);

}  // namespace tandem
