// llama.cpp's DRY sampler ("don't repeat yourself", llama_sampler_dry_apply, from
// koboldcpp), which writers' clients of llama-server (SillyTavern, the web UI) turn on to
// keep a model from looping: it penalizes each token that would make the end of the history
// repeat, longer than dry_allowed_length tokens, an earlier stretch of it. The fused sampler
// runs it after the penalties (sampler.h, step 1), on the last dry_last_n tokens h[0..L) of
// the prompt and the output taken together (SamplingParams):
//  1. Nothing when L <= allowed. The repeat limit: scanning back from the last token
//     (i = 0, 1, ...), the first h[L-1-i] that heads a breaker whose tail follows it
//     (tail[j] == h[L-i+j], the tail no longer than i) limits repeats to i - the longest
//     such tail; none: L. Nothing when the limit is below allowed.
//  2. For each earlier end e < L-1, the repeat length: the number of tokens, counting back,
//     in which h ending at e matches h ending at L-1 (never past h[0]), capped at the limit.
//     When at least allowed, h[e+1] would extend that repeat.
//  3. Each such token (not a single-token breaker) gets, for its longest repeat n,
//     logit -= multiplier * base^(n - allowed), the exponent capped at
//     floor(88.7228391 / ln(base)) when base > 1.000001 (no float overflow), the power in
//     double (exact squarings) rounded to float, as llama.cpp's float penalty.
// Plain integer work and one power per penalized token: O(L) per row (the Z-algorithm).
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "protocol/sampling_params.h"

namespace tandem::sampler_dry {

struct Scratch {
  std::vector<int32_t> window;                    // h, oldest first
  std::vector<int32_t> z;                         // the Z-function of h reversed
  std::vector<std::pair<int32_t, int32_t>> ends;  // (token that extends a repeat, its length)
};

// Applies DRY (params.dry_on()) to a row of logits; prompt and output are the history's
// parts (only their last params.dry_last_n tokens together are read).
void apply(std::span<float> logits, const SamplingParams& params, std::span<const int32_t> prompt,
           std::span<const int32_t> output, Scratch& scratch);

// The repeat limit of step 1 (h.size() when no breaker ends the history).
int32_t repeat_limit(std::span<const int32_t> h, const DryBreakers* breakers);

// multiplier * base^exponent as step 3 computes it (the exponent already capped).
float penalty(float multiplier, float base, int32_t exponent);

}  // namespace tandem::sampler_dry
