// The fused sampler's stages that carry state or weigh the draw (sampler.h): the request's
// SamplerState, Mirostat's cut and adaptive-p's draw, and the post-sampling probabilities.
// Split from sampler.cpp, which holds the row's path.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>

#include "runner/sampler/adaptive_p.h"
#include "runner/sampler/kernels.h"
#include "runner/sampler/mirostat.h"
#include "runner/sampler/rank_order.h"
#include "runner/sampler/sampler.h"

namespace tandem {

SamplerState SamplerState::first(const SamplingParams& params) {
  SamplerState s;
  s.mirostat_mu = sampler_mirostat::first_mu(params.mirostat_tau);
  const float decay = sampler_adaptive::decay_of(params.adaptive_decay);
  s.adaptive_sum = params.adaptive_target / (1.0f - decay);
  s.adaptive_weight = 1.0f / (1.0f - decay);
  return s;
}

// The row's draw weighed: the log-softmax of the drawn z over the row (log_normalizer's
// pass; ranked_ and cand_ are free once the token is drawn).
void Sampler::weigh_row(std::span<const float> z, int32_t token) {
  if (post_ == nullptr || token < 0) return;
  int32_t top;
  const float log_z = log_normalizer(z, post_k_, *post_, top, {});
  post_->chosen = {token, z[static_cast<size_t>(token)] - log_z};
  std::erase_if(post_->top, [](const TokenLogprob& t) {
    return !(sampler_kernels::exp_shifted(t.logprob) > 0.0f);
  });
  post_weighed_ = true;
}

// A kept set's draw weighed: kept_z_ holds the drawn z (scaled), kept_ids_ their ids.
void Sampler::weigh_kept(int32_t count, int32_t chosen_at) {
  if (post_ == nullptr || chosen_at < 0) return;
  float x_max = -std::numeric_limits<float>::infinity();
  for (int32_t i = 0; i < count; ++i) x_max = std::max(x_max, kept_z_[i]);
  double sum = 0.0;
  for (int32_t i = 0; i < count; ++i) sum += sampler_kernels::exp_shifted(kept_z_[i] - x_max);
  const auto log_sum = static_cast<float>(std::log(sum));
  const auto logprob = [&](int32_t i) { return (kept_z_[i] - x_max) - log_sum; };
  post_->chosen = {kept_ids_[chosen_at], logprob(chosen_at)};
  post_->top.clear();
  const int32_t k = std::min(post_k_, count);
  if (k > 0) {
    post_order_.resize(static_cast<size_t>(count));
    for (int32_t i = 0; i < count; ++i) post_order_[i] = i;
    std::partial_sort(post_order_.begin(), post_order_.begin() + k, post_order_.end(),
                      [&](int32_t a, int32_t b) {
                        return kept_z_[a] > kept_z_[b] ||
                               (kept_z_[a] == kept_z_[b] && kept_ids_[a] < kept_ids_[b]);
                      });
    for (int32_t j = 0; j < k; ++j) {
      const int32_t i = post_order_[j];
      if (sampler_kernels::exp_shifted(logprob(i)) > 0.0f) {
        post_->top.push_back({kept_ids_[i], logprob(i)});
      }
    }
  }
  post_weighed_ = true;
}

int32_t Sampler::mirostat(std::span<float> z, const SamplingParams& params, int64_t position,
                          float z_max) {
  const auto n = static_cast<int32_t>(z.size());
  float& mu = state_->mirostat_mu;
  std::span<RankedToken> kept;
  if (params.mirostat == 2) {
    const float row_sum = kernels_->z_sum(z.data(), n, z_max);
    const float floor = sampler_mirostat::v2_floor(sampler_kernels::log_approx(row_sum), mu);
    if (floor > 0.0f) {
      kept = top_k_candidates(z, z_max, 1, -FLT_MAX);
    } else {
      const auto count = static_cast<size_t>(
          kernels_->collect(z.data(), n, z_max, floor, cand_z_.data(), cand_id_.data()));
      for (size_t i = 0; i < count; ++i) ranked_[i] = {cand_z_[i], cand_id_[i], 0.0f};
      kept = std::span<RankedToken>(ranked_.data(), count);
    }
  } else {
    std::span<RankedToken> best = top_k_candidates(
        z, z_max, static_cast<size_t>(std::min(sampler_mirostat::kEstimateTokens, n)), -FLT_MAX);
    std::sort(best.begin(), best.end(), sampler_rank::precedes<RankedToken>);
    dyn_x_.resize(best.size());
    for (size_t i = 0; i < best.size(); ++i) dyn_x_[i] = best[i].z;
    const int32_t k = sampler_mirostat::v1_k(dyn_x_, mu, n);
    kept = static_cast<size_t>(k) <= best.size()
               ? best.first(static_cast<size_t>(k))
               : top_k_candidates(z, z_max, static_cast<size_t>(k), -FLT_MAX);
  }
  if (kept.empty()) return -1;
  const int32_t token = gumbel_over(kept, params.seed, position);
  // The chosen token's probability under the kept set, its sum in increasing id order.
  std::sort(kept.begin(), kept.end(),
            [](const RankedToken& a, const RankedToken& b) { return a.id < b.id; });
  float kept_sum = 0.0f, chosen_z = z_max;
  for (const RankedToken& t : kept) {
    kept_sum += sampler_kernels::exp_shifted(t.z - z_max);
    if (t.id == token) chosen_z = t.z;
  }
  const float log_p = (chosen_z - z_max) - sampler_kernels::log_approx(kept_sum);
  mu = sampler_mirostat::next_mu(mu, log_p, params.mirostat_tau, params.mirostat_eta);
  return token;
}

// adaptive-p (adaptive_p.h) over the kept set: p_i = softmax of z_i * scale over it (the
// sampler's exp, summed in double in the set's order), the draw by Gumbel-max over the logits
// the transform gives them, and the chosen token's p into the request's average.
int32_t Sampler::adaptive_over(std::span<const RankedToken> kept, const SamplingParams& params,
                               int64_t position, float scale) {
  const auto count = static_cast<int32_t>(kept.size());
  if (count == 0) return -1;
  // The drawn z laid out in a row, for the kernels' exp (bit for bit the scalar one): a row
  // without filters is every token, 128k of them.
  float x_max = -std::numeric_limits<float>::infinity();
  for (int32_t i = 0; i < count; ++i) {
    kept_z_[i] = scale == 1.0f ? kept[i].z : kept[i].z * scale;
    x_max = std::max(x_max, kept_z_[i]);
  }
  adaptive_p_.resize(kept.size());
  kernels_->exp_shifted(kept_z_.data(), count, x_max, adaptive_p_.data());
  double sum = 0.0;
  for (int32_t i = 0; i < count; ++i) sum += adaptive_p_[i];
  SamplerState& state = *state_;
  const float adapted = sampler_adaptive::adapted_target(params.adaptive_target, state.adaptive_sum,
                                                         state.adaptive_weight);
  for (int32_t i = 0; i < count; ++i) {
    adaptive_p_[i] = static_cast<float>(adaptive_p_[i] / sum);
    kept_z_[i] = sampler_adaptive::logit_of(adaptive_p_[i], adapted);
    kept_ids_[i] = kept[i].id;
  }
  int32_t at = 0;
  if (count > 1) {
    at = kernels_->gumbel_argmax_at(kept_z_.data(), kept_ids_.data(), count, params.seed, position);
    if (at < 0) return -1;
    weigh_kept(count, at);
  }
  sampler_adaptive::accept(adaptive_p_[at], sampler_adaptive::decay_of(params.adaptive_decay),
                           state.adaptive_sum, state.adaptive_weight);
  return kept_ids_[at];
}

}  // namespace tandem
