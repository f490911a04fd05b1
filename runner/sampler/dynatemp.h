// llama.cpp's dynamic temperature (llama_sampler_temp_ext_apply), which SillyTavern sends as
// dynatemp_range and dynatemp_exponent: the temperature of a step moves within
// [max(0, T - range), T + range] with the normalized entropy of the tokens the temperature
// stage sees, T_dyn = T_min + (T_max - T_min) * (H / log n)^exponent. The fused sampler
// reads it where the chain puts the temperature: after the filters (llama-server's default
// chain: over the kept set, sampler.h step 4) or before them (over the whole row, n counting
// every entry as llama.cpp's candidate array does).
//
// In float with the sampler's own exp and log, sums in the given order: e_i =
// exp_shifted(x_i - x_max), S = sum e_i, H = log S - (sum over e_i > 0 of e_i (x_i - x_max)) / S,
// the power as exp_shifted(exponent * log(H / log n)) (1 at exponent 0; 0 at H = 0), so every
// CPU gives the same bits.
#pragma once

#include <cstddef>
#include <span>

namespace tandem::sampler_dynatemp {

// The step's temperature for logits x (finite or -inf; e: their exp_shifted(x - x_max),
// given), n the candidates counted for log n (n >= 2).
float temperature(std::span<const float> x, std::span<const float> e, float x_max, size_t n,
                  float temperature, float range, float exponent);

}  // namespace tandem::sampler_dynatemp
