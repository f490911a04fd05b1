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
                                    int32_t position, double now, int32_t prefill) const {
  return budget(decode, waiting_prompts, position, sustained(now), arrivals(now) >= kArrivals,
                prefill);
}

int32_t PrefillPacer::lone_prompt_budget(bool decoding) const {
  return budget(decoding ? last_decode_ : StepLoad{}, 1, 0, false, false, 0);
}

void PrefillPacer::prompt_began(double now, int32_t tokens) {
  if (now < 0 || !long_prompt(tokens)) return;
  arrivals_.push_back(now);
  while (arrivals_.front() <= now - kSustainWindow) arrivals_.pop_front();
}

int32_t PrefillPacer::arrivals(double now) const {
  if (now < 0) return 0;
  const auto first = std::upper_bound(arrivals_.begin(), arrivals_.end(), now - kSustainWindow);
  return static_cast<int32_t>(arrivals_.end() - first);
}

int32_t PrefillPacer::budget(const StepLoad& decode, int32_t waiting_prompts, int32_t position,
                             bool sustained, bool arriving, int32_t prefill) const {
  if (decode.decode_rows == 0) return max_step_tokens_;
  if (fixed_chunk_ > 0) return std::min(fixed_chunk_, max_step_tokens_);
  if (!paced_ || decode_.samples() == 0) return max_step_tokens_;
  const int32_t half = half_budget();
  const double lone = kShare * decode_.predict(decode_features(decode));  // one share
  // n prompt tokens from `position` add a * n^2 + b * n to the step (keys_of_chunk).
  const double a = prompt_.cost()[1] / kKeyUnit / 2;
  const double b = prompt_.cost()[0] / kTokenUnit + prompt_.cost()[1] / kKeyUnit * (position + 0.5);
  // A short prompt first in line after a long cached prefix (from half the step budget on),
  // its tokens dear, each reading that prefix, and its whole prefill over a lone prompt's
  // share: whole and alone where it costs two shares at most, else a lone prompt's pace,
  // whatever waits behind it (prefill_pacer.h).
  const double first_cost = a * prefill * prefill + b * prefill;
  const bool dear = prefill > 0 && !long_prompt(prefill) && position >= half &&
                    prompt_.samples() > 0 && first_cost > lone;
  if (dear && first_cost <= 2 * lone) return std::min(prefill, max_step_tokens_);
  if (sustained && !dear) return half;  // a sustained load of prompts
  // A queue, or a stream of long prompts, behind a long prompt (its last chunk too): at
  // least half the step budget, its shares where those give more.
  const bool behind = waiting_prompts >= kQueue || arriving;
  const int32_t least = behind && long_prompt(prefill) ? half : kMinChunk;
  if (prompt_.samples() == 0) return std::max(least, std::min(probe_, max_step_tokens_));
  const double allowance = dear ? lone : lone * std::max(1, waiting_prompts);
  double tokens = std::numeric_limits<double>::infinity();
  if (a > 0) {
    tokens = (-b + std::sqrt(b * b + 4 * a * allowance)) / (2 * a);
  } else if (b > 0) {
    tokens = allowance / b;
  }
  if (!std::isfinite(tokens)) return max_step_tokens_;
  return static_cast<int32_t>(
      std::clamp<double>(std::floor(tokens), least, std::max(least, max_step_tokens_)));
}

double PrefillPacer::prompt_share(double now) const {
  double seconds = recent_seconds_, prompt_seconds = recent_prompt_seconds_;
  size_t left = recent_.size();
  for (const Recent& r : recent_) {  // those record has not yet let go of
    if (r.at > now - kSustainWindow) break;
    seconds -= r.seconds;
    prompt_seconds -= r.prompt_seconds;
    --left;
  }
  // None left: 0, not the ratio of what the subtractions' rounding left of the two sums.
  return left > 0 && seconds > 0 ? std::clamp(prompt_seconds / seconds, 0.0, 1.0) : 0;
}

// A decode-only step is a sample of the decode model; a step with prompt tokens, of the
// prompt model, once the decode model can say what its decode rows (or, prompt alone, its
// fixed cost) took: before that, the prompt's part is unknown (and the first steps of a
// process are slow with page faults).
void PrefillPacer::record(double seconds, const StepLoad& load, double now) {
  if (!(seconds > 0) || !std::isfinite(seconds)) return;
  if (load.decode_rows > 0) last_decode_ = StepLoad{load.decode_rows, load.decode_keys, 0, 0};
  if (load.prompt_tokens == 0) {
    if (now >= 0) remember(now, seconds, 0);
    if (load.decode_rows == 0) return;
    const CostFit<3>::Vec x = decode_features(load);
    decode_.record(x, within_reason(decode_, x, seconds));
    return;
  }
  // What the step took beyond the decode model's time for its decode rows (or, prompt
  // alone, its fixed cost): the prompt tokens' part. In the prompts' share, all of a
  // prompt-only step, or of any before the decode model has a sample.
  const bool priced = decode_.samples() > 0;
  const double beyond = priced ? seconds - decode_.predict(decode_features(load)) : seconds;
  if (now >= 0) {
    remember(now, seconds, load.decode_rows > 0 ? std::clamp(beyond, 0.0, seconds) : seconds);
  }
  if (!priced) return;
  if (beyond <= 0) {  // within the decode model's error: says nothing of the prompt
    if (prompt_.samples() == 0) probe_ = std::min(2 * probe_, std::max(max_step_tokens_, 1));
    return;
  }
  const CostFit<2>::Vec x = prompt_features(load);
  prompt_.record(x, within_reason(prompt_, x, beyond));
}

void PrefillPacer::remember(double now, double seconds, double prompt_seconds) {
  recent_.push_back({now, seconds, prompt_seconds});
  recent_seconds_ += seconds;
  recent_prompt_seconds_ += prompt_seconds;
  while (recent_.front().at <= now - kSustainWindow) {
    recent_seconds_ -= recent_.front().seconds;
    recent_prompt_seconds_ -= recent_.front().prompt_seconds;
    recent_.pop_front();
  }
  if (recent_.size() == 1) {  // no drift in the sums from their subtractions
    recent_seconds_ = seconds;
    recent_prompt_seconds_ = prompt_seconds;
  }
}

}  // namespace tandem
