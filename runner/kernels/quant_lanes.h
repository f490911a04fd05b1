// The quantized matmul for batches with activation rows across the lanes of a vector, so
// that no dot product is ever summed across a vector: what both ISAs' lane forms share.
// Included by avx512/quant_matmul.cpp (16 rows per 512-bit vector, vpdpbusd) and
// avx2/quant_lanes.cpp (8 rows per 256-bit vector, vpmaddubsw); each supplies the tiles.
//
// quant_vector.h's batch form dots one weight row with one activation row per vector, and
// reduces every block's eight int32 lanes to one sum before scaling it: more shuffles and
// adds than multiplies. Here the activations come laid out across rows (ActRows::lanes: row
// m's values k..k+3 in 32-bit lane m), and four weight values are broadcast to all lanes,
// so one multiply step adds four products to each row's sum at once, and the sums come out
// one row per lane, ready to scale.
//
// The weights are each type's decoded quants (quant_decode.h), unsigned but for IQ4's
// signed values, with the type's offset corrected by the activations' block sums.
// The lane layout holds the activations' signed bytes. Both ISAs take the unsigned weights
// as the unsigned operand (vpdpbusd's, vpmaddubsw's) and the activations as the signed one,
// so no correction is needed. IQ4's signed weights: AVX-512 VNNI makes them vpdpbusd's
// signed operand against q + 128, corrected exactly by 128 times the weight quants' sum (per
// block, or per super-block through its scales), folded into the starting value (`wbias`);
// AVX2 takes |w| against x with w's sign.
// After that every block takes finish_legacy / finish_super's float steps in the same
// order, lane by lane, so each row gets the portable form's bits (quant_matmul.h), whatever
// the batch.
//
// Everything sits in an anonymous namespace and uses no standard-library template, for the
// reason tile_loop.h gives.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "runner/kernels/quant_vector.h"

