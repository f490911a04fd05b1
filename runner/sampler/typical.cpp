#include "runner/sampler/typical.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "runner/sampler/kernels.h"

namespace tandem::sampler_typical {
namespace {

constexpr size_t kFirstChunk = 256;

}  // namespace

size_t mark_typical(std::span<const float> z, std::span<const float> e, float z_max,
                    std::span<const int32_t> ids, float typical_p, Scratch& s,
                    std::vector<uint8_t>& keep) {
  const size_t n = z.size();
  keep.assign(n, 0);
  if (n == 0) return 0;
  float sum = 0.0f;
  for (size_t i = 0; i < n; ++i) sum = sum + e[i];
  const float log_sum = sampler_kernels::log_approx(sum);
  s.p.resize(n);
  s.score.resize(n);
  float entropy = 0.0f;
  for (size_t i = 0; i < n; ++i) {
    s.p[i] = e[i] / sum;
    s.score[i] = log_sum - (z[i] - z_max);  // the surprisal, -log p_i
    entropy = entropy + s.p[i] * s.score[i];
  }
  for (size_t i = 0; i < n; ++i) s.score[i] = std::fabs(s.score[i] - entropy);
  s.order.resize(n);
  std::iota(s.order.begin(), s.order.end(), 0u);
  const auto before = [&](uint32_t a, uint32_t b) {
    if (s.score[a] != s.score[b]) return s.score[a] < s.score[b];
    if (z[a] != z[b]) return z[a] > z[b];
    return ids[a] < ids[b];
  };
  // The order a chunk at a time: select the next chunk's members, sort them, walk them.
  float mass = 0.0f;
  size_t done = 0;
  for (size_t chunk = kFirstChunk; done < n; chunk *= 4) {
    const auto first = s.order.begin() + static_cast<std::ptrdiff_t>(done);
    const size_t end = std::min(n, done + chunk);
    const auto last = s.order.begin() + static_cast<std::ptrdiff_t>(end);
    if (end < n) std::nth_element(first, last - 1, s.order.end(), before);
    std::sort(first, last, before);
    for (; done < end; ++done) {
      const uint32_t i = s.order[done];
      keep[i] = 1;
      mass = mass + s.p[i];
      if (mass > typical_p) return done + 1;
    }
  }
  return n;
}

}  // namespace tandem::sampler_typical
