// The quantizer, one function per block type. Each follows the idea of ggml's reference
// quantizer for that type (ggml-quants.c, the path llama-quantize takes without an
// importance matrix):
//   - legacy types: one scale per 32 values from the largest magnitude (or min and max),
//     then round to nearest;
//   - K-quants: per sub-block a least-squares scale (and min), searched over a range of
//     candidate inverse scales and kept where the weighted error is smallest; the
//     sub-block scales are then quantized to 6 bits (4 for Q2_K, int8 for Q6_K) against
//     one F16 super-block scale, and every value is re-rounded with its final scale;
//   - IQ4_NL/IQ4_XS: the non-linear table kIq4NlValues, with a search over candidate
//     scales for the one of least weighted error.
#include "runner/gguf/quantize.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "runner/gguf/quant.h"
#include "runner/util/float16.h"

namespace tandem::gguf {
namespace {

// Below this largest magnitude a group is all zero (ggml's GROUP_MAX_EPS); F16 scales
// could not represent it anyway.
constexpr float kGroupEps = 1e-15f;
constexpr float kF16Max = 65504.0f;

int nearest(float v) { return static_cast<int>(std::lrintf(v)); }

uint16_t half(float v) { return half_from_float(v); }
float from_half(uint16_t h) { return float_from_half(h); }

// The integer sub-block scale for `scale` against the super-block scale the file holds
// (`stored`, already rounded to F16), so sub-scales stay consistent with it even where F16
// rounds coarsely (subnormal super-block scales of small weights).
int sub_scale(float scale, float stored, int lo, int hi) {
  return stored != 0.0f ? std::clamp(nearest(scale / stored), lo, hi) : 0;
}

// The min level of a sub-block whose scale came out 0 (all levels contribute nothing,
// e.g. its scale underflowed F16): the least-squares offset, y = -min = mean(x), where the
// format allows it (min >= 0).
int offset_only_min(const float* x, int n, float stored_dmin, int hi) {
  float sum = 0.0f;
  for (int i = 0; i < n; ++i) sum += x[i];
  return sub_scale(std::max(0.0f, -sum / static_cast<float>(n)), stored_dmin, 0, hi);
}

// The value of largest magnitude (with its sign), and that magnitude.
struct Extreme {
  float value = 0.0f, magnitude = 0.0f;
};
Extreme largest_magnitude(const float* x, int n) {
  Extreme e;
  for (int i = 0; i < n; ++i) {
    if (std::fabs(x[i]) > e.magnitude) e = {x[i], std::fabs(x[i])};
  }
  return e;
}

// ---- legacy types: 32 values, round to nearest --------------------------------------------

// Symmetric 4/5-bit: d maps the extreme value to -2^(bits-1), so its sign is kept exactly.
template <int kLevels>
float symmetric_scale(const float* x, int (&q)[kQK4]) {
  const Extreme e = largest_magnitude(x, kQK4);
  const float d = e.value / -static_cast<float>(kLevels / 2);
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  for (int j = 0; j < kQK4; ++j) {
    // x * id lies in [-L/2, L/2]: adding L/2 + 0.5 and truncating rounds to nearest.
    q[j] = std::min(kLevels - 1, static_cast<int>(x[j] * id + (kLevels / 2 + 0.5f)));
  }
  return d;
}

// Asymmetric 4/5-bit: x = q * d + min over [min, max].
template <int kLevels>
void min_max_scale(const float* x, int (&q)[kQK4], float& d, float& min) {
  min = x[0];
  float max = x[0];
  for (int j = 1; j < kQK4; ++j) {
    min = std::min(min, x[j]);
    max = std::max(max, x[j]);
  }
  d = (max - min) / static_cast<float>(kLevels - 1);
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  for (int j = 0; j < kQK4; ++j)
    q[j] = std::clamp(static_cast<int>((x[j] - min) * id + 0.5f), 0, kLevels - 1);
}

void pack_nibbles(const int (&q)[kQK4], uint8_t (&qs)[kQK4 / 2]) {
  for (int j = 0; j < kQK4 / 2; ++j)
    qs[j] = static_cast<uint8_t>((q[j] & 0xF) | ((q[j + kQK4 / 2] & 0xF) << 4));
}

// The fifth bits of 32 five-bit values: bit j of qh for element j.
void pack_fifth_bits(const int (&q)[kQK4], uint8_t (&qh)[4]) {
  uint32_t bits = 0;
  for (int j = 0; j < kQK4; ++j) bits |= static_cast<uint32_t>((q[j] >> 4) & 1) << j;
  std::memcpy(qh, &bits, sizeof(bits));
}

void q4_0(const float* x, BlockQ4_0& b) {
  int q[kQK4];
  b.d = half(symmetric_scale<16>(x, q));
  pack_nibbles(q, b.qs);
}

void q4_1(const float* x, BlockQ4_1& b) {
  int q[kQK4];
  float d, min;
  min_max_scale<16>(x, q, d, min);
  b.d = half(d);
  b.m = half(min);
  pack_nibbles(q, b.qs);
}

void q5_0(const float* x, BlockQ5_0& b) {
  int q[kQK4];
  b.d = half(symmetric_scale<32>(x, q));
  pack_nibbles(q, b.qs);
  pack_fifth_bits(q, b.qh);
}

void q5_1(const float* x, BlockQ5_1& b) {
  int q[kQK4];
  float d, min;
  min_max_scale<32>(x, q, d, min);
  b.d = half(d);
  b.m = half(min);
  pack_nibbles(q, b.qs);
  pack_fifth_bits(q, b.qh);
}

void q8_0(const float* x, BlockQ8_0& b) {
  const float amax = largest_magnitude(x, kQ8_0BlockSize).magnitude;
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  b.d = half(d);
  for (int j = 0; j < kQ8_0BlockSize; ++j) b.qs[j] = static_cast<int8_t>(std::round(x[j] * id));
}

// ---- K-quant sub-block searches --------------------------------------------------------------

// Symmetric levels l in [-nmax, nmax - 1] (stored as l + nmax in L) and the scale s that
// minimizes sum w (x - s l)^2, w = x^2. The first guess maps the extreme value to -nmax;
// with `search`, 18 more inverse scales around it are tried and the best least-squares
// fit kept. Returns s (0 for an all-zero group).
float symmetric_levels(int n, int nmax, const float* x, int8_t* L, bool search) {
  const Extreme e = largest_magnitude(x, n);
  if (e.magnitude < kGroupEps) {
    std::fill(L, L + n, static_cast<int8_t>(nmax));
    return 0.0f;
  }
  auto fit = [&](float iscale, int8_t* out, float& sum_lx, float& sum_l2) {
    sum_lx = sum_l2 = 0.0f;
    for (int i = 0; i < n; ++i) {
      const int l = std::clamp(nearest(iscale * x[i]), -nmax, nmax - 1);
      if (out != nullptr) out[i] = static_cast<int8_t>(l + nmax);
      const float w = x[i] * x[i];
      sum_lx += w * x[i] * static_cast<float>(l);
      sum_l2 += w * static_cast<float>(l * l);
    }
  };
  const float first = -static_cast<float>(nmax) / e.value;
  float sum_lx, sum_l2;
  fit(first, L, sum_lx, sum_l2);
  if (!search) return 1.0f / first;
  float scale = sum_l2 > 0.0f ? sum_lx / sum_l2 : 0.0f;
  float best = scale * sum_lx;  // the error reduction sum_lx^2 / sum_l2: larger is better
  for (int step = -9; step <= 9; ++step) {
    if (step == 0) continue;
    const float iscale = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(step)) / e.value;
    fit(iscale, nullptr, sum_lx, sum_l2);
    if (sum_l2 > 0.0f && sum_lx * sum_lx > best * sum_l2) {
      fit(iscale, L, sum_lx, sum_l2);
      scale = sum_lx / sum_l2;
      best = scale * sum_lx;
    }
  }
  return scale;
}

// Q3_K's variant: levels in [-4, 3]; starting from round-to-nearest, each level is moved
// to its least-squares best given the others for as long as that lowers the error.
float q3_levels(const float* x, int8_t* L, bool search) {
  constexpr int n = 16, nmax = 4;
  const Extreme e = largest_magnitude(x, n);
  if (e.magnitude < kGroupEps) {
    std::fill(L, L + n, static_cast<int8_t>(nmax));
    return 0.0f;
  }
  const float iscale = -static_cast<float>(nmax) / e.value;
  int l[n];
  for (int i = 0; i < n; ++i) l[i] = std::clamp(nearest(iscale * x[i]), -nmax, nmax - 1);
  float scale = 1.0f / iscale;
  if (search) {
    float sum_lx = 0.0f, sum_l2 = 0.0f;
    for (int i = 0; i < n; ++i) {
      const float w = x[i] * x[i];
      sum_lx += w * x[i] * static_cast<float>(l[i]);
      sum_l2 += w * static_cast<float>(l[i] * l[i]);
    }
    for (int pass = 0; pass < 5; ++pass) {
      int changed = 0;
      for (int i = 0; i < n; ++i) {
        const float w = x[i] * x[i];
        float slx = sum_lx - w * x[i] * static_cast<float>(l[i]);
        if (slx <= 0.0f) continue;
        float sl2 = sum_l2 - w * static_cast<float>(l[i] * l[i]);
        const int candidate = std::clamp(nearest(x[i] * sl2 / slx), -nmax, nmax - 1);
        if (candidate == l[i]) continue;
        slx += w * x[i] * static_cast<float>(candidate);
        sl2 += w * static_cast<float>(candidate * candidate);
        if (sl2 > 0.0f && slx * slx * sum_l2 > sum_lx * sum_lx * sl2) {
          l[i] = candidate;
          sum_lx = slx;
          sum_l2 = sl2;
          ++changed;
        }
      }
      if (changed == 0) break;
    }
    scale = sum_l2 > 0.0f ? sum_lx / sum_l2 : 0.0f;
  }
  for (int i = 0; i < n; ++i) L[i] = static_cast<int8_t>(l[i] + nmax);
  return scale;
}

// Asymmetric levels l in [0, nmax] with x ~ scale * l - min_out (min_out >= 0): starts
// from the [min(x, 0), max] range; with `search` (nstep > 0) tries nstep + 1 inverse
// scales (nmax + rmin + rdelta * k) / range and for each solves the weighted least-squares
// scale and offset, keeping the best by weighted squared (or absolute, `use_mad`) error.
float offset_levels(int n, int nmax, const float* x, const float* weights, uint8_t* L,
                    float& min_out, float rmin, float rdelta, int nstep, bool use_mad) {
  float min = x[0], max = x[0];
  float sum_w = 0.0f, sum_x = 0.0f;
  for (int i = 0; i < n; ++i) {
    min = std::min(min, x[i]);
    max = std::max(max, x[i]);
    sum_w += weights[i];
    sum_x += weights[i] * x[i];
  }
  if (min > 0.0f) min = 0.0f;
  if (max - min < kGroupEps) {
    std::fill(L, L + n, uint8_t{0});
    min_out = -min;
    return 0.0f;
  }
  auto error_of = [&](float scale, float offset, const uint8_t* levels) {
    float err = 0.0f;
    for (int i = 0; i < n; ++i) {
      const float diff = scale * static_cast<float>(levels[i]) + offset - x[i];
      err += weights[i] * (use_mad ? std::fabs(diff) : diff * diff);
    }
    return err;
  };
  float iscale = static_cast<float>(nmax) / (max - min);
  float scale = 1.0f / iscale;
  for (int i = 0; i < n; ++i)
    L[i] = static_cast<uint8_t>(std::clamp(nearest(iscale * (x[i] - min)), 0, nmax));
  float best = error_of(scale, min, L);
  uint8_t candidate[32];
  for (int step = 0; step <= nstep && nstep > 0; ++step) {
    iscale = (rmin + rdelta * static_cast<float>(step) + static_cast<float>(nmax)) / (max - min);
    float sum_l = 0.0f, sum_l2 = 0.0f, sum_xl = 0.0f;
    for (int i = 0; i < n; ++i) {
      const int l = std::clamp(nearest(iscale * (x[i] - min)), 0, nmax);
      candidate[i] = static_cast<uint8_t>(l);
      const float w = weights[i], lf = static_cast<float>(l);
      sum_l += w * lf;
      sum_l2 += w * lf * lf;
      sum_xl += w * lf * x[i];
    }
    const float det = sum_w * sum_l2 - sum_l * sum_l;
    if (det <= 0.0f) continue;
    float this_scale = (sum_w * sum_xl - sum_x * sum_l) / det;
    float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / det;
    if (this_min > 0.0f) {  // the format subtracts a non-negative min: refit without it
      this_min = 0.0f;
      this_scale = sum_xl / sum_l2;
    }
    const float err = error_of(this_scale, this_min, candidate);
    if (err < best) {
      std::copy(candidate, candidate + n, L);
      best = err;
      scale = this_scale;
      min = this_min;
    }
  }
  min_out = -min;
  return scale;
}

// ---- K-quants --------------------------------------------------------------------------------

// Packs 256 2-bit values as Q2_K/Q3_K store them: per 128, byte l holds l, l+32, l+64, l+96.
void pack_2bit(const uint8_t* L, uint8_t* qs) {
  for (int j = 0; j < kQKK; j += 128) {
    for (int l = 0; l < 32; ++l) {
      qs[j / 4 + l] = static_cast<uint8_t>(L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) |
                                           (L[j + l + 96] << 6));
    }
  }
}

