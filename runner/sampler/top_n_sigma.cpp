#include "runner/sampler/top_n_sigma.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace tandem::sampler_sigma {

float cut(std::span<const float> z, float n) {
  constexpr size_t kLanes = 8;
  double sum[kLanes] = {}, squares[kLanes] = {};
  size_t count[kLanes] = {};
  for (size_t i = 0; i < z.size(); ++i) {
    const float v = z[i];
    if (!std::isfinite(v)) continue;  // -inf (banned) and NaN are not logits of the row
    const double x = v;
    sum[i % kLanes] += x;
    squares[i % kLanes] += x * x;
    ++count[i % kLanes];
  }
  for (size_t width = kLanes / 2; width >= 1; width /= 2) {
    for (size_t l = 0; l < width; ++l) {
      sum[l] += sum[l + width];
      squares[l] += squares[l + width];
      count[l] += count[l + width];
    }
  }
  if (count[0] == 0) return 0.0f;
  const double total = static_cast<double>(count[0]);
  const double mean = sum[0] / total;
  const double variance = std::max(0.0, squares[0] / total - mean * mean);
  return static_cast<float>(-static_cast<double>(n) * std::sqrt(variance));
}

}  // namespace tandem::sampler_sigma
