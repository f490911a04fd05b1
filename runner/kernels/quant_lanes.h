// The quantized matmul for batches on AVX-512 VNNI: activation rows across the lanes of a
// vector, so that no dot product is ever summed across a vector. Included by
// avx512/quant_matmul.cpp only (512-bit intrinsics, compiled with -mavx512vnni).
//
// quant_vector.h's batch form dots one weight row with one activation row per vector, and
// reduces every block's eight int32 lanes to one sum before scaling it: more shuffles and
// adds than multiplies. Here the activations come laid out across rows (ActRows::lanes: row
// m's values k..k+3 in 32-bit lane m), and four weight values are broadcast to all lanes,
// so one vpdpbusd adds four products to each of 16 rows' sums at once: a block's 32 values
// are 8 vpdpbusd per 16 rows, and the sums come out one row per lane, ready to scale.
//
// The weights are the signed operand (each type's decoded quants, quant_decode.h, are
// below 128 or IQ4's signed values) and the activations the unsigned one, q + 128; the
// sums are corrected exactly, by 128 times the weight quants' sum (per block, or per
// super-block through its scales), folded into the starting value. After that every block
// takes finish_legacy / finish_super's float steps in the same order, lane by lane, so each
// row gets the portable form's bits (quant_matmul.h), whatever the batch.
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

// kLaneRows weight rows' span of 256 values, decoded: the quants, as signed bytes, and
// legacy: per block d, dm, and -128 times the block's quant sum (wbias);
// super: d[r][0], dm[r][0], wbias[r][0] = -128 * sum over groups of scale * quant sum,
//   sc: each group of 16's integer scale, bias_pairs: int16 pairs per two groups of what
//   their activation sums are multiplied by (the mins, or minus offset * scale).
struct LaneSpan {
  alignas(64) int8_t q[kLaneRows][kSpan];
  float d[kLaneRows][8], dm[kLaneRows][8];
  int32_t wbias[kLaneRows][8];
  int32_t sc[kLaneRows][16];
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

template <class S, class T>
int decode_lane_span(const uint8_t* const (&rows)[kLaneRows], int64_t span, int64_t n,
                     LaneSpan& out) {
  using B = typename T::B;
  if constexpr (T::kSuper) {
    for (int r = 0; r < kLaneRows; ++r) {
      const B& b = blocks_of<B>(rows[r])[span];
      const SuperScales s = T::scales(b);
      _mm512_storeu_si512(out.sc[r], _mm512_cvtepi16_epi32(s.sc16));
      int32_t weighted = 0;  // sum over groups of scale * quant sum
      for (int c = 0; c < 8; ++c) {
        const __m256i q = T::template chunk<S>(b, c);
        store32(out.q[r] + 32 * c, q);
        const GroupSums sums = group_sums_of(sums_of_8(q));
        weighted += out.sc[r][2 * c] * sums.first + out.sc[r][2 * c + 1] * sums.second;
      }
      out.wbias[r][0] = -128 * weighted;
      if constexpr (T::kBias) {
        __m512i bias = _mm512_inserti64x4(_mm512_castsi256_si512(s.bias_lo), s.bias_hi, 1);
        if constexpr (!T::kMins) bias = _mm512_sub_epi32(_mm512_setzero_si512(), bias);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out.bias_pairs[r]),
                            _mm512_cvtepi32_epi16(bias));
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
        out.wbias[r][c] = -128 * chunk_sum(sums_of_8(q));
      }
      _mm256_storeu_ps(out.d[r], block_halves(b, count, offsetof(B, d)));
      if constexpr (T::kHasMin) _mm256_storeu_ps(out.dm[r], block_halves(b, count, offsetof(B, m)));
    }
    return count;
  }
}