void q2_k(const float* x, BlockQ2_K& b, bool search) {
  uint8_t L[kQKK];
  float scales[16], mins[16], weights[16];
  float max_scale = 0.0f, max_min = 0.0f;
  for (int j = 0; j < 16; ++j) {
    for (int l = 0; l < 16; ++l) weights[l] = std::fabs(x[16 * j + l]);
    scales[j] = offset_levels(16, 3, x + 16 * j, weights, L + 16 * j, mins[j], -0.5f, 0.1f,
                              search ? 15 : 0, true);
    max_scale = std::max(max_scale, scales[j]);
    max_min = std::max(max_min, mins[j]);
  }
  // Sub-block scales and mins to 4 bits each, against F16 super-block scales.
  std::memset(b.scales, 0, sizeof(b.scales));
  b.d = half(max_scale / 15.0f);
  b.dmin = half(max_min / 15.0f);
  for (int j = 0; j < 16; ++j) {
    const int ls = sub_scale(scales[j], from_half(b.d), 0, 15);
    const int lm = ls == 0 ? offset_only_min(x + 16 * j, 16, from_half(b.dmin), 15)
                           : sub_scale(mins[j], from_half(b.dmin), 0, 15);
    b.scales[j] = static_cast<uint8_t>(ls | (lm << 4));
  }
  // Re-round every value with the scale and min the file will hold.
  for (int j = 0; j < 16; ++j) {
    const float d = from_half(b.d) * static_cast<float>(b.scales[j] & 0xF);
    if (d == 0.0f) continue;
    const float m = from_half(b.dmin) * static_cast<float>(b.scales[j] >> 4);
    for (int i = 0; i < 16; ++i)
      L[16 * j + i] = static_cast<uint8_t>(std::clamp(nearest((x[16 * j + i] + m) / d), 0, 3));
  }
  pack_2bit(L, b.qs);
}

