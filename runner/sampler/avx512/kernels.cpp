// AVX-512 sampler kernels: 16 lanes, the same IEEE operations in the same order as the
// scalar definitions in sampler_kernels.cpp, so that every result (but the ladder's hint
// masses) is bit-identical. Compiled with -ffp-contract=off: no multiply-add may be fused.
// Called only after the run-time CPU check, so this file instantiates no standard-library
// template: an out-of-line copy emitted here could be picked by the linker for baseline code.
#include <immintrin.h>

#include "runner/sampler/kernels.h"
#include "runner/sampler/philox_constants.h"

namespace tandem::sampler_kernels::avx512_impl {
namespace {

constexpr float kNegInf = -__builtin_inff();

__m512 set(float x) { return _mm512_set1_ps(x); }
__m512 mul(__m512 a, __m512 b) { return _mm512_mul_ps(a, b); }
__m512 add(__m512 a, __m512 b) { return _mm512_add_ps(a, b); }
__m512 sub(__m512 a, __m512 b) { return _mm512_sub_ps(a, b); }
__m512 negate(__m512 a) {
  return _mm512_castsi512_ps(
      _mm512_xor_si512(_mm512_castps_si512(a), _mm512_set1_epi32(static_cast<int>(0x80000000u))));
}
__mmask16 tail_mask(int32_t left) {
  return left >= 16 ? __mmask16{0xffff} : static_cast<__mmask16>((1u << left) - 1u);
}
__m512 load_or_neg_inf(const float* p, __mmask16 mask) {
  return _mm512_mask_loadu_ps(set(kNegInf), mask, p);
}

// log_approx, lane by lane.
__m512 log_approx16(__m512 x) {
  const __m512i bits = _mm512_castps_si512(x);
  __m512i e = _mm512_sub_epi32(_mm512_srli_epi32(bits, 23), _mm512_set1_epi32(127));
  __m512 m = _mm512_castsi512_ps(_mm512_or_si512(
      _mm512_and_si512(bits, _mm512_set1_epi32(0x7fffff)), _mm512_set1_epi32(0x3f800000)));
  const __mmask16 big = _mm512_cmp_ps_mask(m, set(1.41421356f), _CMP_GT_OQ);
  m = _mm512_mask_mul_ps(m, big, m, set(0.5f));
  e = _mm512_mask_add_epi32(e, big, e, _mm512_set1_epi32(1));
  const __m512 fe = _mm512_cvtepi32_ps(e);
  const __m512 f = sub(m, set(1.0f));
  const __m512 f2 = mul(f, f);
  __m512 y = set(7.0376836292e-2f);
  y = add(mul(y, f), set(-1.1514610310e-1f));
  y = add(mul(y, f), set(1.1676998740e-1f));
  y = add(mul(y, f), set(-1.2420140846e-1f));
  y = add(mul(y, f), set(1.4249322787e-1f));
  y = add(mul(y, f), set(-1.6668057665e-1f));
  y = add(mul(y, f), set(2.0000714765e-1f));
  y = add(mul(y, f), set(-2.4999993993e-1f));
  y = add(mul(y, f), set(3.3333331174e-1f));
  y = mul(y, f);
  y = mul(y, f2);
  y = add(y, mul(fe, set(-2.12194440e-4f)));
  y = add(y, mul(f2, set(-0.5f)));
  __m512 r = add(f, y);
  r = add(r, mul(fe, set(0.693359375f)));
  return r;
}

// exp_shifted, lane by lane. The power of two is vscalefps's 2^n (n is integer-valued), exact
// as the portable multiply by it is (for d >= -86, 2^n and the result stay normal): no
// integer steps, so the lanes out of range (d < -86, NaN) may compute garbage, which the last
// step masks off. `bench_sampler` at a 128256 vocabulary, 3 alternating rounds: top-k 40,
// top-p 0.95, min-p 0.05 77.2-77.6 -> 66.4-68.7 us; T = 0.8, top-p 0.9 156-162 -> 150-151.
__m512 exp_shifted16(__m512 d) {
  const __mmask16 valid = _mm512_cmp_ps_mask(d, set(-86.0f), _CMP_GE_OQ);
  const __m512 t = mul(d, set(1.44269504088896341f));
  const __m512 n = sub(add(t, set(12582912.0f)), set(12582912.0f));
  __m512 x = sub(d, mul(n, set(0.693359375f)));
  x = sub(x, mul(n, set(-2.12194440e-4f)));
  const __m512 x2 = mul(x, x);
  __m512 y = set(1.9875691500e-4f);
  y = add(mul(y, x), set(1.3981999507e-3f));
  y = add(mul(y, x), set(8.3334519073e-3f));
  y = add(mul(y, x), set(4.1665795894e-2f));
  y = add(mul(y, x), set(1.6666665459e-1f));
  y = add(mul(y, x), set(5.0000001201e-1f));
  y = mul(y, x2);
  y = add(y, x);
  y = add(y, set(1.0f));
  return _mm512_maskz_scalef_ps(valid, y, n);
}

// exp_table, lane by lane: the table's 32 entries in two registers, picked by r's low 5 bits.
// r is rounded as the portable form rounds it, by adding and taking back 1.5 * 2^23, and the
// sum's low mantissa bits are r's own (two's complement), so they index the table with no
// conversion; 2^(r >> 5) is vscalefps's 2^floor(r / 32), exact as the portable multiply by
// the power of two is (for d >= -86 the result stays normal). Three instructions fewer than
// a round, a conversion and the exponent built by shifts: `bench_sampler` greedy+lp5 at a
// 128256 vocabulary 26.8-27.5 -> 22.5-23.0 us (3 alternating rounds). Lanes out of range
// (d < -86, NaN) compute garbage that the last step masks off.
__m512 exp_table16(__m512 d) {
  const __mmask16 valid = _mm512_cmp_ps_mask(d, set(-86.0f), _CMP_GE_OQ);
  const __m512 t = mul(d, set(46.1662413f));
  const __m512 shifted = add(t, set(12582912.0f));
  const __m512 r = sub(shifted, set(12582912.0f));
  const __m512 f = sub(t, r);
  __m512 p = _mm512_fmadd_ps(f, set(1.69385097e-6f), set(2.34596198e-4f));
  p = _mm512_fmadd_ps(p, f, set(2.16608494e-2f));
  p = _mm512_fmadd_ps(p, f, set(1.0f));
  const __m512 low = _mm512_loadu_ps(kExp2Table), high = _mm512_loadu_ps(kExp2Table + 16);
  const __m512 table = _mm512_permutex2var_ps(low, _mm512_castps_si512(shifted), high);
  return _mm512_maskz_scalef_ps(valid, mul(table, p), mul(r, set(0.03125f)));
}

__m512 gumbel_from_bits16(__m512i bits) {
  const __m512 k = _mm512_cvtepi32_ps(_mm512_srli_epi32(bits, 9));
  const __m512 u = add(mul(k, set(0x1p-23f)), set(0x1p-24f));
  return negate(log_approx16(negate(log_approx16(u))));
}

// (hi, lo) halves of the 32x32-bit products a * m, lane by lane.
void mul_hi_lo(__m512i a, __m512i m, __m512i* hi, __m512i* lo) {
  const __m512i even = _mm512_mul_epu32(a, m);
  const __m512i odd = _mm512_mul_epu32(_mm512_srli_epi64(a, 32), m);
  *hi = _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(even, 32), odd);
  *lo = _mm512_mask_blend_epi32(0xAAAA, even, _mm512_slli_epi64(odd, 32));
}

// Sixteen Philox4x32-10 blocks at once: lane l of c[w] is word w of block l.
void philox16(__m512i c[4], uint64_t seed) {
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  const __m512i mul0 = _mm512_set1_epi32(static_cast<int>(philox::kMul0));
  const __m512i mul1 = _mm512_set1_epi32(static_cast<int>(philox::kMul1));
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += philox::kWeyl0;
      k1 += philox::kWeyl1;
    }
    __m512i hi0, lo0, hi1, lo1;
    mul_hi_lo(c[0], mul0, &hi0, &lo0);
    mul_hi_lo(c[2], mul1, &hi1, &lo1);
    const __m512i key0 = _mm512_set1_epi32(static_cast<int>(k0));
    const __m512i key1 = _mm512_set1_epi32(static_cast<int>(k1));
    c[0] = _mm512_xor_si512(_mm512_xor_si512(hi1, c[1]), key0);
    c[1] = lo1;
    c[2] = _mm512_xor_si512(_mm512_xor_si512(hi0, c[3]), key1);
    c[3] = lo0;
  }
}

