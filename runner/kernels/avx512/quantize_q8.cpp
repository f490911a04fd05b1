// ggml's activation quantizers (quantize_q8.cpp) on 16-float vectors: the same IEEE
// operations on each value (a multiply, a truncation or round-to-even conversion, compares),
// the maxima and sums exact whatever their order, so the bits are the portable form's
// (QuantMatmul.VectorQuantizersEqualThePortableOnes). The portable form rounds with a branch
// per value that random activations mispredict half the time; at 32 rows that was a quarter
// of a Q4_K_M decode step.
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

// The largest |x| of n floats that are not NaN (0 if none), as the portable loop's
// `a > amax ? a : amax` from 0 finds it: vmaxps returns its second operand where either
// is NaN.
float largest_magnitude(const __m512* v, int n) {
  __m512 m = _mm512_setzero_ps();
  for (int i = 0; i < n; ++i) m = _mm512_max_ps(_mm512_abs_ps(v[i]), m);
  return _mm512_reduce_max_ps(m);
}

// 16 int32 to int8 (NaN's INT_MIN truncates to 0, as the portable form's NaN gives 0),
// stored; returns them sign-extended again for the sums.
__m512i store_bytes(__m512i v, int8_t* q) {
  const __m128i bytes = _mm512_cvtepi32_epi8(v);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(q), bytes);
  return _mm512_cvtepi8_epi32(bytes);
}

// A row's values k..k+3 into lane `m` of the lane layout (ActRows::lanes), for the `count`
// values (a multiple of 16) at q.
void bytes_to_lanes(const int8_t* q, int count, uint8_t* lane_q, int64_t lanes, int64_t m,
                    int64_t k) {
  for (int i = 0; i < count; i += 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q + i));
    uint8_t* dst = lane_q + ((k + i) / 4 * lanes + m) * 4;
    const int64_t step = lanes * 4;
    _mm_storeu_si32(dst, v);
    _mm_storeu_si32(dst + step, _mm_shuffle_epi32(v, 1));
    _mm_storeu_si32(dst + 2 * step, _mm_shuffle_epi32(v, 2));
    _mm_storeu_si32(dst + 3 * step, _mm_shuffle_epi32(v, 3));
  }
}

TANDEM_Q8_INLINE void q8_legacy_block(const float* x, int8_t* q, float* d_out, float* s_out,
                                      int32_t* qsum) {
  const __m512 v[2] = {_mm512_loadu_ps(x), _mm512_loadu_ps(x + 16)};
  const float d = largest_magnitude(v, 2) / 127.f;
  const float id = d != 0.f ? 1.f / d : 0.f;
  __m512i sum = _mm512_setzero_si512();
  for (int i = 0; i < 2; ++i) {
    // roundf: truncate, then one away from zero where the dropped part is a half or more.
    const __m512 scaled = _mm512_mul_ps(v[i], _mm512_set1_ps(id));
    const __m512 t = _mm512_roundscale_ps(scaled, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __m512 frac = _mm512_sub_ps(scaled, t);
    __m512 r = _mm512_mask_add_ps(t, _mm512_cmp_ps_mask(frac, _mm512_set1_ps(0.5f), _CMP_GE_OQ), t,
                                  _mm512_set1_ps(1.f));
    r = _mm512_mask_sub_ps(r, _mm512_cmp_ps_mask(frac, _mm512_set1_ps(-0.5f), _CMP_LE_OQ), r,
                           _mm512_set1_ps(1.f));
    sum = _mm512_add_epi32(sum, store_bytes(_mm512_cvttps_epi32(r), q + 16 * i));
  }
  const int32_t total = _mm512_reduce_add_epi32(sum);
  *d_out = f16_round(d);
  *qsum = total;
  if (s_out != nullptr) *s_out = f16_round(static_cast<float>(total) * d);
}

TANDEM_Q8_INLINE void q8_k_block(const float* x, int8_t* q, float* d_out, int32_t* bsums) {
  __m512 v[16];
  for (int i = 0; i < 16; ++i) v[i] = _mm512_loadu_ps(x + 16 * i);
  const float amax = largest_magnitude(v, 16);
  if (amax == 0.f) {
    std::memset(q, 0, 256);
    std::memset(bsums, 0, 16 * sizeof(int32_t));
    *d_out = 0.f;
    return;
  }
  // The first value of that magnitude, as the portable loop's strict `>` keeps it.
  float max = 0.f;
  for (int i = 0; i < 16; ++i) {
    const __mmask16 at = _mm512_cmp_ps_mask(_mm512_abs_ps(v[i]), _mm512_set1_ps(amax), _CMP_EQ_OQ);
    if (at != 0) {
      max = x[16 * i + __builtin_ctz(at)];
      break;
    }
  }
  const float iscale = -127.f / max;
  for (int i = 0; i < 16; ++i) {
    // nearest_int is round half to even (the default rounding of vcvtps2dq); NaN gives
    // INT_MIN, which min keeps and the narrowing turns into 0, as nearest_int's NaN gives 0.
    const __m512i n = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_set1_ps(iscale), v[i]));
    bsums[i] = _mm512_reduce_add_epi32(
        store_bytes(_mm512_min_epi32(n, _mm512_set1_epi32(127)), q + 16 * i));
  }
  *d_out = 1.f / iscale;
}

}  // namespace

void avx512_quantize_blocks(ActFormat format, const float* x, int64_t begin, int64_t end,
                            QuantizedActivations& out) {
  // Where the batch kernels read the lane layout, it alone is written: each block is
  // quantized into a scratch block and registers, then spread across its row's lanes. Writing
  // the row-major arrays as well cost most of the time: their blocks lie a row apart, in
  // lines the other thread wrote last time (which thread takes which chunk changes from call
  // to call), so nearly every block paid for lines fetched from the other core, and an
  // out-of-line call with a 64-bit division per block copied the scales over; a 32-row Q5_0
  // step spent 31% of its tasks' time preparing activations, 255 TSC cycles a block against
  // 58 now (docs/performance.md, 2026-11-29).
  const ActRows& v = out.view;
  const int block = act_block(format);
  quantize_units<&q8_legacy_block, &q8_k_block>(
      format, x, begin, end, out,
      [&](int64_t m, int64_t b, const int8_t* q, const BlockScales& sc) {
        bytes_to_lanes(q, block, out.lane_q, v.lanes, m, b * block);
        lane_block_values(format, m, b, sc, out);
      });
}

}  // namespace tandem::kernels::detail
