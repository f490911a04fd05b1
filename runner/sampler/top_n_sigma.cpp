#include "runner/sampler/top_n_sigma.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace tandem::sampler_sigma {

float cut(std::span<const float> z, float n) {
  constexpr size_t kLanes = 8;
  double sum[kLanes] = {}, squares[kLanes] = {};
  size_t count[kLanes] = {};
  // Element i goes to lane i % 8. A value that is not a logit of the row (-inf: banned; NaN)
  // adds an exact 0, so the loop has no branch and the compiler may vectorize it across the
  // lanes, each lane's sums still taken in order.
  const auto add = [&](size_t lane, float v) {
    const bool finite = std::isfinite(v);
    const double x = finite ? static_cast<double>(v) : 0.0;
    sum[lane] += x;
    squares[lane] += x * x;
    count[lane] += finite ? 1 : 0;
  };
  size_t i = 0;
  for (; i + kLanes <= z.size(); i += kLanes) {
    for (size_t l = 0; l < kLanes; ++l) add(l, z[i + l]);
  }
  for (; i < z.size(); ++i) add(i % kLanes, z[i]);
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
