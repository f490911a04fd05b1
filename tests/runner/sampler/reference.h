// A slow, literal reading of sampler.h's contract for the sampler tests: full sort by rank,
// filters walked one token at a time, Gumbel noise from the scalar definition. The Sampler's
// fast paths (ladder, quickselect, vector kernels) must agree with it.
#pragma once

#include <algorithm>
#include <array>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <span>
#include <vector>

#include "protocol/sampling_params.h"
#include "runner/sampler/kernels.h"
#include "runner/sampler/top_n_sigma.h"
#include "runner/sampler/typical.h"

namespace tandem::testing {

// The tempered logits z = logit * (1/T), as the sampler computes them.
inline std::vector<float> tempered(std::span<const float> logits, float temperature) {
  const float inv_t = 1.0f / temperature;
  std::vector<float> z(logits.begin(), logits.end());
  if (inv_t != 1.0f) {
    for (float& v : z) v = v * inv_t;
  }
  return z;
}

// The ids top_n_sigma, min_p and top_k leave of the tempered logits z, in rank order (z descending,
// ties to the lower id); empty when no z is finite.
inline std::vector<int32_t> reference_survivors(std::span<const float> z,
                                                const SamplingParams& params) {
  const auto n = static_cast<int32_t>(z.size());
  std::vector<int32_t> order;
  for (int32_t i = 0; i < n; ++i) {
    if (std::isfinite(z[i])) order.push_back(i);
  }
  std::sort(order.begin(), order.end(),
            [&](int32_t a, int32_t b) { return z[a] > z[b] || (z[a] == z[b] && a < b); });
  if (order.empty()) return order;
  const float z_max = z[order.front()];
  // top_n_sigma first (its cut from the row's standard deviation, top_n_sigma.h, which its
  // own test checks against a plain two-pass computation), then min_p, then top_k: each
  // keeps a rank prefix.
  if (params.top_n_sigma > 0.0f) {
    const float cut = sampler_sigma::cut(z, params.top_n_sigma);
    size_t r = 0;
    while (r < order.size() && z[order[r]] - z_max >= cut) ++r;
    order.resize(r);
  }
  if (params.min_p > 0.0f) {
    const float floor = std::min(std::log(params.min_p), 0.0f);
    size_t r = 0;
    while (r < order.size() && z[order[r]] - z_max >= floor) ++r;
    order.resize(r);
  }
  if (params.top_k > 0 && params.top_k < n)
    order.resize(std::min(order.size(), size_t(params.top_k)));
  // typ_p over what is left (its choice is typical.h's, which its own test checks against
  // llama.cpp's vectors and a plain double computation), keeping rank order.
  if (params.typical_p < 1.0f && !order.empty()) {
    std::vector<int32_t> by_id = order;
    std::sort(by_id.begin(), by_id.end());
    std::vector<float> set_z, set_e;
    for (int32_t id : by_id) {
      set_z.push_back(z[id]);
      set_e.push_back(sampler_kernels::exp_shifted(z[id] - z_max));
    }
    sampler_typical::Scratch scratch;
    std::vector<uint8_t> keep;
    sampler_typical::mark_typical(set_z, set_e, z_max, by_id, params.typical_p, scratch, keep);
    std::erase_if(order, [&](int32_t id) {
      return !keep[std::lower_bound(by_id.begin(), by_id.end(), id) - by_id.begin()];
    });
  }
  return order;
}

// The kept ids, in rank order (z descending, ties to the lower id), for temperature > 0.
inline std::vector<int32_t> reference_kept(std::span<const float> logits,
                                           const SamplingParams& params) {
  const std::vector<float> z = tempered(logits, params.temperature);
  const auto n = static_cast<int32_t>(z.size());
  std::vector<int32_t> order = reference_survivors(z, params);
  // The row's top (typ_p may have dropped it from the survivors).
  float z_max = -std::numeric_limits<float>::infinity();
  for (float v : z) {
    if (std::isfinite(v)) z_max = std::max(z_max, v);
  }
  size_t keep = order.size();
  if (params.top_p < 1.0f) {
    // top_p over what is left, renormalized: S summed in the sampler's order, the 16-lane
    // order over the whole vocabulary when neither filter before it is on, else by id.
    float mass = 0.0f;
    const bool whole = !(params.min_p > 0.0f) && !(params.top_k > 0 && params.top_k < n) &&
                       !(params.top_n_sigma > 0.0f) && !(params.typical_p < 1.0f);
    if (whole) {
      std::array<float, 16> lanes{};
      for (int32_t i = 0; i < n; ++i) {
        lanes[i & 15] = lanes[i & 15] + sampler_kernels::exp_shifted(z[i] - z_max);
      }
      for (int width = 8; width >= 1; width /= 2) {
        for (int l = 0; l < width; ++l) lanes[l] = lanes[l] + lanes[l + width];
      }
      mass = lanes[0];
    } else {
      std::vector<int32_t> by_id = order;
      std::sort(by_id.begin(), by_id.end());
      for (int32_t id : by_id) mass += sampler_kernels::exp_shifted(z[id] - z_max);
    }
    const float target = params.top_p * mass;
    float acc = 0.0f;
    for (size_t r = 0; r < order.size(); ++r) {
      acc += sampler_kernels::exp_shifted(z[order[r]] - z_max);
      if (acc >= target) {
        keep = r + 1;
        break;
      }
    }
  }
  order.resize(keep);
  return order;
}

// softmax(z) restricted to the kept set and renormalized, in double, indexed by id.
inline std::vector<double> reference_probs(std::span<const float> logits,
                                           const SamplingParams& params) {
  const std::vector<float> z = tempered(logits, params.temperature);
  const std::vector<int32_t> kept = reference_kept(logits, params);
  std::vector<double> p(z.size(), 0.0);
  double sum = 0.0;
  for (int32_t id : kept) sum += p[id] = std::exp(double(z[id]) - double(z[kept.front()]));
  for (double& v : p) v /= sum;
  return p;
}

// The Gumbel-max token over a kept set (reference_kept's result) of tempered logits z.
inline int32_t gumbel_token(std::span<const float> z, std::span<const int32_t> kept, uint64_t seed,
                            int64_t position) {
  if (kept.size() == 1) return kept[0];
  float best = -std::numeric_limits<float>::infinity();
  int32_t token = -1;
  for (int32_t id : kept) {
    const float v = z[id] + sampler_kernels::gumbel_noise(seed, position, id);
    if (v > best || (v == best && id < token)) {
      best = v;
      token = id;
    }
  }
  return token;
}

// The token the contract prescribes for temperature > 0.
inline int32_t reference_token(std::span<const float> logits, const SamplingParams& params,
                               int64_t position) {
  return gumbel_token(tempered(logits, params.temperature), reference_kept(logits, params),
                      params.seed, position);
}

}  // namespace tandem::testing
