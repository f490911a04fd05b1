// AVX2 sampler kernels, for the CPUs without AVX-512: the passes over a whole row (max and
// argmax, the logprobs' scan and Z, the sampler's Z and its probabilities, the top-p ladder
// and collection, the Gumbel pass), which were the portable path's slowest part (exp_table's
// lookups one value at a time: the logprobs' Z over a 128k vocabulary cost 6x the greedy
// step it served). Each is the portable definition's IEEE operations in the same order, 8
// lanes wide; the shared 16-lane sum (kernels.h) is two vectors, lanes 0-7 and 8-15, so
// every result is the portable path's bit for bit. The other kernels stay portable
// (kernels.cpp builds the table). Compiled with -ffp-contract=off: no multiply-add may be
// fused. Called only after the run-time CPU check, so this file instantiates no
// standard-library template (avx512/kernels.cpp says why).
#include <immintrin.h>

#include "runner/sampler/kernels.h"
#include "runner/sampler/philox_constants.h"

namespace tandem::sampler_kernels::avx2_impl {
namespace {

constexpr float kNegInf = -__builtin_inff();

__m256 set(float x) { return _mm256_set1_ps(x); }
__m256 mul(__m256 a, __m256 b) { return _mm256_mul_ps(a, b); }
__m256 add(__m256 a, __m256 b) { return _mm256_add_ps(a, b); }
__m256 sub(__m256 a, __m256 b) { return _mm256_sub_ps(a, b); }

// Lanes below `left` set (all from 8 up).
__m256i tail_mask(int32_t left) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(left), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
// Eight floats at p, -inf past the row's end (masked-off lanes are neither read nor faulted on).
__m256 load_or_neg_inf(const float* p, int32_t left) {
  if (left >= 8) return _mm256_loadu_ps(p);
  const __m256i mask = tail_mask(left);
  return _mm256_blendv_ps(set(kNegInf), _mm256_maskload_ps(p, mask), _mm256_castsi256_ps(mask));
}

// d >= -86 (false for NaN), and d where it holds, +0 elsewhere: the portable `valid ? d : 0`,
// which keeps the invalid lanes' garbage out of the integer steps.
__m256 valid_lanes(__m256 d) { return _mm256_cmp_ps(d, set(-86.0f), _CMP_GE_OQ); }

// exp_shifted, lane by lane.
__m256 exp_shifted8(__m256 d) {
  const __m256 valid = valid_lanes(d);
  d = _mm256_and_ps(d, valid);
  const __m256 t = mul(d, set(1.44269504088896341f));
  const __m256 n = sub(add(t, set(12582912.0f)), set(12582912.0f));
  __m256 x = sub(d, mul(n, set(0.693359375f)));
  x = sub(x, mul(n, set(-2.12194440e-4f)));
  const __m256 x2 = mul(x, x);
  __m256 y = set(1.9875691500e-4f);
  y = add(mul(y, x), set(1.3981999507e-3f));
  y = add(mul(y, x), set(8.3334519073e-3f));
  y = add(mul(y, x), set(4.1665795894e-2f));
  y = add(mul(y, x), set(1.6666665459e-1f));
  y = add(mul(y, x), set(5.0000001201e-1f));
  y = mul(y, x2);
  y = add(y, x);
  y = add(y, set(1.0f));
  const __m256i scale =
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvttps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_and_ps(mul(y, _mm256_castsi256_ps(scale)), valid);
}

// kExp2Table[i & 31] for each lane: the table is four vectors of eight, vpermps picks in each
// by i's low 3 bits and bits 3 and 4 (moved to the sign bit) choose among the four. Exactly
// the entries a gather would load, in a third of the time on a Zen 3.
__m256 table_entries(__m256i i) {
  const __m256 t0 = _mm256_permutevar8x32_ps(_mm256_loadu_ps(kExp2Table), i);
  const __m256 t1 = _mm256_permutevar8x32_ps(_mm256_loadu_ps(kExp2Table + 8), i);
  const __m256 t2 = _mm256_permutevar8x32_ps(_mm256_loadu_ps(kExp2Table + 16), i);
  const __m256 t3 = _mm256_permutevar8x32_ps(_mm256_loadu_ps(kExp2Table + 24), i);
  const __m256 bit3 = _mm256_castsi256_ps(_mm256_slli_epi32(i, 28));
  const __m256 bit4 = _mm256_castsi256_ps(_mm256_slli_epi32(i, 27));
  return _mm256_blendv_ps(_mm256_blendv_ps(t0, t1, bit3), _mm256_blendv_ps(t2, t3, bit3), bit4);
}

// exp_table, lane by lane: the table's entry picked by r's low 5 bits.
// Lanes out of range (d < -86, NaN) compute garbage that the last step masks off.
__m256 exp_table8(__m256 d) {
  const __m256 valid = valid_lanes(d);
  const __m256 t = mul(d, set(46.1662413f));
  const __m256 r = _mm256_round_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m256 f = sub(t, r);
  __m256 p = _mm256_fmadd_ps(f, set(1.69385097e-6f), set(2.34596198e-4f));
  p = _mm256_fmadd_ps(p, f, set(2.16608494e-2f));
  p = _mm256_fmadd_ps(p, f, set(1.0f));
  const __m256i ri = _mm256_cvttps_epi32(r);
  const __m256 table = table_entries(ri);
  const __m256i scale =
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_srai_epi32(ri, 5), _mm256_set1_epi32(127)), 23);
  return _mm256_and_ps(mul(mul(table, p), _mm256_castsi256_ps(scale)), valid);
}

