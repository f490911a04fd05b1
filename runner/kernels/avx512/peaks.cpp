// AVX-512 loops for the machine ceilings (runner/kernels/peaks.h). The VNNI loop has its
// own target attribute: the folder's flags do not include AVX512-VNNI, and the caller
// runs it only where the CPU has it.
#include <immintrin.h>

#include "runner/kernels/peaks.h"

namespace tandem::kernels::detail {
namespace {

constexpr int kChains = 12;  // enough independent operations to cover latency x throughput

// The total's lanes, summed through memory: enough to keep the work alive (GCC 12 warns
// falsely inside the reduce and cast intrinsics).
template <class Vec, class Lane>
float lane_sum(Vec v) {
  alignas(64) Lane lanes[64 / sizeof(Lane)];
  static_assert(sizeof(lanes) == sizeof(Vec));
  __builtin_memcpy(lanes, &v, sizeof v);
  float sum = 0;
  for (Lane x : lanes) sum += static_cast<float>(x);
  return sum;
}

}  // namespace

int64_t peak_fma_avx512(int64_t iterations, float* sink) {
  __m512 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm512_set1_ps(static_cast<float>(c));
  const __m512 a = _mm512_set1_ps(0.999f), b = _mm512_set1_ps(1e-3f);
  for (int64_t i = 0; i < iterations; ++i) {
    for (int c = 0; c < kChains; ++c) acc[c] = _mm512_fmadd_ps(acc[c], a, b);
  }
  __m512 total = acc[0];
  for (int c = 1; c < kChains; ++c) total = _mm512_add_ps(total, acc[c]);
  *sink += lane_sum<__m512, float>(total);
  return iterations * kChains * 16 * 2;
}

int64_t peak_bf16_dot_avx512(int64_t iterations, float* sink) {
  __m512 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm512_setzero_ps();
  const __m512bh a = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-3f), _mm512_set1_ps(2e-3f));
  const __m512bh b = _mm512_cvtne2ps_pbh(_mm512_set1_ps(0.5f), _mm512_set1_ps(0.25f));
  for (int64_t i = 0; i < iterations; ++i) {
    for (int c = 0; c < kChains; ++c) acc[c] = _mm512_dpbf16_ps(acc[c], a, b);
  }
  __m512 total = acc[0];
  for (int c = 1; c < kChains; ++c) total = _mm512_add_ps(total, acc[c]);
  *sink += lane_sum<__m512, float>(total);
  return iterations * kChains * 16 * 4;  // per lane: two products, two adds
}

__attribute__((target("avx512vnni"))) int64_t peak_int8_dot_avx512(int64_t iterations,
                                                                   float* sink) {
  __m512i acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm512_setzero_si512();
  const __m512i a = _mm512_set1_epi8(3), b = _mm512_set1_epi8(-2);
  for (int64_t i = 0; i < iterations; ++i) {
    for (int c = 0; c < kChains; ++c) acc[c] = _mm512_dpbusd_epi32(acc[c], a, b);
  }
  __m512i total = acc[0];
  for (int c = 1; c < kChains; ++c) total = _mm512_add_epi32(total, acc[c]);
  *sink += lane_sum<__m512i, int32_t>(total);
  return iterations * kChains * 16 * 8;  // per lane: four products, four adds
}

}  // namespace tandem::kernels::detail
