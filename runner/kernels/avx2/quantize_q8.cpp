// ggml's activation quantizers (quantize_q8.cpp) on 8-float vectors, for the CPUs whose
// kernels run AVX2: the same IEEE operations on each value as the portable form (a
// multiply, a truncation or round-to-even conversion, compares), the maxima and sums exact
// whatever their order, so the bits are the portable form's
// (QuantMatmul.VectorQuantizersEqualThePortableOnes). avx512/quantize_q8.cpp is the same on
// 16-float vectors; the portable form rounds with a branch per value that random
// activations mispredict half the time, 4.6% of a Q4_K_M decode step on a Zen 3.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "runner/kernels/quantize_q8.h"

// The block quantizers are inlined into the loop over blocks, so that one block's long
// dependency chain (maximum, divide, reciprocal, sums) overlaps the next block's.
#define TANDEM_Q8_INLINE __attribute__((always_inline)) inline

namespace tandem::kernels::detail {
namespace {

// vcvtps2ph rounds to nearest even, as half_from_float does (Kernels.NarrowingToF16AndBf16...).
float f16_round(float v) {
  return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtps_ph(_mm_set_ss(v), _MM_FROUND_TO_NEAREST_INT)));
}

__m256 magnitude(__m256 v) {
  return _mm256_and_ps(v, _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff)));
}

// The largest |x| of n vectors' values that are not NaN (0 if none), as the portable loop's
// `a > amax ? a : amax` from 0 finds it: vmaxps returns its second operand where either
// is NaN, so no NaN reaches m, and the reduction's order does not matter.
float largest_magnitude(const __m256* v, int n) {
  __m256 m = _mm256_setzero_ps();
  for (int i = 0; i < n; ++i) m = _mm256_max_ps(magnitude(v[i]), m);
  __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
  h = _mm_max_ps(h, _mm_movehl_ps(h, h));
  h = _mm_max_ss(h, _mm_movehdup_ps(h));
  return _mm_cvtss_f32(h);
}

