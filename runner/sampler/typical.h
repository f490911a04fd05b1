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
// lower id first); the kept ones are the shortest such prefix whose sum of p (in that order,
// in float) exceeds typical_p, else all of them.
//
// The order is never built for the whole set when few are kept: a histogram of the scores'
// float bits (a sixteenth of an octave a bucket) with each bucket's mass finds the buckets
// that must hold the cut, and only their tokens are sorted, by 64-bit keys (score bits, then
// position) with equal scores put in rank order. If the float sum falls short of where the
// double one said, the walk goes on a bucket at a time. A 128k-token row without top_k
// (bench_sampler "+typ") took 6.5 ms by a comparison selection; see docs/design.md.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace tandem::sampler_typical {

struct Scratch {
  std::vector<float> score, p;
  std::vector<uint64_t> keys;   // (score bits << 32) | position, for the tokens being walked
  std::vector<uint32_t> count;  // per score bucket
  std::vector<double> mass;     // per score bucket
  std::vector<float> z, e;      // the caller's copies of the set, and what it keeps
  std::vector<int32_t> ids;
  std::vector<uint8_t> keep;
};

// z, e and ids: the set, in increasing id order. Fills keep[i] for each token kept and
// returns how many are (at least one when the set is not empty).
size_t mark_typical(std::span<const float> z, std::span<const float> e, float z_max,
                    std::span<const int32_t> ids, float typical_p, Scratch& scratch,
                    std::vector<uint8_t>& keep);

// The walk alone, given each token's score (>= 0 or NaN-free) and p: tokens in order of
// score, then z descending, then id; keep[i] = 1 for the shortest prefix whose float sum of
// p passes typical_p, else for all. Returns how many are kept. Exposed for its test, which
// checks it against a full sort.
size_t keep_in_order(std::span<const float> score, std::span<const float> p,
                     std::span<const float> z, std::span<const int32_t> ids, float typical_p,
                     Scratch& scratch, std::vector<uint8_t>& keep);

}  // namespace tandem::sampler_typical
