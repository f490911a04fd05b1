// Portable sampler kernels and the scalar definitions the AVX-512 path must reproduce.
// Compiled with -ffp-contract=off (runner/CMakeLists.txt) so that no multiply-add is fused:
// the vector path rounds every multiply and add separately, and so must this one.
#include "runner/sampler/kernels.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string_view>

#include "runner/sampler/philox.h"

namespace tandem::sampler_kernels {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr float kPosInf = std::numeric_limits<float>::infinity();

}  // namespace

// Cephes' logf polynomial: x = 2^e * m with m in (sqrt(1/2), sqrt(2)], f = m - 1,
// log x = f - f^2/2 + f^3 P(f) + e log 2, log 2 split in two parts for accuracy.
float log_approx(float x) {
  const uint32_t bits = std::bit_cast<uint32_t>(x);
  int32_t e = static_cast<int32_t>(bits >> 23) - 127;
  float m = std::bit_cast<float>((bits & 0x7fffffu) | 0x3f800000u);
  if (m > 1.41421356f) {
    m = m * 0.5f;
    e = e + 1;
  }
  const float fe = static_cast<float>(e);
  const float f = m - 1.0f;
  const float f2 = f * f;
  float y = 7.0376836292e-2f;
  y = y * f + -1.1514610310e-1f;
  y = y * f + 1.1676998740e-1f;
  y = y * f + -1.2420140846e-1f;
  y = y * f + 1.4249322787e-1f;
  y = y * f + -1.6668057665e-1f;
  y = y * f + 2.0000714765e-1f;
  y = y * f + -2.4999993993e-1f;
  y = y * f + 3.3333331174e-1f;
  y = y * f;
  y = y * f2;
  y = y + fe * -2.12194440e-4f;
  y = y + f2 * -0.5f;
  float r = f + y;
  r = r + fe * 0.693359375f;
  return r;
}

// Cephes' expf: d = n log 2 + r with n = round(d / log 2), e^r by a degree-7 polynomial,
// then scaled by 2^n built from its bits. Rounding uses the 1.5 * 2^23 trick (exact, and
// the same in every path). The cut at -86 keeps every result a normal float.
float exp_shifted(float d) {
  // Branch-free, so that loops over it vectorize: out-of-range lanes compute e^0 and are zeroed.
  const bool valid = d >= -86.0f;
  const float dc = valid ? d : 0.0f;
  const float t = dc * 1.44269504088896341f;
  const float n = (t + 12582912.0f) - 12582912.0f;
  float x = dc - n * 0.693359375f;
  x = x - n * -2.12194440e-4f;
  const float x2 = x * x;
  float y = 1.9875691500e-4f;
  y = y * x + 1.3981999507e-3f;
  y = y * x + 8.3334519073e-3f;
  y = y * x + 4.1665795894e-2f;
  y = y * x + 1.6666665459e-1f;
  y = y * x + 5.0000001201e-1f;
  y = y * x2;
  y = y + x;
  y = y + 1.0f;
  const uint32_t scale_bits = static_cast<uint32_t>(static_cast<int32_t>(n) + 127) << 23;
  const float e = y * std::bit_cast<float>(scale_bits);
  return valid ? e : 0.0f;
}

// d = (32 r + f) ln2 / 32 with r = round(d * 32 / ln 2): e^d = 2^(r >> 5) * 2^((r & 31) / 32)
// * e^(f ln2 / 32), |f| <= 1/2, the last by its Taylor cubic (error ~6e-10) in fused
// multiply-adds, as the vector paths take it (vfmadd: one rounding each). Branch-free.
float exp_table(float d) {
  const bool valid = d >= -86.0f;
  const float dc = valid ? d : 0.0f;
  const float t = dc * 46.1662413f;
  const float r = (t + 12582912.0f) - 12582912.0f;  // round to nearest even, |t| < 2^22
  const float f = t - r;
  float p = std::fma(f, 1.69385097e-6f, 2.34596198e-4f);
  p = std::fma(p, f, 2.16608494e-2f);
  p = std::fma(p, f, 1.0f);
  const auto ri = static_cast<int32_t>(r);
  const uint32_t scale_bits = static_cast<uint32_t>((ri >> 5) + 127) << 23;
  const float e = (kExp2Table[ri & 31] * p) * std::bit_cast<float>(scale_bits);
  return valid ? e : 0.0f;
}

float gumbel_from_bits(uint32_t bits) {
  const float u = uniform_open01(bits);
  return -log_approx(-log_approx(u));
}

// With k = bits >> 9, 1 - u = x * 2^-24 for the integer x = 2^24 - 1 - 2k; since -log u >= 1 - u,
// g = -log(-log u) <= -log(1 - u) = 24 log 2 - log x <= (24 - floor(log2 x)) log 2. x < 2^24
// converts to float exactly, so floor(log2 x) is its exponent. The 1e-3 margin covers the float
// error of the computed g (a few ulp of at most 16.7): the two bounds may be ~0 apart.
float noise_ceiling(uint32_t bits) {
  const uint32_t x = 0xffffffu - ((bits >> 9) << 1);
  const auto exponent = static_cast<int32_t>(std::bit_cast<uint32_t>(static_cast<float>(x)) >> 23);
  return static_cast<float>(151 - exponent) * 0.693147182f + 1e-3f;
}