namespace tandem::kernels::detail {
namespace {

constexpr int kLaneRows = 4;  // weight rows decoded together and multiplied per tile

// How many values share one integer scale in a super-block type (one scale per 32 values
// lets a group's dots run twice as long before they are scaled).
template <class T>
struct ScaleGroup {
  static constexpr int kValues = 16;
};
template <>
struct ScaleGroup<VQ4_K> {
  static constexpr int kValues = 32;
};
template <>
struct ScaleGroup<VQ5_K> {
  static constexpr int kValues = 32;
};
template <>
struct ScaleGroup<VIq4Xs> {
  static constexpr int kValues = 32;
};

// kLaneRows weight rows' span of 256 values, decoded: the quants, as bytes, and
// legacy: per block d, dm, and -128 times the block's quant sum (wbias, IQ4 on AVX-512 only);
// super: d[r][0], dm[r][0], wbias[r][0] = -128 * sum over groups of scale * quant sum (the
//   same), sc: each group of 16's integer scale, bias_pairs: int16 pairs per two groups of
//   what their activation sums are multiplied by (the mins, or minus offset * scale).
struct LaneSpan {
  alignas(64) int8_t q[kLaneRows][kSpan];
  float d[kLaneRows][8], dm[kLaneRows][8];
  int32_t wbias[kLaneRows][8];
  int32_t sc[kLaneRows][16];
  int32_t sc_pairs[kLaneRows][16];  // the same scales as int16 pairs (sc, sc): AVX2 only
  int32_t bias_pairs[kLaneRows][8];
};

// Each 8 quants' sum (signed bytes) in the four 64-bit lanes.
inline __m256i sums_of_8(__m256i q) {
  const __m256i biased = _mm256_xor_si256(q, _mm256_set1_epi8(static_cast<char>(0x80)));
  return _mm256_sub_epi64(_mm256_sad_epu8(biased, _mm256_setzero_si256()),
                          _mm256_set1_epi64x(8 * 128));
}

// The sums of a chunk's two groups of 16 (sums_of_8's lanes 0 + 1 and 2 + 3).
struct GroupSums {
  int32_t first, second;
};
inline GroupSums group_sums_of(__m256i sums_of_8) {
  const __m256i pairs = _mm256_add_epi64(sums_of_8, _mm256_shuffle_epi32(sums_of_8, 0x4E));
  return {_mm256_cvtsi256_si32(pairs), _mm256_extract_epi32(pairs, 4)};
}
inline int32_t chunk_sum(__m256i sums_of_8) {
  const GroupSums sums = group_sums_of(sums_of_8);
  return sums.first + sums.second;
}

// The low 16 bits of each int32 lane of v, in order (AVX-512's vpmovdw).
inline __m128i low_halves(__m256i v) {
  const __m256i pick = _mm256_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, -1, -1, -1, -1, -1, -1, -1, -1, 0,
                                        1, 4, 5, 8, 9, 12, 13, -1, -1, -1, -1, -1, -1, -1, -1);
  return _mm256_castsi256_si128(_mm256_permute4x64_epi64(_mm256_shuffle_epi8(v, pick), 0x08));
}

// kWbias: the activations are taken as unsigned (q + 128), so each row's wbias is needed;
// kScalePairs: the tiles read sc_pairs.
template <class S, class T, bool kWbias, bool kScalePairs>
int decode_lane_span(const uint8_t* const (&rows)[kLaneRows], int64_t span, int64_t n,
                     LaneSpan& out) {
  using B = typename T::B;
  if constexpr (T::kSuper) {
    for (int r = 0; r < kLaneRows; ++r) {
      const B& b = blocks_of<B>(rows[r])[span];
      const SuperScales s = T::scales(b);
      store32(out.sc[r], _mm256_cvtepi16_epi32(_mm256_castsi256_si128(s.sc16)));
      store32(out.sc[r] + 8, _mm256_cvtepi16_epi32(_mm256_extracti128_si256(s.sc16, 1)));
      int32_t weighted = 0;  // sum over groups of scale * quant sum
      for (int c = 0; c < 8; ++c) {
        const __m256i q = T::template chunk<S>(b, c);
        store32(out.q[r] + 32 * c, q);
        if constexpr (kWbias) {
          const GroupSums sums = group_sums_of(sums_of_8(q));
          weighted += out.sc[r][2 * c] * sums.first + out.sc[r][2 * c + 1] * sums.second;
        }
      }
      out.wbias[r][0] = -128 * weighted;
      if constexpr (kScalePairs) {
        const __m256i lo = _mm256_unpacklo_epi16(s.sc16, s.sc16);  // groups 0-3, 8-11
        const __m256i hi = _mm256_unpackhi_epi16(s.sc16, s.sc16);  // groups 4-7, 12-15
        store32(out.sc_pairs[r], _mm256_permute2x128_si256(lo, hi, 0x20));
        store32(out.sc_pairs[r] + 8, _mm256_permute2x128_si256(lo, hi, 0x31));
      }
      if constexpr (T::kBias) {
        __m256i lo = s.bias_lo, hi = s.bias_hi;
        if constexpr (!T::kMins) {
          lo = _mm256_sub_epi32(_mm256_setzero_si256(), lo);
          hi = _mm256_sub_epi32(_mm256_setzero_si256(), hi);
        }
        auto* pairs = reinterpret_cast<__m128i*>(out.bias_pairs[r]);
        _mm_storeu_si128(pairs, low_halves(lo));
        _mm_storeu_si128(pairs + 1, low_halves(hi));
      }
      out.d[r][0] = s.d;
      out.dm[r][0] = s.dm;
    }
    return 8;
  } else {
    const int64_t left = n / 32 - 8 * span;
    const int count = left < 8 ? static_cast<int>(left) : 8;
    for (int r = 0; r < kLaneRows; ++r) {
      const B* b = blocks_of<B>(rows[r]) + 8 * span;
      for (int c = 0; c < count; ++c) {
        const __m256i q = T::template quants<S>(b[c]);
        store32(out.q[r] + 32 * c, q);
        if constexpr (kWbias) out.wbias[r][c] = -128 * chunk_sum(sums_of_8(q));
      }
      _mm256_storeu_ps(out.d[r], block_halves(b, count, offsetof(B, d)));
      if constexpr (T::kHasMin) _mm256_storeu_ps(out.dm[r], block_halves(b, count, offsetof(B, m)));
    }
    return count;
  }
}

// Outputs taken together: their sums are kept until all are done, then written a row of 16
// contiguous floats (a cache line) per activation row, not 4 at a time down a column.
constexpr int64_t kLaneOutputs = 16;

// Tiles (the ISA's): template <class T> kWbias and kScalePairs as decode_lane_span takes
// them, and
//   template <class T, int kCount> static void run(const LaneSpan&, const ActRows&,
//       int64_t span, float* acc): acc[r * lanes + m] += decoded row r's dot over this
//       span's kCount blocks (8 for a super-block) with activation row m, every m.
template <class S, class T, class Tiles>
void quant_lanes_rows(const QuantMatmulArgs& a, int64_t out_begin, int64_t out_end) {
  const int64_t n = a.n_in, lanes = a.x.lanes;
  const int64_t n_spans = (n + kSpan - 1) / kSpan;
  // Each span also prefetches its share of the next group of rows (consecutive in memory):
  // a row of 576 values is only three spans, too few to prefetch ahead within it.
  const int64_t group_bytes = kLaneRows * static_cast<int64_t>(a.row_bytes);
  const int64_t ahead_per_span = (group_bytes + n_spans - 1) / n_spans;
  // The running sums: output o0 + i's for activation rows 0..lanes-1 at acc + i * lanes.
  auto* acc = static_cast<float*>(quant_scratch(static_cast<size_t>(kLaneOutputs * lanes) * 4));
  LaneSpan decoded;
  for (int64_t o0 = out_begin; o0 < out_end; o0 += kLaneOutputs) {
    const int64_t outputs = out_end - o0 < kLaneOutputs ? out_end - o0 : kLaneOutputs;
    for (int64_t i = 0; i < kLaneOutputs * lanes; ++i) acc[i] = 0.f;
    for (int64_t g = 0; g < outputs; g += kLaneRows) {
      // A short last group repeats its last row (computed again, stored once).
      const uint8_t* rows[kLaneRows];
      for (int64_t r = 0; r < kLaneRows; ++r) {
        const int64_t o = o0 + g + r < out_end ? o0 + g + r : out_end - 1;
        rows[r] = a.w + o * a.row_bytes;
      }
      float* group_acc = acc + g * lanes;
      for (int64_t span = 0; span < n_spans; ++span) {
        const uint8_t* ahead = rows[0] + group_bytes + span * ahead_per_span;
        for (int64_t b = 0; b < ahead_per_span; b += 64) _mm_prefetch(ahead + b, _MM_HINT_T0);
        const int count = decode_lane_span<S, T, Tiles::template kWbias<T>, Tiles::kScalePairs>(
            rows, span, n, decoded);
        if constexpr (T::kSuper) {
          Tiles::template run<T, 8>(decoded, a.x, span, group_acc);
        } else {
          with_block_count(count, [&]<int kCount>() {
            Tiles::template run<T, kCount>(decoded, a.x, span, group_acc);
          });
        }
      }
    }
    for (int64_t m = 0; m < a.n_rows; ++m) {
      float* y = a.y + m * a.row_stride() + o0;
      for (int64_t i = 0; i < outputs; ++i) y[i] = acc[i * lanes + m];
    }
  }
}

}  // namespace
}  // namespace tandem::kernels::detail
