// llama.cpp's top-n-sigma filter (llama_sampler_top_n_sigma_apply, "Top-nσ: Not All Logits
// Are You Need"): keeps the tokens whose logit is at least max - n * sigma, sigma being the
// population standard deviation of the row's finite logits (banned tokens left out). The
// cut scales with the temperature as the logits do, so its place beside the temperature
// changes nothing; the fused sampler applies it first among the filters (sampler.h, step 3).
//
// The moments are summed in double over eight interleaved lanes (element i into lane i % 8),
// folded in a fixed order: scalar code, so every CPU gives the same bits.
#pragma once

#include <span>

namespace tandem::sampler_sigma {

// The cut relative to the row's max, -n * sigma (<= 0): a token stays when z - z_max >= cut.
// n > 0. A row without a finite value gives 0.
float cut(std::span<const float> z, float n);

}  // namespace tandem::sampler_sigma