void position_words(int64_t position, __m512i* c2, __m512i* c3) {
  const auto pos = static_cast<uint64_t>(position);
  *c2 = _mm512_set1_epi32(static_cast<int>(static_cast<uint32_t>(pos)));
  *c3 = _mm512_set1_epi32(static_cast<int>(static_cast<uint32_t>(pos >> 32)));
}

// The lanes' fold of fold_lanes in sampler_kernels.cpp: halves added lane by lane, 8 then
// 4, 2 and 1 wide.
float fold_lanes(__m512 lanes) {
  const __m256 half =
      _mm256_add_ps(_mm512_castps512_ps256(lanes),
                    _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(lanes), 1)));
  const __m128 quarter = _mm_add_ps(_mm256_castps256_ps128(half), _mm256_extractf128_ps(half, 1));
  const __m128 eighth = _mm_add_ps(quarter, _mm_movehl_ps(quarter, quarter));
  return _mm_cvtss_f32(_mm_add_ss(eighth, _mm_shuffle_ps(eighth, eighth, 1)));
}

float scale_max(float* z, int32_t n, float inv_t) {
  // vmaxps returns its second operand when either is NaN, so max(v, acc) skips NaN.
  __m512 acc[4] = {set(kNegInf), set(kNegInf), set(kNegInf), set(kNegInf)};
  const __m512 scale = set(inv_t);
  const bool scaled = inv_t != 1.0f;
  int32_t i = 0;
  for (; i + 64 <= n; i += 64) {
    for (int a = 0; a < 4; ++a) {
      __m512 v = _mm512_loadu_ps(z + i + 16 * a);
      if (scaled) {
        v = mul(v, scale);
        _mm512_storeu_ps(z + i + 16 * a, v);
      }
      acc[a] = _mm512_max_ps(v, acc[a]);
    }
  }
  for (; i < n; i += 16) {
    const __mmask16 mask = tail_mask(n - i);
    __m512 v = load_or_neg_inf(z + i, mask);
    if (scaled) {
      v = mul(v, scale);
      _mm512_mask_storeu_ps(z + i, mask, v);
    }
    acc[0] = _mm512_max_ps(v, acc[0]);
  }
  const __m512 all = _mm512_max_ps(_mm512_max_ps(acc[0], acc[1]), _mm512_max_ps(acc[2], acc[3]));
  return _mm512_reduce_max_ps(all) + 0.0f;
}

