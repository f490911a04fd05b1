// llama.cpp's Mirostat samplers (llama_sampler_mirostat_apply, ..._v2_apply), which clients
// of llama-server (SillyTavern's "Mirostat" preset, koboldcpp-style front ends) turn on to
// hold the text's surprise near a target tau instead of cutting the row by fixed filters.
// Each keeps a running estimate mu (2 tau at the start) that the chosen token's surprise
// moves: mu -= eta * (surprise - tau), the surprise -log2 p of the token under the kept
// set, renormalized. So a row's cut depends on every token drawn before it: the state
// travels with the request from step to step (StepRow::state).
// - v2 keeps the tokens whose surprise is at most mu (p >= 2^-mu over the row), at least
//   the top one.
// - v1 keeps the top k, k from Zipf's exponent s estimated on the 100 likeliest tokens and
//   from mu: k = (e 2^mu / (1 - n^-e))^(1/s), e = s - 1, n the vocabulary.
// The fused sampler then draws from the kept set by its Gumbel-max (sampler.h). All of it
// is scalar float code with the sampler's own exp and log, in a fixed order, so the state
// and the tokens never depend on the ISA.
#pragma once

#include <cstdint>
#include <span>

namespace tandem::sampler_mirostat {

inline constexpr int32_t kEstimateTokens = 100;  // llama.cpp's m: v1 fits s on these

// The starting mu (llama.cpp's 2 tau).
inline float first_mu(float tau) { return 2.0f * tau; }

// v2's cut relative to the row's top z: tokens with z - z_max >= it are kept. log_sum is
// log(sum of exp(z - z_max)) over the row. Above 0, not even the top token's surprise is
// within mu: the top token alone stays.
float v2_floor(float log_sum, float mu);

// v1's k in [1, n_vocab], from the best tokens' z in rank order (at most kEstimateTokens of
// them, all finite) and mu.
int32_t v1_k(std::span<const float> ranked_z, float mu, int32_t n_vocab);

// mu after drawing a token of log-probability log_p (natural log) under the kept set,
// within +-1e30.
float next_mu(float mu, float log_p, float tau, float eta);

// e^x for any x (0 below -103, +inf above 88.7): the sampler's exp_shifted on the fraction
// below a power of two, which scales it exactly.
float exp_any(float x);

}  // namespace tandem::sampler_mirostat
