// llama.cpp's adaptive-p sampler (llama_sampler_adaptive_p_apply and _accept), which the end
// of SillyTavern's default chain names: it replaces the draw's logits by a function of each
// kept token's probability p that peaks where p equals an adapted target and falls off
// quadratically near it and linearly far from it, so the text keeps choosing tokens about
// `target` likely. The adapted target is 2 target - the decayed average of the chosen
// tokens' p (before the transform), clamped to [0, 1]: a run of likelier choices lowers it.
// The average is the request's state (SamplerState::adaptive_sum / adaptive_weight), primed
// at the target as llama.cpp primes it. Scalar float code in a fixed order, so the state and
// the tokens never depend on the ISA.
#pragma once

#include <algorithm>
#include <cmath>

namespace tandem::sampler_adaptive {

// llama.cpp's constants (not settable there either).
inline constexpr float kWidth = 0.3f;
inline constexpr float kPeakLogit = 5.0f;
inline constexpr float kSharpness = 10.0f;
inline constexpr float kMaxDecay = 0.99f;

inline float decay_of(float decay) { return std::clamp(decay, 0.0f, kMaxDecay); }

// The target the transform peaks at, from the running average sum / weight.
inline float adapted_target(float target, float sum, float weight) {
  const float t = std::clamp(target, 0.0f, 1.0f);
  return std::clamp(weight == 0.0f ? t : 2.0f * t - sum / weight, 0.0f, 1.0f);
}

// The logit a token of probability p gets.
inline float logit_of(float p, float adapted) {
  const float d = std::abs((p - adapted) * (1.0f / kWidth));
  return kPeakLogit - kSharpness * d * d / (1.0f + d);
}

// The average after choosing a token of probability p.
inline void accept(float p, float decay, float& sum, float& weight) {
  sum = p + decay * sum;
  weight = 1.0f + decay * weight;
}

}  // namespace tandem::sampler_adaptive
