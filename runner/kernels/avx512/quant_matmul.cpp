// AVX-512 VNNI integer sums for the quantized matmul (runner/kernels/quant_matmul.h): 64
// products per vpdpbusd (|w| unsigned times x with w's sign), sixteen 16-value groups
// folded into one vector by two rounds of unpack-and-add and one permutation. Compiled
// with -mavx512vnni and called only where the CPU has it (kernels.cpp).
#include <immintrin.h>

#include "runner/kernels/quant_matmul.h"

namespace tandem::kernels::detail {
namespace {

struct VnniSums {
  // Sixteen int32: 128-bit lane k holds the four partial sums of group k of these 64 values.
  static __m512i products(const int8_t* w, const int8_t* x) {
    const __m512i wv = _mm512_loadu_si512(w);
    const __m512i xv = _mm512_loadu_si512(x);
    const __m512i signed_x =
        _mm512_mask_sub_epi8(xv, _mm512_movepi8_mask(wv), _mm512_setzero_si512(), xv);
    return _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_abs_epi8(wv), signed_x);
  }
  static void group_sums(const int8_t* w, const int8_t* x, int64_t n, int32_t* out) {
    const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    int64_t i = 0;
    for (; i + 256 <= n; i += 256) {
      const __m512i v0 = products(w + i, x + i), v1 = products(w + i + 64, x + i + 64);
      const __m512i v2 = products(w + i + 128, x + i + 128),
                    v3 = products(w + i + 192, x + i + 192);
      const __m512i t0 =
          _mm512_add_epi32(_mm512_unpacklo_epi32(v0, v1), _mm512_unpackhi_epi32(v0, v1));
      const __m512i t1 =
          _mm512_add_epi32(_mm512_unpacklo_epi32(v2, v3), _mm512_unpackhi_epi32(v2, v3));
      // Lane 4k + j: the sum of group k of vector j, i.e. group 4j + k.
      const __m512i r =
          _mm512_add_epi32(_mm512_unpacklo_epi64(t0, t1), _mm512_unpackhi_epi64(t0, t1));
      _mm512_storeu_si512(out + i / 16, _mm512_permutexvar_epi32(order, r));
    }
    group_sums_scalar(w + i, x + i, n - i, out + i / 16);
  }
};

}  // namespace

QuantLoop avx512vnni_quant_loop() { return &quant_loop<VnniSums>; }

}  // namespace tandem::kernels::detail
