#include "runner/sampler/xtc.h"

#include <algorithm>
#include <array>

#include "runner/sampler/kernels.h"
#include "runner/sampler/philox.h"

namespace tandem::sampler_xtc {

bool fires(float probability, uint64_t seed, int64_t position) {
  const auto pos = static_cast<uint64_t>(position);
  const std::array<uint32_t, 4> counter = {0u, 1u, static_cast<uint32_t>(pos),
                                           static_cast<uint32_t>(pos >> 32)};
  const std::array<uint32_t, 2> key = {static_cast<uint32_t>(seed),
                                       static_cast<uint32_t>(seed >> 32)};
  return uniform_open01(philox4x32_10(counter, key)[0]) <= probability;
}

bool mark_top_choices(std::span<const float> z, std::span<const int32_t> ids, float threshold,
                      std::vector<uint8_t>& drop) {
  const size_t n = z.size();
  drop.assign(n, 0);
  if (n < 2) return false;
  const float z_top = *std::max_element(z.begin(), z.end());
  float sum = 0.0f;
  for (const float x : z) sum += sampler_kernels::exp_shifted(x - z_top);
  // p_i >= threshold as e_i >= threshold * sum: one rounding, the same on every path.
  const float cut = threshold * sum;
  size_t reaching = 0;
  size_t last = n;  // the least likely of those reaching the threshold
  for (size_t i = 0; i < n; ++i) {
    if (sampler_kernels::exp_shifted(z[i] - z_top) < cut) continue;
    ++reaching;
    drop[i] = 1;
    if (last == n || z[i] < z[last] || (z[i] == z[last] && ids[i] > ids[last])) last = i;
  }
  if (reaching < 2) {
    std::fill(drop.begin(), drop.end(), 0);
    return false;
  }
  drop[last] = 0;
  return true;
}

}  // namespace tandem::sampler_xtc
