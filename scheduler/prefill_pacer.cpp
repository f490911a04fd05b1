#include "scheduler/prefill_pacer.h"

#include <algorithm>
#include <cmath>

namespace tandem {
namespace {

double blend(double average, double sample) {
  return average <= 0 ? sample
                      : (1 - PrefillPacer::kWeight) * average + PrefillPacer::kWeight * sample;
}

}  // namespace

int32_t PrefillPacer::prompt_budget(int32_t decode_rows, int32_t waiting_prompts) const {
  if (decode_rows == 0) return max_step_tokens_;
  if (fixed_chunk_ > 0) return std::min(fixed_chunk_, max_step_tokens_);
  if (!paced_ || decode_seconds_ <= 0 || token_seconds_ <= 0) return max_step_tokens_;
  const double share = kShare * std::max(1, waiting_prompts);
  const double tokens = share * decode_seconds_ / token_seconds_;
  if (!std::isfinite(tokens)) return max_step_tokens_;
  return static_cast<int32_t>(
      std::clamp<double>(std::floor(tokens), kMinChunk, std::max(kMinChunk, max_step_tokens_)));
}

void PrefillPacer::record(double seconds, int32_t decode_rows, int32_t prompt_tokens) {
  if (!(seconds > 0) || !std::isfinite(seconds)) return;
  if (prompt_tokens == 0) {
    if (decode_rows > 0) decode_seconds_ = blend(decode_seconds_, seconds);
    return;
  }
  // The prompt tokens' share of the step: what it took beyond a decode step (the average
  // decode step stands for the cost every step pays, the weights streamed once, whether or
  // not it has decode rows); before any decode step was measured, all of it.
  if (decode_rows > 0 && decode_seconds_ <= 0) return;  // nothing to subtract yet
  const double prompt_seconds = decode_seconds_ > 0 ? seconds - decode_seconds_ : seconds;
  if (prompt_seconds <= 0) return;
  token_seconds_ = blend(token_seconds_, prompt_seconds / prompt_tokens);
}

}  // namespace tandem