void q3_k(const float* x, BlockQ3_K& b, bool search) {
  int8_t L[kQKK];
  float scales[16];
  float max_scale = 0.0f, amax = 0.0f;
  for (int j = 0; j < 16; ++j) {
    scales[j] = q3_levels(x + 16 * j, L + 16 * j, search);
    if (std::fabs(scales[j]) > amax) {
      amax = std::fabs(scales[j]);
      max_scale = scales[j];
    }
  }
  // Sixteen 6-bit signed scales: low nibbles in bytes 0-7, high 2 bits in bytes 8-11.
  std::memset(b.scales, 0, sizeof(b.scales));
  b.d = half(0.0f);
  if (max_scale != 0.0f) {
    b.d = half(max_scale / -32.0f);
    for (int j = 0; j < 16; ++j) {
      const int l = sub_scale(scales[j], from_half(b.d), -32, 31) + 32;
      if (j < 8) {
        b.scales[j] = static_cast<uint8_t>(l & 0xF);
      } else {
        b.scales[j - 8] = static_cast<uint8_t>(b.scales[j - 8] | ((l & 0xF) << 4));
      }
      b.scales[8 + j % 4] = static_cast<uint8_t>(b.scales[8 + j % 4] | ((l >> 4) << (2 * (j / 4))));
    }
  }
  for (int j = 0; j < 16; ++j) {
    const int low = j < 8 ? b.scales[j] & 0xF : b.scales[j - 8] >> 4;
    const int sc = (low | (((b.scales[8 + j % 4] >> (2 * (j / 4))) & 3) << 4)) - 32;
    const float d = from_half(b.d) * static_cast<float>(sc);
    if (d == 0.0f) continue;
    for (int i = 0; i < 16; ++i)
      L[16 * j + i] = static_cast<int8_t>(std::clamp(nearest(x[16 * j + i] / d), -4, 3) + 4);
  }
  // The third bit of element j goes to bit j / 32 of hmask[j % 32]; the low two to qs.
  std::memset(b.hmask, 0, sizeof(b.hmask));
  uint8_t low[kQKK];
  for (int j = 0; j < kQKK; ++j) {
    if (L[j] > 3) b.hmask[j % 32] = static_cast<uint8_t>(b.hmask[j % 32] | (1 << (j / 32)));
    low[j] = static_cast<uint8_t>(L[j] & 3);
  }
  pack_2bit(low, b.qs);
}

