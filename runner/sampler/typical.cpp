#include "runner/sampler/typical.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include "runner/sampler/kernels.h"

namespace tandem::sampler_typical {
namespace {

// Sets this small are sorted whole: a histogram would cost more than the sort.
constexpr size_t kSortWhole = 1024;
// A score >= 0 as float bits is ordered as an integer; its top 12 bits after the sign (8 of
// exponent, 4 of mantissa) name its bucket, a sixteenth of an octave.
constexpr int kBucketShift = 19;
constexpr uint32_t kBuckets = uint32_t{1} << (31 - kBucketShift);

uint32_t bucket_of(float score) { return std::bit_cast<uint32_t>(score) >> kBucketShift; }

// s.keys: the tokens whose bucket is in [lo, hi], in the walk's order. The keys order them by
// score, then position, which is id order; equal scores are put in rank order (z descending,
// then id), the order the definition gives.
void gather(std::span<const float> score, std::span<const float> z, std::span<const int32_t> ids,
            uint32_t lo, uint32_t hi, Scratch& s) {
  s.keys.resize(score.size());
  size_t count = 0;
  for (size_t i = 0; i < score.size(); ++i) {  // without a branch: most tokens are left out
    const uint32_t bits = std::bit_cast<uint32_t>(score[i]);
    s.keys[count] = (uint64_t{bits} << 32) | i;
    count += (bits >> kBucketShift) - lo <= hi - lo ? 1 : 0;
  }
  s.keys.resize(count);
  std::sort(s.keys.begin(), s.keys.end());
  const auto rank_first = [&](uint64_t a, uint64_t b) {
    const auto i = static_cast<uint32_t>(a), j = static_cast<uint32_t>(b);
    if (z[i] != z[j]) return z[i] > z[j];
    return ids[i] < ids[j];
  };
  for (size_t a = 0; a < s.keys.size();) {
    size_t b = a + 1;
    while (b < s.keys.size() && (s.keys[b] >> 32) == (s.keys[a] >> 32)) ++b;
    if (b - a > 1) {
      std::sort(s.keys.begin() + static_cast<std::ptrdiff_t>(a),
                s.keys.begin() + static_cast<std::ptrdiff_t>(b), rank_first);
    }
    a = b;
  }
}

}  // namespace

size_t keep_in_order(std::span<const float> score, std::span<const float> p,
                     std::span<const float> z, std::span<const int32_t> ids, float typical_p,
                     Scratch& s, std::vector<uint8_t>& keep) {
  const size_t n = score.size();
  keep.assign(n, 0);
  if (n == 0) return 0;
  float mass = 0.0f;
  size_t done = 0;
  // Walks s.keys on from the tokens already kept; true once the mass passes typical_p.
  const auto walk = [&] {
    for (const uint64_t key : s.keys) {
      const auto i = static_cast<uint32_t>(key);
      keep[i] = 1;
      ++done;
      mass = mass + p[i];
      if (mass > typical_p) return true;
    }
    return false;
  };
  if (n <= kSortWhole) {
    gather(score, z, ids, 0, kBuckets - 1, s);
    return walk() ? done : n;
  }
  s.count.assign(kBuckets, 0);
  s.mass.assign(kBuckets, 0.0);
  for (size_t i = 0; i < n; ++i) {
    const uint32_t b = bucket_of(score[i]);
    ++s.count[b];
    s.mass[b] += p[i];
  }
  // The first group: the buckets up to the one where the mass, summed in double, passes
  // typical_p. The float sum in order may still fall short there; then the walk goes on,
  // each further group at least as many tokens as those before it (so never more than
  // about twice a whole sort's work).
  uint32_t hi = 0;
  for (double total = 0.0; hi + 1 < kBuckets; ++hi) {
    total += s.mass[hi];
    if (total > static_cast<double>(typical_p)) break;
  }
  for (uint32_t lo = 0;;) {
    gather(score, z, ids, lo, hi, s);
    if (walk()) return done;
    if (hi + 1 >= kBuckets) return n;
    lo = hi + 1;
    size_t more = 0;
    for (hi = lo; hi + 1 < kBuckets; ++hi) {
      more += s.count[hi];
      if (more > 0 && more >= done) break;
    }
  }
}

size_t mark_typical(std::span<const float> z, std::span<const float> e, float z_max,
                    std::span<const int32_t> ids, float typical_p, Scratch& s,
                    std::vector<uint8_t>& keep) {
  const size_t n = z.size();
  if (n == 0) {
    keep.clear();
    return 0;
  }
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
  return keep_in_order(s.score, s.p, z, ids, typical_p, s, keep);
}

}  // namespace tandem::sampler_typical
