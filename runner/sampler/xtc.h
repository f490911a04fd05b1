// llama.cpp's XTC sampler ("exclude top choices", llama_sampler_xtc_apply), which writers'
// clients of llama-server (SillyTavern, the web UI) turn on to keep a model off its most
// worn phrases: at a step where its draw fires, every kept token at least `threshold`
// likely is dropped except the least likely of them, when at least two are. The fused
// sampler runs it on the tokens its filters kept, before the draw (sampler.h, step 4).
//
// The draw is keyed like the Gumbel noise, so the step's choice depends only on the seed
// and the position: word 0 of philox4x32_10({0, 1, position & 0xffffffff, position >> 32},
// {seed & 0xffffffff, seed >> 32}) as uniform_open01, which fires when <= probability
// (Gumbel counters have 0 in word 1, so the streams never meet). The probabilities are
// scalar float code in a fixed order, so the result never depends on the ISA.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace tandem::sampler_xtc {

// Whether the step at `position` excludes its top choices (probability in (0, 1]).
bool fires(float probability, uint64_t seed, int64_t position);

// The kept tokens' z (as the filters read them) in any order: marks drop[i] for each token
// to exclude, p_i = softmax(z)_i >= threshold, all but the least likely of them (ties: the
// one with the highest id). Returns whether any is dropped (at least two reach threshold).
bool mark_top_choices(std::span<const float> z, std::span<const int32_t> ids, float threshold,
                      std::vector<uint8_t>& drop);

}  // namespace tandem::sampler_xtc
