// AVX2 loops for the machine ceilings (runner/kernels/peaks.h).
#include <immintrin.h>

#include "runner/kernels/peaks.h"

namespace tandem::kernels::detail {

int64_t peak_fma_avx2(int64_t iterations, float* sink) {
  constexpr int kChains = 12;  // enough independent FMAs to cover latency x throughput
  __m256 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm256_set1_ps(static_cast<float>(c));
  const __m256 a = _mm256_set1_ps(0.999f), b = _mm256_set1_ps(1e-3f);
  for (int64_t i = 0; i < iterations; ++i) {
    for (int c = 0; c < kChains; ++c) acc[c] = _mm256_fmadd_ps(acc[c], a, b);
  }
  __m256 total = acc[0];
  for (int c = 1; c < kChains; ++c) total = _mm256_add_ps(total, acc[c]);
  *sink += _mm256_cvtss_f32(total);
  return iterations * kChains * 8 * 2;
}

// The quantized kernels' AVX2 step (avx2/quant_matmul.cpp): 32 unsigned-by-signed byte
// products summed in pairs (vpmaddubsw), the pairs into int32 (vpmaddwd by ones), added to
// the running sums: 32 products and 32 adds per step, as vpdpbusd's four of each per lane.
int64_t peak_int8_dot_avx2(int64_t iterations, float* sink) {
  // Four chains whose products do not depend on their sums keep the multiply pipes busy. The
  // empty asm makes the operands new every round (so the products cannot be hoisted out of
  // the loop) without moving them; named variables, as arrays there went through memory.
  const __m256i b = _mm256_set1_epi8(-2), ones = _mm256_set1_epi16(1);
  __m256i u0 = _mm256_set1_epi8(1), u1 = _mm256_set1_epi8(2), u2 = _mm256_set1_epi8(3),
          u3 = _mm256_set1_epi8(4);
  __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
  auto step = [&](__m256i acc, __m256i u) {
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, b), ones));
  };
  for (int64_t i = 0; i < iterations; ++i) {
    __asm__ volatile("" : "+x"(u0), "+x"(u1), "+x"(u2), "+x"(u3));
    a0 = step(a0, u0);
    a1 = step(a1, u1);
    a2 = step(a2, u2);
    a3 = step(a3, u3);
  }
  const __m256i total = _mm256_add_epi32(_mm256_add_epi32(a0, a1), _mm256_add_epi32(a2, a3));
  *sink += static_cast<float>(_mm256_extract_epi32(total, 0));
  return iterations * 4 * 32 * 2;
}

uint64_t read_sum_avx2(const uint8_t* data, int64_t n) {
  __m256i s0 = _mm256_setzero_si256(), s1 = _mm256_setzero_si256();
  for (int64_t i = 0; i < n; i += 64) {
    s0 = _mm256_add_epi64(s0, _mm256_load_si256(reinterpret_cast<const __m256i*>(data + i)));
    s1 = _mm256_add_epi64(s1, _mm256_load_si256(reinterpret_cast<const __m256i*>(data + i + 32)));
  }
  const __m256i s = _mm256_add_epi64(s0, s1);
  return static_cast<uint64_t>(_mm256_extract_epi64(s, 0) + _mm256_extract_epi64(s, 1) +
                               _mm256_extract_epi64(s, 2) + _mm256_extract_epi64(s, 3));
}

}  // namespace tandem::kernels::detail