int32_t argmax(const float* x, int32_t n) {
  __m512 acc[4] = {set(kNegInf), set(kNegInf), set(kNegInf), set(kNegInf)};
  int32_t i = 0;
  for (; i + 64 <= n; i += 64) {
    for (int a = 0; a < 4; ++a) acc[a] = _mm512_max_ps(_mm512_loadu_ps(x + i + 16 * a), acc[a]);
  }
  for (; i < n; i += 16) acc[0] = _mm512_max_ps(load_or_neg_inf(x + i, tail_mask(n - i)), acc[0]);
  const __m512 all = _mm512_max_ps(_mm512_max_ps(acc[0], acc[1]), _mm512_max_ps(acc[2], acc[3]));
  const float top = _mm512_reduce_max_ps(all);
  if (top == kNegInf) return -1;
  const __m512 target = set(top);
  for (i = 0; i < n; i += 16) {
    const __mmask16 hit =
        _mm512_cmp_ps_mask(load_or_neg_inf(x + i, tail_mask(n - i)), target, _CMP_EQ_OQ);
    if (hit != 0) return i + static_cast<int32_t>(__builtin_ctz(hit));
  }
  return -1;  // unreachable: top came from x
}

// Four vectors at a time are compared with the list's threshold at once: past the first few
// hundred entries almost no entry beats the k-th best, so the list costs about a compare a
// vector. Entries that do are inserted in id order, as the portable scan.
void scan_top(const float* x, int32_t n, int32_t k, int32_t first_id, TopList* out) {
  auto threshold = [&] { return out->count < k ? kNegInf : out->value[k - 1]; };
  auto visit = [&](int32_t i, __m512 v, __mmask16 mask) {
    __mmask16 hit = _mm512_mask_cmp_ps_mask(mask, v, set(threshold()), _CMP_GT_OQ);
    while (hit != 0) {
      const int32_t lane = static_cast<int32_t>(__builtin_ctz(hit));
      hit = static_cast<__mmask16>(hit & (hit - 1));
      top_insert(out, k, x[i + lane], first_id + i + lane);
    }
  };
  int32_t i = 0;
  for (; i + 64 <= n; i += 64) {
    __m512 v[4];
    for (int a = 0; a < 4; ++a) v[a] = _mm512_loadu_ps(x + i + 16 * a);
    // Four compares, not a max of the four: vmaxps would let a NaN hide a larger lane.
    const __m512 bar = set(threshold());
    __mmask16 any = 0;
    for (int a = 0; a < 4; ++a) any |= _mm512_cmp_ps_mask(v[a], bar, _CMP_GT_OQ);
    if (any == 0) continue;
    for (int a = 0; a < 4; ++a) visit(i + 16 * a, v[a], 0xffff);
  }
  for (; i < n; i += 16) {
    const __mmask16 mask = tail_mask(n - i);
    visit(i, load_or_neg_inf(x + i, mask), mask);
  }
}