inline __m512i broadcast4(const int8_t* p) {
  int32_t v;
  __builtin_memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

// acc[r * lanes + lane0 ...] (X vectors of 16 rows) += this span's `kCount` legacy blocks of
// weight row r: per block the exact integer dot in each lane, then finish_legacy's steps.
template <class T, int X, int kCount>
TANDEM_QUANT_INLINE void legacy_lane_tile(const LaneSpan& w, const ActRows& x, int64_t span,
                                          int64_t lane0, float* acc) {
  const int64_t lanes = x.lanes;
  __m512 f[kLaneRows][X];
  for (int r = 0; r < kLaneRows; ++r)
    for (int i = 0; i < X; ++i) f[r][i] = _mm512_loadu_ps(acc + r * lanes + lane0 + 16 * i);
  for (int c = 0; c < kCount; ++c) {
    const int64_t block = 8 * span + c, at = block * lanes + lane0;
    __m512i g[kLaneRows][X];
    for (int i = 0; i < X; ++i) {
      __m512i start = _mm512_setzero_si512();
      if constexpr (T::kOffset != 0) {
        start = _mm512_mullo_epi32(_mm512_loadu_si512(x.lane_qsum + at + 16 * i),
                                   _mm512_set1_epi32(-T::kOffset));
      }
      for (int r = 0; r < kLaneRows; ++r)
        g[r][i] = _mm512_add_epi32(start, _mm512_set1_epi32(w.wbias[r][c]));
    }
    const uint8_t* xq = x.lane_q + (block * 8 * lanes + lane0) * 4;
    for (int s = 0; s < 8; ++s) {
      __m512i xv[X];
      for (int i = 0; i < X; ++i) xv[i] = _mm512_loadu_si512(xq + (s * lanes + 16 * i) * 4);
      for (int r = 0; r < kLaneRows; ++r) {
        const __m512i wv = broadcast4(w.q[r] + 32 * c + 4 * s);
        for (int i = 0; i < X; ++i) g[r][i] = _mm512_dpbusd_epi32(g[r][i], xv[i], wv);
      }
    }
    for (int i = 0; i < X; ++i) {
      const __m512 xd = _mm512_loadu_ps(x.lane_d + at + 16 * i);
      __m512 xs = _mm512_setzero_ps();
      if constexpr (T::kHasMin) xs = _mm512_loadu_ps(x.lane_s + at + 16 * i);
      for (int r = 0; r < kLaneRows; ++r) {
        __m512 t = _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(w.d[r][c]), xd),
                                 _mm512_cvtepi32_ps(g[r][i]));
        if constexpr (T::kHasMin)
          t = _mm512_add_ps(t, _mm512_mul_ps(_mm512_set1_ps(w.dm[r][c]), xs));
        f[r][i] = _mm512_add_ps(f[r][i], t);
      }
    }
  }
  for (int r = 0; r < kLaneRows; ++r)
    for (int i = 0; i < X; ++i) _mm512_storeu_ps(acc + r * lanes + lane0 + 16 * i, f[r][i]);
}