// Four vectors of int32 to their 32 low bytes, in order: a truncation, as AVX-512's
// vpmovdb and the portable form's int8_t conversion (NaN's INT_MIN becomes 0). Each value
// masked to 0..255 passes both unsigned-saturating packs unchanged; the packs interleave
// 128-bit halves, which the dword permute puts back in order.
__m256i low_bytes(const __m256i (&n)[4]) {
  const __m256i mask = _mm256_set1_epi32(0xff);
  const __m256i p01 =
      _mm256_packus_epi32(_mm256_and_si256(n[0], mask), _mm256_and_si256(n[1], mask));
  const __m256i p23 =
      _mm256_packus_epi32(_mm256_and_si256(n[2], mask), _mm256_and_si256(n[3], mask));
  return _mm256_permutevar8x32_epi32(_mm256_packus_epi16(p01, p23),
                                     _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

// The sums of 32 int8 values, bytes 0-7, 8-15, 16-23 and 24-31, in 64-bit lanes: vpsadbw
// sums them unsigned after the sign bit is flipped (each + 128), and 8 * 128 comes off.
__m256i eight_byte_sums(__m256i bytes) {
  const __m256i unsigned_bytes = _mm256_xor_si256(bytes, _mm256_set1_epi8(static_cast<char>(0x80)));
  return _mm256_sub_epi64(_mm256_sad_epu8(unsigned_bytes, _mm256_setzero_si256()),
                          _mm256_set1_epi64x(8 * 128));
}

int32_t lane64(__m256i v, int i) {
  alignas(32) int64_t lanes[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), v);
  return static_cast<int32_t>(lanes[i]);
}

TANDEM_Q8_INLINE void q8_legacy_block(const float* x, int8_t* q, float* d_out, float* s_out,
                                      int32_t* qsum) {
  const __m256 v[4] = {_mm256_loadu_ps(x), _mm256_loadu_ps(x + 8), _mm256_loadu_ps(x + 16),
                       _mm256_loadu_ps(x + 24)};
  const float d = largest_magnitude(v, 4) / 127.f;
  const float id = d != 0.f ? 1.f / d : 0.f;
  __m256i n[4];
  for (int i = 0; i < 4; ++i) {
    // roundf: truncate, then one away from zero where the dropped part is a half or more
    // (a NaN's compares are false, and its INT_MIN truncates to 0).
    const __m256 scaled = _mm256_mul_ps(v[i], _mm256_set1_ps(id));
    const __m256 t = _mm256_round_ps(scaled, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __m256 frac = _mm256_sub_ps(scaled, t);
    const __m256 up =
        _mm256_and_ps(_mm256_cmp_ps(frac, _mm256_set1_ps(0.5f), _CMP_GE_OQ), _mm256_set1_ps(1.f));
    const __m256 down =
        _mm256_and_ps(_mm256_cmp_ps(frac, _mm256_set1_ps(-0.5f), _CMP_LE_OQ), _mm256_set1_ps(1.f));
    n[i] = _mm256_cvttps_epi32(_mm256_sub_ps(_mm256_add_ps(t, up), down));
  }
  const __m256i bytes = low_bytes(n);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(q), bytes);
  const __m256i sums = eight_byte_sums(bytes);
  const int32_t total = lane64(sums, 0) + lane64(sums, 1) + lane64(sums, 2) + lane64(sums, 3);
  *d_out = f16_round(d);
  *qsum = total;
  if (s_out != nullptr) *s_out = f16_round(static_cast<float>(total) * d);
}

TANDEM_Q8_INLINE void q8_k_block(const float* x, int8_t* q, float* d_out, int32_t* bsums) {
  __m256 v[32];
  for (int i = 0; i < 32; ++i) v[i] = _mm256_loadu_ps(x + 8 * i);
  const float amax = largest_magnitude(v, 32);
  if (amax == 0.f) {
    std::memset(q, 0, 256);
    std::memset(bsums, 0, 16 * sizeof(int32_t));
    *d_out = 0.f;
    return;
  }
  // The first value of that magnitude, as the portable loop's strict `>` keeps it.
  float max = 0.f;
  for (int i = 0; i < 32; ++i) {
    const int at =
        _mm256_movemask_ps(_mm256_cmp_ps(magnitude(v[i]), _mm256_set1_ps(amax), _CMP_EQ_OQ));
    if (at != 0) {
      max = x[8 * i + __builtin_ctz(static_cast<unsigned>(at))];
      break;
    }
  }
  const float iscale = -127.f / max;
  for (int i = 0; i < 32; i += 4) {
    // nearest_int is round half to even (the default rounding of vcvtps2dq); NaN gives
    // INT_MIN, which min keeps and the truncation turns into 0, as nearest_int's NaN gives 0.
    __m256i n[4];
    for (int j = 0; j < 4; ++j) {
      n[j] = _mm256_min_epi32(_mm256_cvtps_epi32(_mm256_mul_ps(_mm256_set1_ps(iscale), v[i + j])),
                              _mm256_set1_epi32(127));
    }
    const __m256i bytes = low_bytes(n);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + 8 * i), bytes);
    const __m256i sums = eight_byte_sums(bytes);  // groups of 16: lanes 0 + 1, then 2 + 3
    bsums[i / 2] = lane64(sums, 0) + lane64(sums, 1);
    bsums[i / 2 + 1] = lane64(sums, 2) + lane64(sums, 3);
  }
  *d_out = 1.f / iscale;
}

}  // namespace

void avx2_quantize_blocks(ActFormat format, const float* x, int64_t begin, int64_t end,
                          QuantizedActivations& out) {
  // With the lane layout, that alone (quantize_rows; avx512/quantize_q8.cpp says why).
  quantize_units<&q8_legacy_block, &q8_k_block>(
      format, x, begin, end, out,
      [&](int64_t m, int64_t b, const int8_t* q, const BlockScales& sc) {
        block_to_lanes(format, m, b, q, sc, out);
      });
}

}  // namespace tandem::kernels::detail