// Sum of exp_fn(x[i] - x_max), lane i % 16 taking element i, then folded.
template <__m512 (*exp_fn)(__m512)>
float lane_sum(const float* x, int32_t n, float x_max) {
  const __m512 top = set(x_max);
  __m512 lanes = _mm512_setzero_ps();
  for (int32_t i = 0; i < n; i += 16) {
    lanes = add(lanes, exp_fn(sub(load_or_neg_inf(x + i, tail_mask(n - i)), top)));
  }
  return fold_lanes(lanes);
}

// One panel's partials from its four vectors (-inf past the row's end): their max, NaN
// ignored (vmaxps returns its second operand, the running max, when the first is NaN), then
// their exps in lane order, as the portable loop adds them (a lane past the row's end adds
// exp_table(-inf) = +0: no change).
[[gnu::always_inline]] inline void panel_partial(const __m512 v[4], float* max, float* sum) {
  __m512 best = set(kNegInf);
  for (int a = 0; a < 4; ++a) best = _mm512_max_ps(v[a], best);
  const float top = _mm512_reduce_max_ps(best) + 0.0f;
  __m512 lanes = _mm512_setzero_ps();
  if (top > kNegInf && top < -kNegInf) {
    const __m512 base = set(top);
    for (int a = 0; a < 4; ++a) lanes = add(lanes, exp_table16(sub(v[a], base)));
  }
  *max = top;
  *sum = fold_lanes(lanes);
}

// Sixteen vectors' horizontal folds at once, lane l of the result holding vector l's: four
// rounds of pairing halves, each adding (or taking the max of) lanes l and l + width within
// each vector, as fold_lanes does (8, 4, 2 and 1 wide), so every sum is fold_lanes' bit for
// bit. The rounds leave vector 4i + k in lane 4k + i; the last step puts it back in lane l.
template <__m512 (*op)(__m512, __m512)>
__m512 fold16(__m512 v[16]) {
  for (int q = 0; q < 8; ++q) {  // width 8: [a.lo8 | b.lo8] op [a.hi8 | b.hi8]
    v[q] = op(_mm512_shuffle_f32x4(v[2 * q], v[2 * q + 1], 0x44),
              _mm512_shuffle_f32x4(v[2 * q], v[2 * q + 1], 0xEE));
  }
  for (int q = 0; q < 4; ++q) {  // width 4: each 8-lane half's two 4-lane blocks
    v[q] = op(_mm512_shuffle_f32x4(v[2 * q], v[2 * q + 1], 0x88),
              _mm512_shuffle_f32x4(v[2 * q], v[2 * q + 1], 0xDD));
  }
  for (int q = 0; q < 2; ++q) {  // width 2, within each 128-bit block
    v[q] = op(_mm512_shuffle_ps(v[2 * q], v[2 * q + 1], 0x44),
              _mm512_shuffle_ps(v[2 * q], v[2 * q + 1], 0xEE));
  }
  const __m512 folded =
      op(_mm512_shuffle_ps(v[0], v[1], 0x88), _mm512_shuffle_ps(v[0], v[1], 0xDD));
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  return _mm512_permutexvar_ps(order, folded);
}
__m512 max_of(__m512 a, __m512 b) { return _mm512_max_ps(a, b); }

