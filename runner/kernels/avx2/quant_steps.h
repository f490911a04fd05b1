// AVX2 steps of the quantized matmul's vector form (runner/kernels/quant_vector.h), shared by
// avx2/quant_matmul.cpp (the row form) and avx2/quant_lanes.cpp (the lane form): the dot of
// 32 unsigned quants with 32 activations by vpmaddubsw (pairs, at most 2 * 128 * 127: no
// saturation) and vpmaddwd against ones, and bits spread to bytes by a byte shuffle and a
// compare (ggml's bytes_from_bits_32).
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "runner/kernels/quant_matmul.h"

namespace tandem::kernels::detail {
namespace {

struct Avx2Steps {
  static constexpr int64_t kStreamRows = kAvx2StreamRows;
  static __m256i dot4(__m256i u, __m256i x) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, x), _mm256_set1_epi16(1));
  }
  static __m256i madd_add(__m256i acc, __m256i pairs, __m256i scales) {
    return _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, scales));
  }
  static __m256i bits_to_bytes(uint32_t bits, char value) {
    // Byte j takes the byte of `bits` that holds bit j, then every bit but j is set.
    const __m256i which =
        _mm256_setr_epi64x(0, 0x0101010101010101, 0x0202020202020202, 0x0303030303030303);
    const __m256i spread = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(bits)), which);
    const __m256i others = _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe);
    const __m256i set = _mm256_cmpeq_epi8(_mm256_or_si256(spread, others), _mm256_set1_epi64x(-1));
    return _mm256_and_si256(set, _mm256_set1_epi8(value));
  }
};

}  // namespace
}  // namespace tandem::kernels::detail