// fold_lanes of kernels.cpp on lanes 0-7 (low) and 8-15 (high): halves added lane by lane,
// 8, then 4, 2 and 1 wide.
float fold_lanes(__m256 low, __m256 high) {
  const __m256 half = add(low, high);
  const __m128 quarter = _mm_add_ps(_mm256_castps256_ps128(half), _mm256_extractf128_ps(half, 1));
  const __m128 eighth = _mm_add_ps(quarter, _mm_movehl_ps(quarter, quarter));
  return _mm_cvtss_f32(_mm_add_ss(eighth, _mm_shuffle_ps(eighth, eighth, 1)));
}

// Sum of exp_fn(x[i] - x_max), lane i % 16 taking element i, then folded. Past the row's
// end a lane adds exp_fn(-inf) = +0, which leaves its (non-negative) sum as it is.
template <__m256 (*exp_fn)(__m256)>
float lane_sum(const float* x, int32_t n, float x_max) {
  const __m256 top = set(x_max);
  __m256 low = _mm256_setzero_ps(), high = _mm256_setzero_ps();
  for (int32_t i = 0; i < n; i += 16) {
    low = add(low, exp_fn(sub(load_or_neg_inf(x + i, n - i), top)));
    if (i + 8 < n) high = add(high, exp_fn(sub(load_or_neg_inf(x + i + 8, n - i - 8), top)));
  }
  return fold_lanes(low, high);
}

// The largest of v's eight lanes (none NaN).
float lanes_max(__m256 v) {
  __m128 h = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  h = _mm_max_ps(h, _mm_movehl_ps(h, h));
  return _mm_cvtss_f32(_mm_max_ss(h, _mm_movehdup_ps(h)));
}

// The largest value, NaN ignored (vmaxps returns its second operand when either is NaN),
// -inf if none; `scale` first multiplies each value and stores it back, unless it is 1.
float row_max(float* z, int32_t n, float scale) {
  __m256 acc[4] = {set(kNegInf), set(kNegInf), set(kNegInf), set(kNegInf)};
  const bool scaled = scale != 1.0f;
  int32_t i = 0;
  for (; i + 32 <= n; i += 32) {
    for (int a = 0; a < 4; ++a) {
      __m256 v = _mm256_loadu_ps(z + i + 8 * a);
      if (scaled) {
        v = mul(v, set(scale));
        _mm256_storeu_ps(z + i + 8 * a, v);
      }
      acc[a] = _mm256_max_ps(v, acc[a]);
    }
  }
  for (; i < n; ++i) {
    if (scaled) z[i] = z[i] * scale;
    acc[0] = _mm256_max_ps(_mm256_set1_ps(z[i]), acc[0]);
  }
  return lanes_max(_mm256_max_ps(_mm256_max_ps(acc[0], acc[1]), _mm256_max_ps(acc[2], acc[3])));
}

// log_approx, lane by lane (its branch a blend).
__m256 log_approx8(__m256 x) {
  const __m256i bits = _mm256_castps_si256(x);
  __m256i e = _mm256_sub_epi32(_mm256_srli_epi32(bits, 23), _mm256_set1_epi32(127));
  __m256 m = _mm256_castsi256_ps(_mm256_or_si256(
      _mm256_and_si256(bits, _mm256_set1_epi32(0x7fffff)), _mm256_set1_epi32(0x3f800000)));
  const __m256 big = _mm256_cmp_ps(m, set(1.41421356f), _CMP_GT_OQ);
  m = _mm256_blendv_ps(m, mul(m, set(0.5f)), big);
  e = _mm256_sub_epi32(e, _mm256_castps_si256(big));  // a set mask is -1
  const __m256 fe = _mm256_cvtepi32_ps(e);
  const __m256 f = sub(m, set(1.0f));
  const __m256 f2 = mul(f, f);
  __m256 y = set(7.0376836292e-2f);
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
  __m256 r = add(f, y);
  return add(r, mul(fe, set(0.693359375f)));
}