// Sixteen whole panels at x: their maxima folded at once, then each panel's exps below its
// own, the sums folded at once. A max fold has no order to keep but the zeros' signs, which
// adding +0 makes +0 (as the portable loop does).
void sixteen_panels(const float* x, float* max, float* sum) {
  __m512 lanes[16];
  for (int j = 0; j < 16; ++j) {
    __m512 best = set(kNegInf);
    for (int a = 0; a < 4; ++a) best = _mm512_max_ps(_mm512_loadu_ps(x + 64 * j + 16 * a), best);
    lanes[j] = best;
  }
  const __m512 tops = add(fold16<max_of>(lanes), _mm512_setzero_ps());
  _mm512_storeu_ps(max, tops);
  // Panels whose max is -inf or +inf sum exps of -inf or NaN only: +0, the portable value.
  for (int j = 0; j < 16; ++j) {
    const __m512 base = _mm512_set1_ps(max[j]);
    __m512 acc = _mm512_setzero_ps();
    for (int a = 0; a < 4; ++a)
      acc = add(acc, exp_table16(sub(_mm512_loadu_ps(x + 64 * j + 16 * a), base)));
    lanes[j] = acc;
  }
  _mm512_storeu_ps(sum, fold16<add>(lanes));
}

void panel_partials(const float* x, int32_t n, float* max, float* sum) {
  int32_t p = 0, i = 0;
  for (; i + 16 * kLogitPanel <= n; p += 16, i += 16 * kLogitPanel)
    sixteen_panels(x + i, max + p, sum + p);
  for (; i + kLogitPanel <= n; ++p, i += kLogitPanel) {
    const __m512 v[4] = {_mm512_loadu_ps(x + i), _mm512_loadu_ps(x + i + 16),
                         _mm512_loadu_ps(x + i + 32), _mm512_loadu_ps(x + i + 48)};
    panel_partial(v, max + p, sum + p);
  }
  if (i == n) return;
  __m512 v[4];
  for (int a = 0; a < 4; ++a) {
    const int32_t at = i + 16 * a;
    v[a] = at < n ? load_or_neg_inf(x + at, tail_mask(n - at)) : set(kNegInf);
  }
  panel_partial(v, max + p, sum + p);
}

float partials_z(const float* max, const float* sum, int32_t n_panels, float top) {
  const __m512 base = set(top);
  __m512 lanes = _mm512_setzero_ps();
  for (int32_t p = 0; p < n_panels; p += 16) {
    const __mmask16 mask = tail_mask(n_panels - p);
    const __m512 s = _mm512_maskz_loadu_ps(mask, sum + p);
    lanes = add(lanes, mul(s, exp_table16(sub(load_or_neg_inf(max + p, mask), base))));
  }
  return fold_lanes(lanes);
}
float z_sum(const float* z, int32_t n, float z_max) { return lane_sum<exp_shifted16>(z, n, z_max); }

void ladder(const float* z, int32_t n, float z_max, Ladder* out) {
  const __m512 top = set(z_max);
  const int32_t stride = n > kLadderFullRows ? 8 : 1;
  const __m512 tail_weight = set(static_cast<float>(stride));
  __m512 mass[kRungs];
  for (auto& m : mass) m = _mm512_setzero_ps();
  for (int32_t i = 0, group = 0; i < n; i += 16, ++group) {
    const __m512 d = sub(load_or_neg_inf(z + i, tail_mask(n - i)), top);
    const __mmask16 head = _mm512_cmp_ps_mask(d, set(-kLadderHead), _CMP_GE_OQ);
    const bool sampled = group % stride == 0;
    if (!sampled && head == 0) continue;
    const __m512 weight = sampled ? _mm512_mask_blend_ps(head, tail_weight, set(1.0f))
                                  : _mm512_maskz_mov_ps(head, set(1.0f));
    const __m512 weighed = mul(exp_shifted16(d), weight);
    for (int r = 0; r < kRungs; ++r) {
      const __mmask16 in = _mm512_cmp_ps_mask(d, set(-kRungDepth[r]), _CMP_GE_OQ);
      mass[r] = _mm512_mask_add_ps(mass[r], in, mass[r], weighed);
    }
  }
  for (int r = 0; r < kRungs; ++r) out->mass[r] = _mm512_reduce_add_ps(mass[r]);
}

