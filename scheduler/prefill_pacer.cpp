#include "scheduler/prefill_pacer.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tandem {
namespace {

// Units that keep the fits' features near 1 on the shapes served (a chunk of a few hundred
// tokens, a few hundred thousand keys), so their normal equations stay well conditioned.
constexpr double kTokenUnit = 256;
constexpr double kKeyUnit = 262144;

}  // namespace

CostFit<3>::Vec PrefillPacer::decode_features(const StepLoad& load) {
  return {1.0, load.decode_rows / kTokenUnit, static_cast<double>(load.decode_keys) / kKeyUnit};
}

CostFit<2>::Vec PrefillPacer::prompt_features(const StepLoad& load) {
  return {load.prompt_tokens / kTokenUnit, static_cast<double>(load.prompt_keys) / kKeyUnit};
}

double PrefillPacer::predict(const StepLoad& load) const {
  return decode_.predict(decode_features(load)) + prompt_.predict(prompt_features(load));
}

template <size_t N>
double PrefillPacer::within_reason(const CostFit<N>& fit, const typename CostFit<N>::Vec& x,
                                   double seconds) {
  const double predicted = fit.predict(x);
  if (fit.samples() < kSettle || !(predicted > 0)) return seconds;
  return std::clamp(seconds, predicted / kOutlier, predicted * kOutlier);
}

int32_t PrefillPacer::prompt_budget(const StepLoad& decode, int32_t waiting_prompts,
                                    int32_t position) const {
  if (decode.decode_rows == 0) return max_step_tokens_;
  if (fixed_chunk_ > 0) return std::min(fixed_chunk_, max_step_tokens_);
  if (!paced_ || decode_.samples() == 0) return max_step_tokens_;
  if (prompt_.samples() == 0) return std::min(kProbeChunk, max_step_tokens_);
  const double allowance =
      kShare * std::max(1, waiting_prompts) * decode_.predict(decode_features(decode));
  // n prompt tokens from `position` add a * n^2 + b * n to the step (keys_of_chunk).
  const double a = prompt_.cost()[1] / kKeyUnit / 2;
  const double b = prompt_.cost()[0] / kTokenUnit + prompt_.cost()[1] / kKeyUnit * (position + 0.5);
  double tokens = std::numeric_limits<double>::infinity();
  if (a > 0) {
    tokens = (-b + std::sqrt(b * b + 4 * a * allowance)) / (2 * a);
  } else if (b > 0) {
    tokens = allowance / b;
  }
  if (!std::isfinite(tokens)) return max_step_tokens_;
  return static_cast<int32_t>(
      std::clamp<double>(std::floor(tokens), kMinChunk, std::max(kMinChunk, max_step_tokens_)));
}

// A decode-only step is a sample of the decode model; a step with prompt tokens, of the
// prompt model, once the decode model can say what its decode rows (or, prompt alone, its
// fixed cost) took: before that, the prompt's part is unknown (and the first steps of a
// process are slow with page faults).
void PrefillPacer::record(double seconds, const StepLoad& load) {
  if (!(seconds > 0) || !std::isfinite(seconds)) return;
  if (load.decode_rows > 0) last_decode_ = StepLoad{load.decode_rows, load.decode_keys, 0, 0};
  if (load.prompt_tokens == 0) {
    if (load.decode_rows == 0) return;
    const CostFit<3>::Vec x = decode_features(load);
    decode_.record(x, within_reason(decode_, x, seconds));
    return;
  }
  if (decode_.samples() == 0) return;
  const CostFit<2>::Vec x = prompt_features(load);
  const double beyond = seconds - decode_.predict(decode_features(load));
  if (beyond <= 0) return;  // within the decode model's error: says nothing of the prompt
  prompt_.record(x, within_reason(prompt_, x, beyond));
}

}  // namespace tandem