__m256 negate(__m256 a) { return _mm256_xor_ps(a, set(-0.0f)); }

__m256 gumbel_from_bits8(__m256i bits) {
  const __m256 k = _mm256_cvtepi32_ps(_mm256_srli_epi32(bits, 9));
  const __m256 u = add(mul(k, set(0x1p-23f)), set(0x1p-24f));
  return negate(log_approx8(negate(log_approx8(u))));
}

// noise_ceiling, lane by lane.
__m256 noise_ceiling8(__m256i bits) {
  const __m256i x = _mm256_sub_epi32(_mm256_set1_epi32(0xffffff),
                                     _mm256_slli_epi32(_mm256_srli_epi32(bits, 9), 1));
  const __m256i exponent = _mm256_srli_epi32(_mm256_castps_si256(_mm256_cvtepi32_ps(x)), 23);
  const __m256 octaves = _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_set1_epi32(151), exponent));
  return add(mul(octaves, set(0.693147182f)), set(1e-3f));
}

// (hi, lo) halves of the 32x32-bit products a * m, lane by lane.
void mul_hi_lo(__m256i a, __m256i m, __m256i* hi, __m256i* lo) {
  const __m256i even = _mm256_mul_epu32(a, m);
  const __m256i odd = _mm256_mul_epu32(_mm256_srli_epi64(a, 32), m);
  *hi = _mm256_blend_epi32(_mm256_srli_epi64(even, 32), odd, 0xAA);
  *lo = _mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xAA);
}

// Eight Philox4x32-10 blocks at once (philox.h): lane l of c[w] is word w of block l.
void philox8(__m256i c[4], uint64_t seed) {
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  const __m256i mul0 = _mm256_set1_epi32(static_cast<int>(philox::kMul0));
  const __m256i mul1 = _mm256_set1_epi32(static_cast<int>(philox::kMul1));
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += philox::kWeyl0;
      k1 += philox::kWeyl1;
    }
    __m256i hi0, lo0, hi1, lo1;
    mul_hi_lo(c[0], mul0, &hi0, &lo0);
    mul_hi_lo(c[2], mul1, &hi1, &lo1);
    c[0] = _mm256_xor_si256(_mm256_xor_si256(hi1, c[1]), _mm256_set1_epi32(static_cast<int>(k0)));
    c[1] = lo1;
    c[2] = _mm256_xor_si256(_mm256_xor_si256(hi0, c[3]), _mm256_set1_epi32(static_cast<int>(k1)));
    c[3] = lo0;
  }
}

// The noise bits of ids base .. base + 31 (base a multiple of 4) in id order, four vectors:
// the eight Philox blocks of groups base / 4 + l, transposed (block 2v + j / 4 word j % 4 is
// lane j of vector v).
void noise_bits32(int32_t base, uint64_t seed, int64_t position, __m256i (&out)[4]) {
  const auto pos = static_cast<uint64_t>(position);
  __m256i c[4] = {
      _mm256_add_epi32(_mm256_set1_epi32(base >> 2), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)),
      _mm256_setzero_si256(), _mm256_set1_epi32(static_cast<int>(static_cast<uint32_t>(pos))),
      _mm256_set1_epi32(static_cast<int>(static_cast<uint32_t>(pos >> 32)))};
  philox8(c, seed);
  const __m256i t0 = _mm256_unpacklo_epi32(c[0], c[1]), t1 = _mm256_unpackhi_epi32(c[0], c[1]);
  const __m256i t2 = _mm256_unpacklo_epi32(c[2], c[3]), t3 = _mm256_unpackhi_epi32(c[2], c[3]);
  // u_b: blocks b (low half) and b + 4 (high half), words 0-3 each.
  const __m256i u0 = _mm256_unpacklo_epi64(t0, t2), u1 = _mm256_unpackhi_epi64(t0, t2);
  const __m256i u2 = _mm256_unpacklo_epi64(t1, t3), u3 = _mm256_unpackhi_epi64(t1, t3);
  out[0] = _mm256_permute2x128_si256(u0, u1, 0x20);
  out[1] = _mm256_permute2x128_si256(u2, u3, 0x20);
  out[2] = _mm256_permute2x128_si256(u0, u1, 0x31);
  out[3] = _mm256_permute2x128_si256(u2, u3, 0x31);
}

}  // namespace

