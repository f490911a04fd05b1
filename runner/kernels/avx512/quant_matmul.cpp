// AVX-512 steps of the quantized matmul's vector form (runner/kernels/quant_vector.h), on
// 256-bit vectors: the dot of 32 unsigned quants with 32 activations by one VNNI vpdpbusd,
// and bits spread to bytes by a masked broadcast; batches laid out across rows take the
// 512-bit lane form (quant_lanes.h). Compiled with -mavx512vnni and called only
// where the CPU has it (kernels.cpp).
#include <immintrin.h>

#include "runner/kernels/quant_lanes.h"
#include "runner/kernels/quant_vector.h"

namespace tandem::kernels::detail {
namespace {

struct VnniSteps {
  static __m256i dot4(__m256i u, __m256i x) {
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, x);
  }
  static __m256i madd_add(__m256i acc, __m256i pairs, __m256i scales) {
    return _mm256_dpwssd_epi32(acc, pairs, scales);
  }
  static __m256i bits_to_bytes(uint32_t bits, char value) {
    return _mm256_maskz_set1_epi8(bits, value);
  }
};

// Batches whose activations come laid out across rows take the lane form (quant_lanes.h).
void vnni_loop(const QuantMatmulArgs& a, int64_t out_begin, int64_t out_end) {
  if (a.x.lanes != 0) return quant_lanes_loop<VnniSteps>(a, out_begin, out_end);
  quant_vector_loop<VnniSteps>(a, out_begin, out_end);
}

}  // namespace

QuantLoop avx512vnni_quant_loop() { return &vnni_loop; }

}  // namespace tandem::kernels::detail