int32_t collect(const float* z, int32_t n, float z_max, float threshold, float* out_z,
                int32_t* out_id) {
  const __m512 top = set(z_max), floor = set(threshold);
  __m512i ids = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  int32_t count = 0;
  for (int32_t i = 0; i < n; i += 16) {
    const __mmask16 mask = tail_mask(n - i);
    const __m512 v = load_or_neg_inf(z + i, mask);
    const __mmask16 in = _mm512_mask_cmp_ps_mask(mask, sub(v, top), floor, _CMP_GE_OQ);
    if (in != 0) {
      // Compress in registers, then a full store: compress-to-memory is slow on some CPUs.
      _mm512_storeu_ps(out_z + count, _mm512_maskz_compress_ps(in, v));
      _mm512_storeu_si512(out_id + count, _mm512_maskz_compress_epi32(in, ids));
      count += __builtin_popcount(in);
    }
    ids = _mm512_add_epi32(ids, _mm512_set1_epi32(16));
  }
  return count;
}

void exp_shifted_row(const float* z, int32_t n, float z_max, float* out) {
  const __m512 top = set(z_max);
  for (int32_t i = 0; i < n; i += 16) {
    const __mmask16 mask = tail_mask(n - i);
    _mm512_mask_storeu_ps(out + i, mask, exp_shifted16(sub(load_or_neg_inf(z + i, mask), top)));
  }
}

// The Philox word behind each lane's id: word id % 4 of block id / 4.
__m512i noise_bits16(__m512i id, uint64_t seed, int64_t position) {
  __m512i c[4];
  c[0] = _mm512_srli_epi32(id, 2);
  c[1] = _mm512_setzero_si512();
  position_words(position, &c[2], &c[3]);
  philox16(c, seed);
  const __m512i word = _mm512_and_si512(id, _mm512_set1_epi32(3));
  __m512i bits = c[0];
  bits = _mm512_mask_mov_epi32(bits, _mm512_cmpeq_epi32_mask(word, _mm512_set1_epi32(1)), c[1]);
  bits = _mm512_mask_mov_epi32(bits, _mm512_cmpeq_epi32_mask(word, _mm512_set1_epi32(2)), c[2]);
  bits = _mm512_mask_mov_epi32(bits, _mm512_cmpeq_epi32_mask(word, _mm512_set1_epi32(3)), c[3]);
  return bits;
}

void noise(uint64_t seed, int64_t position, const int32_t* ids, int32_t n, float* out) {
  for (int32_t j = 0; j < n; j += 16) {
    const __mmask16 mask = tail_mask(n - j);
    const __m512i bits = noise_bits16(_mm512_maskz_loadu_epi32(mask, ids + j), seed, position);
    _mm512_mask_storeu_ps(out + j, mask, gumbel_from_bits16(bits));
  }
}

// noise_ceiling, lane by lane.
__m512 noise_ceiling16(__m512i bits) {
  const __m512i x = _mm512_sub_epi32(_mm512_set1_epi32(0xffffff),
                                     _mm512_slli_epi32(_mm512_srli_epi32(bits, 9), 1));
  const __m512i exponent =
      _mm512_srli_epi32(_mm512_castps_si512(_mm512_cvtepi32_ps(x)), 23);  // floor(log2 x) + 127
  const __m512 octaves = _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_set1_epi32(151), exponent));
  return add(mul(octaves, set(0.693147182f)), set(1e-3f));
}