float scale_max(float* z, int32_t n, float inv_t) { return row_max(z, n, inv_t) + 0.0f; }

int32_t argmax(const float* x, int32_t n) {
  const float top = row_max(const_cast<float*>(x), n, 1.0f);  // scale 1: nothing is written
  if (top == kNegInf) return -1;
  int32_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const int hit = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x + i), set(top), _CMP_EQ_OQ));
    if (hit != 0) return i + __builtin_ctz(static_cast<unsigned>(hit));
  }
  for (; i < n; ++i) {
    if (x[i] == top) return i;
  }
  return -1;  // unreachable: top came from x
}

// The portable scan_top's list, 32 entries at a time: four compares with the list's last
// (not a max of the four: vmaxps would let a NaN hide a larger lane); past the first few
// hundred entries almost none beats it. Entries that do go in in id order, through the
// same top_insert.
void scan_top(const float* x, int32_t n, int32_t k, int32_t first_id, TopList* out) {
  auto bar = [&] { return set(out->count < k ? kNegInf : out->value[k - 1]); };
  auto visit = [&](int32_t i, __m256 v) {
    int hit = _mm256_movemask_ps(_mm256_cmp_ps(v, bar(), _CMP_GT_OQ));
    while (hit != 0) {
      const int lane = __builtin_ctz(static_cast<unsigned>(hit));
      hit &= hit - 1;
      top_insert(out, k, x[i + lane], first_id + i + lane);
    }
  };
  int32_t i = 0;
  for (; i + 32 <= n; i += 32) {
    __m256 v[4];
    int any = 0;
    const __m256 now = bar();
    for (int a = 0; a < 4; ++a) {
      v[a] = _mm256_loadu_ps(x + i + 8 * a);
      any |= _mm256_movemask_ps(_mm256_cmp_ps(v[a], now, _CMP_GT_OQ));
    }
    if (any == 0) continue;
    for (int a = 0; a < 4; ++a) visit(i + 8 * a, v[a]);
  }
  for (; i < n; i += 8) visit(i, load_or_neg_inf(x + i, n - i));
}

// The portable gumbel_argmax's pruned pass, 32 ids at a time: a running best B (seeded with
// the top token's value) only rises; ids whose z + kNoiseCeiling all fall short of B skip
// Philox, lanes whose z + noise_ceiling falls short skip the logs. Of the lanes that beat
// B, the largest value wins, then the lowest id: what the portable pass, id by id, keeps.
int32_t gumbel_argmax(const float* z, int32_t n, int32_t top, uint64_t seed, int64_t position) {
  GumbelBest best = gumbel_start(z, top >= -1 ? top : argmax(z, n), nullptr, seed, position);
  if (best.index < 0) return -1;
  for (int32_t base = 0; base < n; base += 32) {
    __m256 zv[4];
    __m256 block_max = set(kNegInf);
    for (int v = 0; v < 4; ++v) {
      const int32_t first = base + 8 * v;
      zv[v] = first < n ? load_or_neg_inf(z + first, n - first) : set(kNegInf);
      block_max = _mm256_max_ps(zv[v], block_max);
    }
    const __m256 reach =
        _mm256_cmp_ps(add(block_max, set(kNoiseCeiling)), set(best.value), _CMP_GE_OQ);
    if (_mm256_movemask_ps(reach) == 0) continue;
    __m256i bits[4];
    noise_bits32(base, seed, position, bits);
    for (int v = 0; v < 4; ++v) {
      const __m256 now = set(best.value);
      const __m256 open = _mm256_cmp_ps(add(zv[v], noise_ceiling8(bits[v])), now, _CMP_GE_OQ);
      if (_mm256_movemask_ps(open) == 0) continue;
      alignas(32) float value[8];
      _mm256_store_ps(value, add(zv[v], gumbel_from_bits8(bits[v])));
      for (int lane = 0, mask = _mm256_movemask_ps(open); mask != 0; ++lane, mask >>= 1) {
        const int32_t id = base + 8 * v + lane;
        if ((mask & 1) == 0) continue;
        if (value[lane] > best.value || (value[lane] == best.value && id < best.index)) {
          best.value = value[lane];
          best.index = id;
        }
      }
    }
  }
  return best.index;
}