// The same for a super-block: per scale group the exact dot, times the group's scale, into
// one int32 sum per lane; the activation sums' terms by vpdpwssd; then finish_super's steps.
template <class T, int X>
TANDEM_QUANT_INLINE void super_lane_tile(const LaneSpan& w, const ActRows& x, int64_t span,
                                         int64_t lane0, float* acc) {
  constexpr int kValues = ScaleGroup<T>::kValues;
  const int64_t lanes = x.lanes;
  __m512i isum[kLaneRows][X], part[kLaneRows][X];
  for (int r = 0; r < kLaneRows; ++r)
    for (int i = 0; i < X; ++i) isum[r][i] = _mm512_set1_epi32(w.wbias[r][0]);
  const uint8_t* xq = x.lane_q + (span * (kSpan / 4) * lanes + lane0) * 4;
  for (int j = 0; j < kSpan / kValues; ++j) {
    for (int r = 0; r < kLaneRows; ++r)
      for (int i = 0; i < X; ++i) part[r][i] = _mm512_setzero_si512();
    for (int s = j * kValues / 4; s < (j + 1) * kValues / 4; ++s) {
      __m512i xv[X];
      for (int i = 0; i < X; ++i) xv[i] = _mm512_loadu_si512(xq + (s * lanes + 16 * i) * 4);
      for (int r = 0; r < kLaneRows; ++r) {
        const __m512i wv = broadcast4(w.q[r] + 4 * s);
        for (int i = 0; i < X; ++i) part[r][i] = _mm512_dpbusd_epi32(part[r][i], xv[i], wv);
      }
    }
    for (int r = 0; r < kLaneRows; ++r) {
      const __m512i scale = _mm512_set1_epi32(w.sc[r][j * kValues / 16]);
      for (int i = 0; i < X; ++i)
        isum[r][i] = _mm512_add_epi32(isum[r][i], _mm512_mullo_epi32(part[r][i], scale));
    }
  }
  // part now holds summs (the mins' terms; zero for types without mins).
  for (int r = 0; r < kLaneRows; ++r)
    for (int i = 0; i < X; ++i) part[r][i] = _mm512_setzero_si512();
  if constexpr (T::kBias) {
    for (int t = 0; t < 8; ++t) {
      __m512i pairs[X];
      for (int i = 0; i < X; ++i) {
        pairs[i] =
            _mm512_loadu_si512(x.lane_bsum_pairs + ((span * 8 + t) * lanes + lane0 + 16 * i) * 2);
      }
      for (int r = 0; r < kLaneRows; ++r) {
        const __m512i b = _mm512_set1_epi32(w.bias_pairs[r][t]);
        for (int i = 0; i < X; ++i) {
          if constexpr (T::kMins) {
            part[r][i] = _mm512_dpwssd_epi32(part[r][i], pairs[i], b);
          } else {
            isum[r][i] = _mm512_dpwssd_epi32(isum[r][i], pairs[i], b);
          }
        }
      }
    }
  }
  for (int i = 0; i < X; ++i) {
    const __m512 xd = _mm512_loadu_ps(x.lane_d + span * lanes + lane0 + 16 * i);
    for (int r = 0; r < kLaneRows; ++r) {
      const __m512 dot = _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(w.d[r][0]), xd),
                                       _mm512_cvtepi32_ps(isum[r][i]));
      const __m512 mins = _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(w.dm[r][0]), xd),
                                        _mm512_cvtepi32_ps(part[r][i]));
      float* a = acc + r * lanes + lane0 + 16 * i;
      _mm512_storeu_ps(a, _mm512_add_ps(_mm512_loadu_ps(a), _mm512_sub_ps(dot, mins)));
    }
  }
}

// One span of the decoded rows against every activation row: 32 rows per tile, then 16.
template <class T, int kCount>
TANDEM_QUANT_INLINE void lane_tiles(const LaneSpan& w, const ActRows& x, int64_t span, float* acc) {
  int64_t lane0 = 0;
  for (; lane0 + 32 <= x.lanes; lane0 += 32) {
    if constexpr (T::kSuper) {
      super_lane_tile<T, 2>(w, x, span, lane0, acc);
    } else {
      legacy_lane_tile<T, 2, kCount>(w, x, span, lane0, acc);
    }
  }
  if (lane0 < x.lanes) {
    if constexpr (T::kSuper) {
      super_lane_tile<T, 1>(w, x, span, lane0, acc);
    } else {
      legacy_lane_tile<T, 1, kCount>(w, x, span, lane0, acc);
    }
  }
}

// Outputs taken together: their sums are kept until all are done, then written a row of 16
// contiguous floats (a cache line) per activation row, not 4 at a time down a column.
constexpr int64_t kLaneOutputs = 16;

template <class S, class T>
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
        const int count = decode_lane_span<S, T>(rows, span, n, decoded);
        if constexpr (T::kSuper) {
          lane_tiles<T, 8>(decoded, a.x, span, group_acc);
        } else {
          with_block_count(
              count, [&]<int kCount>() { lane_tiles<T, kCount>(decoded, a.x, span, group_acc); });
        }
      }
    }
    for (int64_t m = 0; m < a.n_rows; ++m) {
      float* y = a.y + m * a.n_out + o0;
      for (int64_t i = 0; i < outputs; ++i) y[i] = acc[i * lanes + m];
    }
  }
}

template <class S>
void quant_lanes_loop(const QuantMatmulArgs& a, int64_t out_begin, int64_t out_end) {
  with_vector_type(a.kind, [&]<class T>() { quant_lanes_rows<S, T>(a, out_begin, out_end); });
}

}  // namespace
}  // namespace tandem::kernels::detail
