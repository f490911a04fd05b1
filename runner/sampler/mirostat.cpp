#include "runner/sampler/mirostat.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "runner/sampler/kernels.h"

namespace tandem::sampler_mirostat {
namespace {

constexpr float kLn2 = 0.693147180559945309f;
constexpr float kLog2e = 1.44269504088896341f;

}  // namespace

float exp_any(float x) {
  if (std::isnan(x)) return x;
  if (x > 88.7f) return std::numeric_limits<float>::infinity();
  if (x < -103.0f) return 0.0f;
  // x = n ln2 + r with r in about [-ln2, 0]: e^x = 2^n e^r, the power exact (ldexp).
  const float n = std::ceil(x * kLog2e);
  const float r = std::min(0.0f, x - n * kLn2);
  return std::ldexp(sampler_kernels::exp_shifted(r), static_cast<int>(n));
}

float v2_floor(float log_sum, float mu) { return log_sum - mu * kLn2; }

int32_t v1_k(std::span<const float> ranked_z, float mu, int32_t n_vocab) {
  // Zipf's exponent by least squares through the origin on the log-rank ratios t_i and the
  // log-probability ratios b_i = log(p_i / p_{i+1}) = z_i - z_{i+1}, as llama.cpp fits it.
  float sum_tb = 0.0f, sum_tt = 0.0f;
  const size_t pairs =
      std::min<size_t>(kEstimateTokens - 1, ranked_z.empty() ? 0 : ranked_z.size() - 1);
  for (size_t i = 0; i < pairs; ++i) {
    const float t = sampler_kernels::log_approx(float(i + 2) / float(i + 1));
    const float b = ranked_z[i] - ranked_z[i + 1];
    sum_tb += t * b;
    sum_tt += t * t;
  }
  if (!(sum_tt > 0.0f)) return 1;  // one token: nothing to fit, and nothing else to keep
  const float s = sum_tb / sum_tt;
  const float e = s - 1.0f;
  const float log_n = sampler_kernels::log_approx(static_cast<float>(n_vocab));
  // log of e 2^mu / (1 - n^-e), whose two factors share their sign; e -> 0 gives
  // 2^mu / ln n.
  float log_ratio;
  if (std::fabs(e) * log_n < 1e-6f) {
    log_ratio = mu * kLn2 - sampler_kernels::log_approx(log_n);
  } else {
    const float denominator = std::fabs(1.0f - exp_any(-e * log_n));
    log_ratio = std::isfinite(denominator)
                    ? sampler_kernels::log_approx(std::fabs(e)) + mu * kLn2 -
                          sampler_kernels::log_approx(denominator)
                    : -std::numeric_limits<float>::infinity();  // e far below 0: k is 1
  }
  // k = ratio^(1/s); a flat top (s = 0) keeps all or one, as the power's limit does.
  float log_k;
  if (s > 0.0f) {
    log_k = log_ratio / s;
  } else {
    log_k = log_ratio >= 0.0f ? std::numeric_limits<float>::infinity()
                              : -std::numeric_limits<float>::infinity();
  }
  if (!(log_k < log_n)) return n_vocab;  // +inf and NaN too
  if (!(log_k > 0.0f)) return 1;
  return std::clamp(static_cast<int32_t>(exp_any(log_k)), 1, n_vocab);
}

float next_mu(float mu, float log_p, float tau, float eta) {
  const float surprise = -log_p * kLog2e;
  // Bounded, so that an eta near the float range moves mu far but never to inf or NaN
  // (which would leave v2 nothing to keep): 1e30 bits of surprise keep all or one anyway.
  constexpr float kBound = 1e30f;
  return std::clamp(mu - eta * (surprise - tau), -kBound, kBound);
}

}  // namespace tandem::sampler_mirostat