// Q4_K/Q5_K: eight sub-blocks of 32 with a scale and a min each, both 6-bit.
struct ScalesMins {
  uint8_t packed[12];
  uint16_t d, dmin;
};

ScalesMins pack_scales_mins(const float* x, const float (&scales)[8], const float (&mins)[8]) {
  float max_scale = 0.0f, max_min = 0.0f;
  for (int j = 0; j < 8; ++j) {
    max_scale = std::max(max_scale, scales[j]);
    max_min = std::max(max_min, mins[j]);
  }
  ScalesMins out{};
  out.d = half(max_scale / 63.0f);
  out.dmin = half(max_min / 63.0f);
  for (int j = 0; j < 8; ++j) {
    const int ls = sub_scale(scales[j], from_half(out.d), 0, 63);
    const int lm = ls == 0 ? offset_only_min(x + 32 * j, 32, from_half(out.dmin), 63)
                           : sub_scale(mins[j], from_half(out.dmin), 0, 63);
    // Sub-blocks 0-3 in the low 6 bits of bytes 0-3 (scales) and 4-7 (mins); 4-7 split
    // into a nibble of byte 8 + (j - 4) and two high bits on top of bytes j - 4 and j.
    if (j < 4) {
      out.packed[j] = static_cast<uint8_t>(ls);
      out.packed[j + 4] = static_cast<uint8_t>(lm);
    } else {
      out.packed[j + 4] = static_cast<uint8_t>((ls & 0xF) | ((lm & 0xF) << 4));
      out.packed[j - 4] = static_cast<uint8_t>(out.packed[j - 4] | ((ls >> 4) << 6));
      out.packed[j] = static_cast<uint8_t>(out.packed[j] | ((lm >> 4) << 6));
    }
  }
  return out;
}

