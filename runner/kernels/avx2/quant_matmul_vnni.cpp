// The AVX2 forms with AVX-VNNI's 256-bit vpdpbusd (and vpdpwssd) for the four-product
// steps: one instruction where vpmaddubsw, vpmaddwd against ones and an add took three.
// The integers are exact either way (no step saturates: avx2/quant_steps.h), so the bits are
// the AVX2 forms'. For CPUs with AVX-VNNI but not AVX-512 VNNI (Intel's client cores from
// Alder Lake, its E-core servers); compiled with -mavxvnni and called only where the CPU
// reports it (kernels.cpp).
#include <immintrin.h>

#include "runner/kernels/avx2/quant_forms.h"
#include "runner/kernels/avx2/quant_steps.h"
#include "runner/kernels/isa.h"

namespace tandem::kernels::detail {
namespace {

struct Avx2VnniSteps : Avx2Steps {
  static __m256i dot4(__m256i u, __m256i x) {
    return _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), u, x);
  }
  static __m256i madd_add(__m256i acc, __m256i pairs, __m256i scales) {
    return _mm256_dpwssd_avx_epi32(acc, pairs, scales);
  }
};

}  // namespace

QuantLoop avxvnni_quant_loop() { return &avx2_form_loop<Avx2VnniSteps>; }

}  // namespace tandem::kernels::detail