namespace {

std::array<uint32_t, 4> noise_block(uint64_t seed, int64_t position, uint32_t group) {
  const auto pos = static_cast<uint64_t>(position);
  return philox4x32_10({group, 0u, static_cast<uint32_t>(pos), static_cast<uint32_t>(pos >> 32)},
                       {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)});
}

// The vector path's summation order: lane i % 16 sums elements i, i + 16, ...; then the
// lanes fold in halves (lane l += lane l + 8, then + 4, + 2, + 1).
float fold_lanes(std::array<float, 16> lanes) {
  for (int width = 8; width >= 1; width /= 2) {
    for (int l = 0; l < width; ++l) lanes[l] = lanes[l] + lanes[l + width];
  }
  return lanes[0];
}

float scale_max(float* z, int32_t n, float inv_t) {
  if (inv_t != 1.0f) {
    for (int32_t i = 0; i < n; ++i) z[i] = z[i] * inv_t;
  }
  float best = kNegInf;
  for (int32_t i = 0; i < n; ++i) best = z[i] > best ? z[i] : best;
  return best + 0.0f;  // -0 becomes +0, whichever zero the vector path's max kept
}

int32_t argmax(const float* x, int32_t n) {
  float best = kNegInf;
  int32_t at = -1;
  for (int32_t i = 0; i < n; ++i) {
    if (x[i] > best) {
      best = x[i];
      at = i;
    }
  }
  return at;
}

void scan_top(const float* x, int32_t n, int32_t k, int32_t first_id, TopList* out) {
  for (int32_t i = 0; i < n; ++i) top_insert(out, k, x[i], first_id + i);
}

// Sum of exp_fn(x[i] - x_max) in the shared 16-lane order.
template <float (*exp_fn)(float)>
float lane_sum(const float* x, int32_t n, float x_max) {
  std::array<float, 16> lanes{};
  int32_t i = 0;
  for (; i + 16 <= n; i += 16) {
    for (int l = 0; l < 16; ++l) lanes[l] = lanes[l] + exp_fn(x[i + l] - x_max);
  }
  for (; i < n; ++i) lanes[i & 15] = lanes[i & 15] + exp_fn(x[i] - x_max);
  return fold_lanes(lanes);
}

void panel_partials(const float* x, int32_t n, float* max, float* sum) {
  for (int32_t p = 0; p * kLogitPanel < n; ++p) {
    const float* v = x + p * kLogitPanel;
    const int32_t count = std::min(kLogitPanel, n - p * kLogitPanel);
    float best = kNegInf;
    for (int32_t i = 0; i < count; ++i) best = v[i] > best ? v[i] : best;
    best = best + 0.0f;  // -0 becomes +0, whichever zero the vector paths' max kept
    std::array<float, 16> lanes{};
    if (best > kNegInf && best < kPosInf) {
      for (int32_t i = 0; i < count; ++i) lanes[i & 15] = lanes[i & 15] + exp_table(v[i] - best);
    }
    max[p] = best;
    sum[p] = fold_lanes(lanes);
  }
}

float partials_z(const float* max, const float* sum, int32_t n_panels, float top) {
  std::array<float, 16> lanes{};
  for (int32_t p = 0; p < n_panels; ++p)
    lanes[p & 15] = lanes[p & 15] + sum[p] * exp_table(max[p] - top);
  return fold_lanes(lanes);
}
float z_sum(const float* z, int32_t n, float z_max) { return lane_sum<exp_shifted>(z, n, z_max); }

void ladder(const float* z, int32_t n, float z_max, Ladder* out) {
  *out = Ladder{};
  const int32_t stride = n > kLadderFullRows ? 8 : 1;
  auto add = [&](float d, float weight) {
    const float weighed = exp_shifted(d) * weight;
    for (int r = 0; r < kRungs; ++r) {
      if (d >= -kRungDepth[r]) out->mass[r] += weighed;
    }
  };
  for (int32_t group = 0; group * 16 < n; ++group) {
    const int32_t end = std::min(n, group * 16 + 16);
    const bool sampled = group % stride == 0;
    for (int32_t i = group * 16; i < end; ++i) {
      const float d = z[i] - z_max;
      if (d >= -kLadderHead) {
        add(d, 1.0f);
      } else if (sampled) {
        add(d, static_cast<float>(stride));
      }
    }
  }
}

int32_t collect(const float* z, int32_t n, float z_max, float threshold, float* out_z,
                int32_t* out_id) {
  int32_t count = 0;
  for (int32_t i = 0; i < n; ++i) {
    if (z[i] - z_max >= threshold) {
      out_z[count] = z[i];
      out_id[count] = i;
      ++count;
    }
  }
  return count;
}

void exp_shifted_row(const float* z, int32_t n, float z_max, float* out) {
  for (int32_t i = 0; i < n; ++i) out[i] = exp_shifted(z[i] - z_max);
}

