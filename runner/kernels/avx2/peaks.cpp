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
