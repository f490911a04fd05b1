// AVX2 integer sums for the quantized matmul (runner/kernels/quant_matmul.h): 32 weights
// times 32 activations per vpmaddubsw (|w| unsigned times x with w's sign, so any int8
// weight and activations in [-127, 127] never saturate), pairs summed by vpmaddwd, and
// eight 16-value groups folded into one vector by three vphaddd.
#include <immintrin.h>

#include "runner/kernels/quant_matmul.h"

namespace tandem::kernels::detail {
namespace {

struct Avx2Sums {
  // Eight int32: lanes 0-3 sum the first 16 products, lanes 4-7 the next 16.
  static __m256i products(const int8_t* w, const int8_t* x) {
    const __m256i wv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w));
    const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x));
    const __m256i pairs = _mm256_maddubs_epi16(_mm256_abs_epi8(wv), _mm256_sign_epi8(xv, wv));
    return _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
  }
  static void group_sums(const int8_t* w, const int8_t* x, int64_t n, int32_t* out) {
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    int64_t i = 0;
    for (; i + 128 <= n; i += 128) {
      const __m256i a = _mm256_hadd_epi32(products(w + i, x + i), products(w + i + 32, x + i + 32));
      const __m256i b =
          _mm256_hadd_epi32(products(w + i + 64, x + i + 64), products(w + i + 96, x + i + 96));
      // hadd(a, b) holds groups 0,2,4,6 | 1,3,5,7.
      const __m256i sums = _mm256_permutevar8x32_epi32(_mm256_hadd_epi32(a, b), order);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i / 16), sums);
    }
    group_sums_scalar(w + i, x + i, n - i, out + i / 16);
  }
};

}  // namespace

QuantLoop avx2_quant_loop() { return &quant_loop<Avx2Sums>; }

}  // namespace tandem::kernels::detail