// The dense pass is exact but prunes: a running best B (seeded with the top token's value)
// only rises, and a token whose value cannot reach B cannot win or tie (ties go to the lower
// id, and the tokens come in id order after the seed is settled below). A block of 64 whose
// largest z + kNoiseCeiling falls short of B skips Philox; a lane whose z + noise_ceiling16
// falls short skips the two logs. Real logits' long low tail skips whole blocks.
int32_t gumbel_argmax(const float* z, int32_t n, int32_t top, uint64_t seed, int64_t position) {
  GumbelBest best = gumbel_start(z, top >= -1 ? top : argmax(z, n), nullptr, seed, position);
  if (best.index < 0) return -1;

  // 64 ids per iteration: 16 Philox blocks (4 words each), transposed into id order.
  // Output vector v holds ids base + 16v + j, whose bits are word j % 4 of block 4v + j / 4.
  __m512i pick[4];
  for (int v = 0; v < 4; ++v) {
    alignas(64) int32_t idx[16];
    for (int j = 0; j < 16; ++j) idx[j] = ((j & 1) != 0 ? 16 : 0) + 4 * v + (j >> 2);
    pick[v] = _mm512_load_si512(idx);
  }
  const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  for (int32_t base = 0; base < n; base += 64) {
    __m512 zv[4];
    __m512 block_max = set(kNegInf);  // never NaN: vmaxps returns its second operand on NaN
    for (int v = 0; v < 4; ++v) {
      const int32_t first = base + 16 * v;
      zv[v] = first < n ? load_or_neg_inf(z + first, tail_mask(n - first)) : set(kNegInf);
      block_max = _mm512_max_ps(zv[v], block_max);
    }
    const __m512 bound = set(best.value);
    if (_mm512_cmp_ps_mask(add(block_max, set(kNoiseCeiling)), bound, _CMP_GE_OQ) == 0) continue;
    __m512i c[4];
    c[0] = _mm512_add_epi32(_mm512_set1_epi32(base >> 2), lane);
    c[1] = _mm512_setzero_si512();
    position_words(position, &c[2], &c[3]);
    philox16(c, seed);
    for (int v = 0; v < 4; ++v) {
      const __m512i w01 = _mm512_permutex2var_epi32(c[0], pick[v], c[1]);
      const __m512i w23 = _mm512_permutex2var_epi32(c[2], pick[v], c[3]);
      const __m512i bits = _mm512_mask_blend_epi32(0xCCCC, w01, w23);
      const __m512 now = set(best.value);
      const __mmask16 open = _mm512_cmp_ps_mask(add(zv[v], noise_ceiling16(bits)), now, _CMP_GE_OQ);
      if (open == 0) continue;
      const __m512 value = add(zv[v], gumbel_from_bits16(bits));
      const __m512i ids = _mm512_add_epi32(_mm512_set1_epi32(base + 16 * v), lane);
      const __mmask16 above = _mm512_mask_cmp_ps_mask(open, value, now, _CMP_GT_OQ);
      const __mmask16 tie_lower =
          _mm512_mask_cmplt_epi32_mask(_mm512_mask_cmp_ps_mask(open, value, now, _CMP_EQ_OQ), ids,
                                       _mm512_set1_epi32(best.index));
      const __mmask16 better = above | tie_lower;
      if (better == 0) continue;
      // The best of the lanes that beat B: the largest value, then the lowest id.
      const float top_value = _mm512_mask_reduce_max_ps(better, value);
      const __mmask16 at_top = _mm512_mask_cmp_ps_mask(better, value, set(top_value), _CMP_EQ_OQ);
      best.value = top_value;
      best.index = _mm512_mask_reduce_min_epi32(at_top, ids);
    }
  }
  return best.index;
}

// As gumbel_argmax, over a set of tokens in any order: ties compare ids, not positions.
int32_t gumbel_argmax_at(const float* z, const int32_t* ids, int32_t n, uint64_t seed,
                         int64_t position) {
  GumbelBest best = gumbel_start(z, argmax(z, n), ids, seed, position);
  if (best.index < 0) return -1;
  for (int32_t j = 0; j < n; j += 16) {
    const __mmask16 mask = tail_mask(n - j);
    const __m512 zv = load_or_neg_inf(z + j, mask);
    const __m512i id = _mm512_maskz_loadu_epi32(mask, ids + j);
    const __m512i bits = noise_bits16(id, seed, position);
    const __m512 now = set(best.value);
    const __mmask16 open = _mm512_cmp_ps_mask(add(zv, noise_ceiling16(bits)), now, _CMP_GE_OQ);
    if (open == 0) continue;
    const __m512 value = add(zv, gumbel_from_bits16(bits));
    const __mmask16 above = _mm512_mask_cmp_ps_mask(open, value, now, _CMP_GT_OQ);
    const __mmask16 tie_lower =
        _mm512_mask_cmplt_epi32_mask(_mm512_mask_cmp_ps_mask(open, value, now, _CMP_EQ_OQ), id,
                                     _mm512_set1_epi32(ids[best.index]));
    const __mmask16 better = above | tie_lower;
    if (better == 0) continue;
    const float top_value = _mm512_mask_reduce_max_ps(better, value);
    const __mmask16 at_top = _mm512_mask_cmp_ps_mask(better, value, set(top_value), _CMP_EQ_OQ);
    const int32_t top_id = _mm512_mask_reduce_min_epi32(at_top, id);
    const __mmask16 at = _mm512_mask_cmpeq_epi32_mask(at_top, id, _mm512_set1_epi32(top_id));
    best.value = top_value;
    best.index = j + static_cast<int32_t>(__builtin_ctz(at));
  }
  return best.index;
}

}  // namespace

extern const Kernels kKernels = {.scale_max = scale_max,
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

}  // namespace tandem::sampler_kernels::avx512_impl
