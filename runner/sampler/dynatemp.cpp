#include "runner/sampler/dynatemp.h"

#include <algorithm>
#include <limits>

#include "runner/sampler/kernels.h"

namespace tandem::sampler_dynatemp {

float temperature(std::span<const float> x, std::span<const float> e, float x_max, size_t n,
                  float temperature, float range, float exponent) {
  float sum = 0.0f, weighted = 0.0f;
  for (size_t i = 0; i < x.size(); ++i) {
    if (!(e[i] > 0.0f)) continue;  // 0 * -inf would be NaN; the term is 0
    sum = sum + e[i];
    weighted = weighted + e[i] * (x[i] - x_max);
  }
  const float low = std::max(0.0f, temperature - range), high = temperature + range;
  if (!(sum > 0.0f)) return low;
  const float entropy = sampler_kernels::log_approx(sum) - weighted / sum;
  const float normalized =
      std::clamp(entropy / sampler_kernels::log_approx(static_cast<float>(n)), 0.0f, 1.0f);
  float power = 1.0f;
  if (exponent > 0.0f) {
    power = normalized >= std::numeric_limits<float>::min()
                ? sampler_kernels::exp_shifted(exponent * sampler_kernels::log_approx(normalized))
                : 0.0f;
  }
  return low + (high - low) * power;
}

}  // namespace tandem::sampler_dynatemp