void unpack_scale_min(int j, const uint8_t (&q)[12], int& sc, int& m) {
  if (j < 4) {
    sc = q[j] & 63;
    m = q[j + 4] & 63;
  } else {
    sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

// The levels of Q4_K (nmax 15) or Q5_K (nmax 31): searched, packed, then re-rounded.
ScalesMins k_levels(const float* x, int nmax, bool search, uint8_t (&L)[kQKK]) {
  float scales[8], mins[8], weights[32];
  for (int j = 0; j < 8; ++j) {
    const float* xs = x + 32 * j;
    float sum_x2 = 0.0f;
    for (int l = 0; l < 32; ++l) sum_x2 += xs[l] * xs[l];
    const float mean_magnitude = std::sqrt(sum_x2 / 32.0f);
    for (int l = 0; l < 32; ++l) weights[l] = mean_magnitude + std::fabs(xs[l]);
    scales[j] = nmax == 15 ? offset_levels(32, 15, xs, weights, L + 32 * j, mins[j], -1.0f, 0.1f,
                                           search ? 20 : 0, false)
                           : offset_levels(32, 31, xs, weights, L + 32 * j, mins[j], -0.5f, 0.1f,
                                           search ? 15 : 0, false);
  }
  const ScalesMins packed = pack_scales_mins(x, scales, mins);
  for (int j = 0; j < 8; ++j) {
    int sc, m;
    unpack_scale_min(j, packed.packed, sc, m);
    const float d = from_half(packed.d) * static_cast<float>(sc);
    if (d == 0.0f) continue;
    const float dm = from_half(packed.dmin) * static_cast<float>(m);
    for (int i = 0; i < 32; ++i)
      L[32 * j + i] = static_cast<uint8_t>(std::clamp(nearest((x[32 * j + i] + dm) / d), 0, nmax));
  }
  return packed;
}

void q4_k(const float* x, BlockQ4_K& b, bool search) {
  uint8_t L[kQKK];
  const ScalesMins s = k_levels(x, 15, search, L);
  b.d = s.d;
  b.dmin = s.dmin;
  std::memcpy(b.scales, s.packed, sizeof(b.scales));
  // Per 64 values: byte l holds l (low nibble) and l + 32 (high nibble).
  for (int j = 0; j < kQKK; j += 64) {
    for (int l = 0; l < 32; ++l)
      b.qs[j / 2 + l] = static_cast<uint8_t>(L[j + l] | (L[j + l + 32] << 4));
  }
}

void q5_k(const float* x, BlockQ5_K& b, bool search) {
  uint8_t L[kQKK];
  const ScalesMins s = k_levels(x, 31, search, L);
  b.d = s.d;
  b.dmin = s.dmin;
  std::memcpy(b.scales, s.packed, sizeof(b.scales));
  // As Q4_K for the low nibbles; the fifth bit of the pair (j + l, j + l + 32) of the
  // k-th group of 64 goes to bits 2k and 2k + 1 of qh[l].
  std::memset(b.qh, 0, sizeof(b.qh));
  for (int j = 0, k = 0; j < kQKK; j += 64, ++k) {
    for (int l = 0; l < 32; ++l) {
      const int a = L[j + l], c = L[j + l + 32];
      b.qs[j / 2 + l] = static_cast<uint8_t>((a & 0xF) | ((c & 0xF) << 4));
      b.qh[l] = static_cast<uint8_t>(b.qh[l] | ((a >> 4) << (2 * k)) | ((c >> 4) << (2 * k + 1)));
    }
  }
}

void q6_k(const float* x, BlockQ6_K& b, bool search) {
  int8_t L[kQKK];
  float scales[16];
  float max_scale = 0.0f, amax = 0.0f;
  for (int j = 0; j < 16; ++j) {
    scales[j] = symmetric_levels(16, 32, x + 16 * j, L + 16 * j, search);
    if (std::fabs(scales[j]) > amax) {
      amax = std::fabs(scales[j]);
      max_scale = scales[j];
    }
  }
  std::memset(&b, 0, sizeof(b));
  if (amax < kGroupEps) return;  // all zero: d = 0
  // int8 sub-block scales: the largest maps to -128 (clamped to 127 on the positive side).
  b.d = half(max_scale / -128.0f);
  for (int j = 0; j < 16; ++j)
    b.scales[j] = static_cast<int8_t>(sub_scale(scales[j], from_half(b.d), -128, 127));
  for (int j = 0; j < 16; ++j) {
    const float d = from_half(b.d) * static_cast<float>(b.scales[j]);
    if (d == 0.0f) continue;
    for (int i = 0; i < 16; ++i)
      L[16 * j + i] = static_cast<int8_t>(std::clamp(nearest(x[16 * j + i] / d), -32, 31) + 32);
  }
  // Per 128 values: low nibbles of l and l + 64 in ql[l], of l + 32 and l + 96 in
  // ql[l + 32]; the high two bits of all four in qh[l].
  for (int j = 0; j < kQKK; j += 128) {
    uint8_t* ql = b.ql + j / 2;
    uint8_t* qh = b.qh + j / 4;
    for (int l = 0; l < 32; ++l) {
      const int q1 = L[j + l], q2 = L[j + l + 32], q3 = L[j + l + 64], q4 = L[j + l + 96];
      ql[l] = static_cast<uint8_t>((q1 & 0xF) | ((q3 & 0xF) << 4));
      ql[l + 32] = static_cast<uint8_t>((q2 & 0xF) | ((q4 & 0xF) << 4));
      qh[l] =
          static_cast<uint8_t>((q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6));
    }
  }
}

// ---- IQ4_NL / IQ4_XS -------------------------------------------------------------------------

// The index of the table value nearest to v (the table is sorted; ties go up).
int nearest_iq4(float v) {
  int lo = 0, hi = 15;
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (v < static_cast<float>(kIq4NlValues[mid])) {
      hi = mid;
    } else {
      lo = mid;
    }
  }
  const float below = v - static_cast<float>(kIq4NlValues[lo]);
  const float above = static_cast<float>(kIq4NlValues[hi]) - v;
  return above <= below ? hi : lo;
}

// The scale of one group of 32 against the table, weights x^2: the extreme value maps to
// an end of the table, then (with `search`) 15 inverse scales around it are tried, each
// refit by least squares; the best is kept. Writes the table indices to L.
float iq4_group(const float* x, uint8_t* L, bool search) {
  const Extreme e = largest_magnitude(x, 32);
  if (e.magnitude < kGroupEps) {
    std::fill(L, L + 32, static_cast<uint8_t>(nearest_iq4(0.0f)));
    return 0.0f;
  }
  auto fit = [&](float id, float& sum_qx, float& sum_q2) {
    sum_qx = sum_q2 = 0.0f;
    for (int j = 0; j < 32; ++j) {
      const float q = static_cast<float>(kIq4NlValues[nearest_iq4(id * x[j])]);
      const float w = x[j] * x[j];
      sum_qx += w * q * x[j];
      sum_q2 += w * q * q;
    }
  };
  const int ntry = search ? 7 : 0;
  float sum_qx, sum_q2;
  float d = -e.value / static_cast<float>(kIq4NlValues[0]);
  fit(1.0f / d, sum_qx, sum_q2);
  if (search) {
    d = sum_q2 > 0.0f ? sum_qx / sum_q2 : 0.0f;
    float best = d * sum_qx;
    for (int step = -ntry; step <= ntry; ++step) {
      const float id = (static_cast<float>(step) + static_cast<float>(kIq4NlValues[0])) / e.value;
      fit(id, sum_qx, sum_q2);
      if (sum_q2 > 0.0f && sum_qx * sum_qx > best * sum_q2) {
        d = sum_qx / sum_q2;
        best = d * sum_qx;
      }
    }
  }
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  for (int j = 0; j < 32; ++j) L[j] = static_cast<uint8_t>(nearest_iq4(id * x[j]));
  return d;
}

void pack_iq4(const uint8_t* L, uint8_t* qs) {
  for (int j = 0; j < 16; ++j) qs[j] = static_cast<uint8_t>(L[j] | (L[j + 16] << 4));
}

void iq4_nl(const float* x, BlockIq4Nl& b, bool search) {
  uint8_t L[32];
  const float d = iq4_group(x, L, search);
  b.d = half(d);
  // Re-index against the scale the file holds.
  const float stored = from_half(b.d);
  const float id = stored != 0.0f ? 1.0f / stored : 0.0f;
  for (int j = 0; j < 32; ++j) L[j] = static_cast<uint8_t>(nearest_iq4(id * x[j]));
  pack_iq4(L, b.qs);
}

void iq4_xs(const float* x, BlockIq4Xs& b, bool search) {
  uint8_t L[kQKK];
  float scales[8];
  float max_scale = 0.0f, amax = 0.0f;
  for (int ib = 0; ib < 8; ++ib) {
    scales[ib] = iq4_group(x + 32 * ib, L + 32 * ib, search);
    if (std::fabs(scales[ib]) > amax) {
      amax = std::fabs(scales[ib]);
      max_scale = scales[ib];
    }
  }
  // 6-bit signed sub-block scales (stored + 32): low nibbles in scales_l, high 2 bits in
  // scales_h; the largest maps to -32.
  std::memset(&b, 0, sizeof(b));
  b.d = half(max_scale != 0.0f ? -max_scale / 32.0f : 0.0f);
  const float stored = from_half(b.d);
  for (int ib = 0; ib < 8; ++ib) {
    const int l = sub_scale(scales[ib], stored, -32, 31);
    const float dl = stored * static_cast<float>(l);
    const float idl = dl != 0.0f ? 1.0f / dl : 0.0f;
    for (int j = 0; j < 32; ++j)
      L[32 * ib + j] = static_cast<uint8_t>(nearest_iq4(idl * x[32 * ib + j]));
    const int u = l + 32;
    b.scales_l[ib / 2] = static_cast<uint8_t>(b.scales_l[ib / 2] | ((u & 0xF) << (4 * (ib % 2))));
    b.scales_h = static_cast<uint16_t>(b.scales_h | ((u >> 4) << (2 * ib)));
    pack_iq4(L + 32 * ib, b.qs + 16 * ib);
  }
}

// ---- dispatch --------------------------------------------------------------------------------

template <class Block, class Fn>
void each_block(const float* x, int64_t n, int64_t per_block, void* out, Fn one) {
  auto* bytes = static_cast<uint8_t*>(out);
  for (int64_t i = 0; i < n / per_block; ++i) {
    Block b{};
    one(x + i * per_block, b);
    std::memcpy(bytes + i * static_cast<int64_t>(sizeof(Block)), &b, sizeof(Block));
  }
}

void plain(TensorType type, const float* x, int64_t n, void* out) {
  auto* bytes = static_cast<uint8_t*>(out);
  if (type == TensorType::kF32) {
    std::memcpy(bytes, x, static_cast<size_t>(n) * sizeof(float));
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t h = type == TensorType::kF16 ? half_from_float(x[i]) : bfloat_from_float(x[i]);
    std::memcpy(bytes + 2 * i, &h, 2);
  }
}

}  // namespace