// As the AVX-512 file's: a panel's eight vectors, entries i % 16 < 8 in `low`, the rest in
// `high`.
void panel_partials(const float* x, int32_t n, float* max, float* sum) {
  for (int32_t p = 0, i = 0; i < n; ++p, i += kLogitPanel) {
    __m256 v[8];
    __m256 best = set(kNegInf);
    for (int a = 0; a < 8; ++a) {
      const int32_t at = i + 8 * a;
      v[a] = at < n ? load_or_neg_inf(x + at, n - at) : set(kNegInf);
      best = _mm256_max_ps(v[a], best);
    }
    const float top = lanes_max(best) + 0.0f;
    __m256 low = _mm256_setzero_ps(), high = _mm256_setzero_ps();
    if (top > kNegInf && top < -kNegInf) {
      const __m256 base = set(top);
      for (int a = 0; a < 8; ++a) {
        __m256& lanes = a % 2 == 0 ? low : high;
        lanes = add(lanes, exp_table8(sub(v[a], base)));
      }
    }
    max[p] = top;
    sum[p] = fold_lanes(low, high);
  }
}

float partials_z(const float* max, const float* sum, int32_t n_panels, float top) {
  const __m256 base = set(top);
  __m256 low = _mm256_setzero_ps(), high = _mm256_setzero_ps();
  for (int32_t p = 0; p < n_panels; p += 8) {
    const int32_t left = n_panels - p;
    const __m256 s =
        left >= 8 ? _mm256_loadu_ps(sum + p) : _mm256_maskload_ps(sum + p, tail_mask(left));
    __m256& lanes = p % 16 == 0 ? low : high;
    lanes = add(lanes, mul(s, exp_table8(sub(load_or_neg_inf(max + p, left), base))));
  }
  return fold_lanes(low, high);
}
float z_sum(const float* z, int32_t n, float z_max) { return lane_sum<exp_shifted8>(z, n, z_max); }

// The ladder's estimates (a hint, kernels.h): each group of 16 entries as two vectors; a
// group the tail sampling skips and that holds no head entry costs one compare.
void ladder(const float* z, int32_t n, float z_max, Ladder* out) {
  const __m256 top = set(z_max);
  const int32_t stride = n > kLadderFullRows ? 8 : 1;
  __m256 mass[kRungs];
  for (auto& m : mass) m = _mm256_setzero_ps();
  for (int32_t i = 0, group = 0; i < n; i += 16, ++group) {
    const bool sampled = group % stride == 0;
    for (int half = 0; half < 2; ++half) {
      const int32_t first = i + 8 * half;
      if (first >= n) break;
      const __m256 d = sub(load_or_neg_inf(z + first, n - first), top);
      const __m256 head = _mm256_cmp_ps(d, set(-kLadderHead), _CMP_GE_OQ);
      if (!sampled && _mm256_movemask_ps(head) == 0) continue;
      const __m256 weight = sampled
                                ? _mm256_blendv_ps(set(static_cast<float>(stride)), set(1.0f), head)
                                : _mm256_and_ps(head, set(1.0f));
      const __m256 weighed = mul(exp_shifted8(d), weight);
      for (int r = 0; r < kRungs; ++r) {
        const __m256 in = _mm256_cmp_ps(d, set(-kRungDepth[r]), _CMP_GE_OQ);
        mass[r] = add(mass[r], _mm256_and_ps(weighed, in));
      }
    }
  }
  for (int r = 0; r < kRungs; ++r) {
    __m128 h = _mm_add_ps(_mm256_castps256_ps128(mass[r]), _mm256_extractf128_ps(mass[r], 1));
    h = _mm_add_ps(h, _mm_movehl_ps(h, h));
    out->mass[r] = _mm_cvtss_f32(_mm_add_ss(h, _mm_movehdup_ps(h)));
  }
}

// The portable collect's entries, in id order: a compare per 8, then the lanes in.
int32_t collect(const float* z, int32_t n, float z_max, float threshold, float* out_z,
                int32_t* out_id) {
  const __m256 top = set(z_max), floor = set(threshold);
  int32_t count = 0;
  for (int32_t i = 0; i < n; i += 8) {
    const __m256 v = load_or_neg_inf(z + i, n - i);
    int in = _mm256_movemask_ps(_mm256_cmp_ps(sub(v, top), floor, _CMP_GE_OQ));
    while (in != 0) {
      const int lane = __builtin_ctz(static_cast<unsigned>(in));
      in &= in - 1;
      out_z[count] = z[i + lane];
      out_id[count] = i + lane;
      ++count;
    }
  }
  return count;
}

void exp_shifted_row(const float* z, int32_t n, float z_max, float* out) {
  const __m256 top = set(z_max);
  int32_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i, exp_shifted8(sub(_mm256_loadu_ps(z + i), top)));
  if (i < n) {
    const __m256i mask = tail_mask(n - i);
    _mm256_maskstore_ps(out + i, mask, exp_shifted8(sub(load_or_neg_inf(z + i, n - i), top)));
  }
}

}  // namespace tandem::sampler_kernels::avx2_impl
