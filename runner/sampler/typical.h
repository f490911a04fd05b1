// llama.cpp's locally typical sampling (llama_sampler_typical_apply, Meister et al.), which
// llama-server's clients send as typical_p (typ_p in its chains): of the tokens the filters
// before it kept, it keeps those whose surprisal -log p is closest to the set's entropy H,
// in that order, until their mass passes typical_p. Unlike the other filters it may drop the
// likeliest token. The fused sampler runs it after top_k and before top_p (sampler.h,
// step 3), on the z the filters read.
//
// Over the set, given e_i = exp_shifted(z_i - z_max) (z_max the row's top), in float with the
// sampler's own log and sums in increasing id order (the same bits on every CPU): S = sum e_i,
// p_i = e_i / S, s_i = log S - (z_i - z_max) (= -log p_i; finite where p_i rounds to 0),
// H = sum p_i s_i, score_i = |s_i - H|. Tokens in order of score, then rank (z descending,
// lower id first); the kept ones are the shortest such prefix whose sum of p (in that order)
// exceeds typical_p, else all of them. The order is found a chunk at a time (selection, then
// a sort of the chunk), so a row of 128k tokens is not sorted whole when few are kept.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace tandem::sampler_typical {

struct Scratch {
  std::vector<float> score, p;
  std::vector<uint32_t> order;
  std::vector<float> z, e;  // the caller's copies of the set, and what it keeps
  std::vector<int32_t> ids;
  std::vector<uint8_t> keep;
};

// z, e and ids: the set, in increasing id order. Fills keep[i] for each token kept and
// returns how many are (at least one when the set is not empty).
size_t mark_typical(std::span<const float> z, std::span<const float> e, float z_max,
                    std::span<const int32_t> ids, float typical_p, Scratch& scratch,
                    std::vector<uint8_t>& keep);

}  // namespace tandem::sampler_typical