void quantize_row(TensorType type, const float* x, int64_t n, void* out, ScaleSearch search) {
  if (!is_supported_type(static_cast<uint32_t>(type)))
    throw std::invalid_argument("cannot quantize to tensor type " +
                                std::to_string(static_cast<uint32_t>(type)));
  const int64_t per_block = block_elements(type);
  if (n < 0 || n % per_block != 0) {
    throw std::invalid_argument(std::to_string(n) + " values are not a whole number of " +
                                std::to_string(per_block) + "-value " + type_name(type) +
                                " blocks");
  }
  // Block types hold F16 scales (and mins): a value beyond F16's range would give an
  // infinite scale.
  const bool has_f16_scales = per_block > 1;
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(x[i])) {
      throw std::invalid_argument(std::string("cannot quantize ") +
                                  (std::isnan(x[i]) ? "NaN" : "an infinite value") + " (value " +
                                  std::to_string(i) + ") to " + type_name(type));
    }
    if (has_f16_scales && std::fabs(x[i]) > kF16Max) {
      throw std::invalid_argument("cannot quantize " + std::to_string(x[i]) + " (value " +
                                  std::to_string(i) + ") to " + type_name(type) +
                                  ": beyond the F16 range of its block scales");
    }
  }
  const bool s = search == ScaleSearch::kSearch;
  switch (type) {
    case TensorType::kF32:
    case TensorType::kF16:
    case TensorType::kBF16:
      return plain(type, x, n, out);
    case TensorType::kQ4_0:
      return each_block<BlockQ4_0>(x, n, kQK4, out, q4_0);
    case TensorType::kQ4_1:
      return each_block<BlockQ4_1>(x, n, kQK4, out, q4_1);
    case TensorType::kQ5_0:
      return each_block<BlockQ5_0>(x, n, kQK4, out, q5_0);
    case TensorType::kQ5_1:
      return each_block<BlockQ5_1>(x, n, kQK4, out, q5_1);
    case TensorType::kQ8_0:
      return each_block<BlockQ8_0>(x, n, kQ8_0BlockSize, out, q8_0);
    case TensorType::kQ2_K:
      return each_block<BlockQ2_K>(x, n, kQKK, out,
                                   [s](const float* v, BlockQ2_K& b) { q2_k(v, b, s); });
    case TensorType::kQ3_K:
      return each_block<BlockQ3_K>(x, n, kQKK, out,
                                   [s](const float* v, BlockQ3_K& b) { q3_k(v, b, s); });
    case TensorType::kQ4_K:
      return each_block<BlockQ4_K>(x, n, kQKK, out,
                                   [s](const float* v, BlockQ4_K& b) { q4_k(v, b, s); });
    case TensorType::kQ5_K:
      return each_block<BlockQ5_K>(x, n, kQKK, out,
                                   [s](const float* v, BlockQ5_K& b) { q5_k(v, b, s); });
    case TensorType::kQ6_K:
      return each_block<BlockQ6_K>(x, n, kQKK, out,
                                   [s](const float* v, BlockQ6_K& b) { q6_k(v, b, s); });
    case TensorType::kIQ4_NL:
      return each_block<BlockIq4Nl>(x, n, kQK4, out,
                                    [s](const float* v, BlockIq4Nl& b) { iq4_nl(v, b, s); });
    case TensorType::kIQ4_XS:
      return each_block<BlockIq4Xs>(x, n, kQKK, out,
                                    [s](const float* v, BlockIq4Xs& b) { iq4_xs(v, b, s); });
  }
  throw std::invalid_argument(std::string("cannot quantize to ") + type_name(type));
}

std::vector<uint8_t> quantize(TensorType type, std::span<const float> x, ScaleSearch search) {
  const auto n = static_cast<int64_t>(x.size());
  const int64_t per_block = block_elements(type);
  std::vector<uint8_t> out(static_cast<size_t>(n / per_block * block_bytes(type)));
  quantize_row(type, x.data(), n, out.data(), search);
  return out;
}

}  // namespace tandem::gguf