void noise(uint64_t seed, int64_t position, const int32_t* ids, int32_t n, float* out) {
  for (int32_t j = 0; j < n; ++j) out[j] = gumbel_noise(seed, position, ids[j]);
}

// Exact pruning as in the vector path: a running best, seeded with the top token's value, only
// rises; a group of 4 whose largest z cannot reach it skips Philox, a token whose noise ceiling
// cannot reach it skips the logs.
int32_t gumbel_argmax(const float* z, int32_t n, int32_t top, uint64_t seed, int64_t position) {
  GumbelBest best = gumbel_start(z, top >= -1 ? top : argmax(z, n), nullptr, seed, position);
  if (best.index < 0) return -1;
  for (int32_t base = 0; base < n; base += 4) {
    const int32_t end = std::min(n, base + 4);
    float group_max = kNegInf;
    for (int32_t i = base; i < end; ++i) group_max = z[i] > group_max ? z[i] : group_max;
    if (!(group_max + kNoiseCeiling >= best.value)) continue;
    const auto block = noise_block(seed, position, static_cast<uint32_t>(base) >> 2);
    for (int32_t i = base; i < end; ++i) {
      const uint32_t bits = block[i - base];
      if (!(z[i] + noise_ceiling(bits) >= best.value)) continue;
      const float v = z[i] + gumbel_from_bits(bits);
      if (v > best.value || (v == best.value && i < best.index)) {
        best.value = v;
        best.index = i;
      }
    }
  }
  return best.index;
}

int32_t gumbel_argmax_at(const float* z, const int32_t* ids, int32_t n, uint64_t seed,
                         int64_t position) {
  GumbelBest best = gumbel_start(z, argmax(z, n), ids, seed, position);
  if (best.index < 0) return -1;
  for (int32_t j = 0; j < n; ++j) {
    const auto id = static_cast<uint32_t>(ids[j]);
    const uint32_t bits = noise_block(seed, position, id >> 2)[id & 3u];
    if (!(z[j] + noise_ceiling(bits) >= best.value)) continue;
    const float v = z[j] + gumbel_from_bits(bits);
    if (v > best.value || (v == best.value && ids[j] < ids[best.index])) {
      best.value = v;
      best.index = j;
    }
  }
  return best.index;
}

constexpr Kernels kPortable = {.scale_max = scale_max,
                               .argmax = argmax,
                               .scan_top = scan_top,
                               .panel_partials = panel_partials,
                               .partials_z = partials_z,
                               .z_sum = z_sum,
                               .ladder = ladder,
                               .collect = collect,
                               .exp_shifted = exp_shifted_row,
                               .noise = noise,
                               .gumbel_argmax = gumbel_argmax,
                               .gumbel_argmax_at = gumbel_argmax_at};

// The AVX2 table (avx2/kernels.cpp): the portable kernels but for the passes over a whole row
// (max, argmax, the logprobs' scan, the exp sums, the top-p ladder and collection, the
// dense Gumbel pass).
constexpr Kernels kAvx2 = {.scale_max = avx2_impl::scale_max,
                           .argmax = avx2_impl::argmax,
                           .scan_top = avx2_impl::scan_top,
                           .panel_partials = avx2_impl::panel_partials,
                           .partials_z = avx2_impl::partials_z,
                           .z_sum = avx2_impl::z_sum,
                           .ladder = avx2_impl::ladder,
                           .collect = avx2_impl::collect,
                           .exp_shifted = avx2_impl::exp_shifted_row,
                           .noise = noise,
                           .gumbel_argmax = avx2_impl::gumbel_argmax,
                           .gumbel_argmax_at = gumbel_argmax_at};

bool cpu_has_avx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

bool cpu_has_avx512() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
}

}  // namespace

float gumbel_noise(uint64_t seed, int64_t position, int32_t id) {
  const auto block = noise_block(seed, position, static_cast<uint32_t>(id) >> 2);
  return gumbel_from_bits(block[static_cast<uint32_t>(id) & 3u]);
}

GumbelBest gumbel_start(const float* z, int32_t top, const int32_t* ids, uint64_t seed,
                        int64_t position) {
  if (top < 0) return {kNegInf, -1};
  return {z[top] + gumbel_noise(seed, position, ids != nullptr ? ids[top] : top), top};
}

const Kernels& portable() { return kPortable; }

const Kernels* avx512() {
  static const bool has = cpu_has_avx512();
  return has ? &avx512_impl::kKernels : nullptr;
}

const Kernels* avx2() {
  static const bool has = cpu_has_avx2();
  return has ? &kAvx2 : nullptr;
}

const Kernels& detected() {
  const char* isa = std::getenv("TANDEM_ISA");
  const bool lowered =
      isa != nullptr && *isa != '\0' && !std::string_view(isa).starts_with("avx512");
  if (const Kernels* wide = avx512(); wide != nullptr && !lowered) return *wide;
  if (const Kernels* narrow = avx2(); narrow != nullptr) return *narrow;
  return kPortable;
}

}  // namespace tandem::sampler_kernels
