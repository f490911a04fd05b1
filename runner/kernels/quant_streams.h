// The quantized matmul's streamed form (quant_vector.h): a decode step's one activation row,
// or a small batch of up to S::kStreamRows. Four weight rows stream from memory side by side,
// and each span of them is decoded in registers once and dotted with every activation row
// at once (with AVX-512 VNNI, S::kWide, a super-block's chunks and a legacy span's blocks go
// two at a time in 512-bit steps, and a legacy span's F16 scales are picked out of its bytes
// by word permutes). Each activation row takes exactly the one-row steps, so a batch's rows
// get the bits they get alone.
//
// Why a batch streams too: the lane form (quant_lanes.h) stores every decoded span into L1,
// lays it out for its broadcasts and reads it back, which a few activation rows cannot
// amortize; streamed, a second row costs only its dots.
// Everything sits in an anonymous namespace and uses no standard-library template, for the
// reason tile_loop.h gives.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "runner/kernels/quant_vector_steps.h"

namespace tandem::kernels::detail {
namespace {

// acc[m] (lane r: weight row r's dot with activation row m) += one span of four legacy rows:
// `count` blocks (a literal where four_dots_legacy has one, so that the per-block conditions
// fold).
template <class S, class T, int R>
TANDEM_QUANT_INLINE void four_rows_legacy_span(const uint8_t* const (&rows)[4], int64_t span,
                                               int count, const ActRows& x, __m128 (&acc)[R]) {
  using B = typename T::B;
  const int64_t nb = x.n_in / 32;
  __m256 t[R][4];
  for (int r = 0; r < 4; ++r) {
    const B* b = blocks_of<B>(rows[r]) + 8 * span;
    __m256 d, dm = _mm256_setzero_ps();
    if constexpr (WideSteps<S>) {
      __m512i w[4];
      wide_legacy_quants<S, T>(b, count, w);
      if constexpr (kSpanWordsFit<B>) {
        __m512i words[3];
        span_words<S>(b, count, words);
        d = span_halves<S, B, offsetof(B, d)>(words, count);
        if constexpr (T::kHasMin) dm = span_halves<S, B, offsetof(B, m)>(words, count);
      } else {  // Q8_0
        d = block_halves(b, count, offsetof(B, d));
      }
      for (int m = 0; m < R; ++m) {
        const int8_t* xq = x.q + m * x.n_in + span * kSpan;
        t[m][r] = legacy_terms<T>(wide_legacy_sums<S, T>(w, count, xq), count, d, dm, x,
                                  m * nb + 8 * span);
      }
    } else {
      // Chunk by chunk, each decoded and dotted at once (AVX2's 16 registers hold no more).
      __m256i p[R][8];
      for (int c = 0; c < 8; ++c) {
        const __m256i q = c < count ? T::template quants<S>(b[c]) : _mm256_setzero_si256();
        for (int m = 0; m < R; ++m) {
          const int8_t* xq = x.q + m * x.n_in + span * kSpan;
          p[m][c] = c < count ? dot4<S, T>(q, load32(xq + 32 * c)) : _mm256_setzero_si256();
        }
      }
      d = block_halves(b, count, offsetof(B, d));
      if constexpr (T::kHasMin) dm = block_halves(b, count, offsetof(B, m));
      for (int m = 0; m < R; ++m)
        t[m][r] = legacy_terms<T>(sum_each(p[m]), count, d, dm, x, m * nb + 8 * span);
    }
  }
  for (int m = 0; m < R; ++m) acc[m] = add_terms4(acc[m], t[m], count);
}

template <class S, class T, int R>
void four_dots_legacy(const uint8_t* const (&rows)[4], const ActRows& x, __m128 (&acc)[R]) {
  using B = typename T::B;
  const int64_t nb = x.n_in / 32, n_spans = (nb + 7) / 8;
  for (int64_t span = 0; span < n_spans; ++span) {
    prefetch_rows(rows[0], span * 8 * int64_t{sizeof(B)}, 8 * sizeof(B));
    const int64_t left = nb - 8 * span;
    // Whole spans inlined here. A row's short last span: a decode step's through
    // with_block_count (its block count a literal, the conditions folded); a batch's with
    // the count at run time, which spares compiling 7 more copies for every row count.
    if (left >= 8) {
      four_rows_legacy_span<S, T, R>(rows, span, 8, x, acc);
    } else if constexpr (R == 1) {
      with_block_count(static_cast<int>(left), [&]<int kCount>() {
        four_rows_legacy_span<S, T, R>(rows, span, kCount, x, acc);
      });
    } else {
      four_rows_legacy_span<S, T, R>(rows, span, static_cast<int>(left), x, acc);
    }
  }
}

// The four rows' block-i d (and dmin, for the types with mins) as floats in lanes, by one
// vcvtph2ps (exact, as half() is) rather than a scalar half() per field.
template <class T>
TANDEM_QUANT_INLINE void super_halves(const uint8_t* const (&rows)[4], int64_t i, __m128& d,
                                      __m128& dm) {
  using B = typename T::B;
  auto field = [&](int r, size_t offset) -> short {
    uint16_t h;
    __builtin_memcpy(&h, reinterpret_cast<const uint8_t*>(blocks_of<B>(rows[r]) + i) + offset, 2);
    return static_cast<short>(h);
  };
  constexpr size_t kD = offsetof(B, d);
  if constexpr (T::kMins) {
    constexpr size_t kM = offsetof(B, dmin);
    const __m256 f =
        _mm256_cvtph_ps(_mm_setr_epi16(field(0, kD), field(1, kD), field(2, kD), field(3, kD),
                                       field(0, kM), field(1, kM), field(2, kM), field(3, kM)));
    d = _mm256_castps256_ps128(f);
    dm = _mm256_extractf128_ps(f, 1);
  } else {
    d = _mm_cvtph_ps(
        _mm_setr_epi16(field(0, kD), field(1, kD), field(2, kD), field(3, kD), 0, 0, 0, 0));
    dm = _mm_setzero_ps();
  }
}

// v[m][r] = super-block b's scaled group sums with activation row m, every m < R.
template <class S, class T, int R>
TANDEM_QUANT_INLINE void super_rows_sums(const typename T::B& b, const GroupScales& g,
                                         const ActRows& x, int64_t i, int r, __m256i (&v)[R][8]) {
  if constexpr (WideSteps<S> && !T::kSigned) {
    __m512i pairs[4];
    chunk_pairs<S, T>(b, pairs);
    for (int m = 0; m < R; ++m)
      v[m][r] = wide_chunk_sums<S, T>(pairs, g, x.q + m * x.n_in + i * kSpan);
  } else {
    for (int m = 0; m < R; ++m) v[m][r] = _mm256_setzero_si256();
    for (int c = 0; c < 8; ++c) {
      const __m256i q = T::template chunk<S>(b, c), scale = chunk_scale(g, c);
      for (int m = 0; m < R; ++m) {
        const int8_t* xq = x.q + m * x.n_in + i * kSpan;
        v[m][r] = S::madd_add(v[m][r], pairs<T>(q, load32(xq + 32 * c)), scale);
      }
    }
  }
}

template <class S, class T, int R>
void four_dots_super(const uint8_t* const (&rows)[4], const ActRows& x, __m128 (&acc)[R]) {
  using B = typename T::B;
  const int64_t nb = x.n_in / 256;
  for (int64_t i = 0; i < nb; ++i) {
    __m256i v[R][8];  // per row: the four weight rows' scaled group sums, then bias products
    prefetch_rows(rows[0], i * int64_t{sizeof(B)}, sizeof(B));
    for (int r = 0; r < 4; ++r) {
      const B& b = blocks_of<B>(rows[r])[i];
      const SuperScales s = T::scales(b);
      super_rows_sums<S, T, R>(b, group_scales(s.sc16), x, i, r, v);
      for (int m = 0; m < R; ++m) {
        v[m][4 + r] =
            T::kBias ? bias_products(s, x.bsums + (m * nb + i) * 16) : _mm256_setzero_si256();
      }
    }
    __m128 d, dm;
    super_halves<T>(rows, i, d, dm);
    for (int m = 0; m < R; ++m)
      acc[m] = add_super4<T>(acc[m], v[m], d, dm, _mm_set1_ps(x.d[m * nb + i]));
  }
}

// Outputs [out_begin, out_end) of the R activation rows, four weight rows at a time.
template <class S, class T, int R>
void stream_rows(const QuantMatmulArgs& a, int64_t out_begin, int64_t out_end) {
  for (int64_t o0 = out_begin; o0 < out_end; o0 += 4) {
    // A short last group repeats its last row (computed twice, stored once).
    const uint8_t* rows[4];
    for (int64_t r = 0; r < 4; ++r) {
      rows[r] = a.w + (o0 + r < out_end ? o0 + r : out_end - 1) * a.row_bytes;
    }
    __m128 acc[R];
    for (int m = 0; m < R; ++m) acc[m] = _mm_setzero_ps();
    if constexpr (T::kSuper) {
      four_dots_super<S, T, R>(rows, a.x, acc);
    } else {
      four_dots_legacy<S, T, R>(rows, a.x, acc);
    }
    for (int m = 0; m < R; ++m) {
      alignas(16) float y[4];
      _mm_store_ps(y, acc[m]);
      float* out = a.y + m * a.row_stride() + o0;
      for (int64_t r = 0; r < 4 && o0 + r < out_end; ++r) out[r] = y[r];
    }
  }
}

// The streamed form for a.n_rows <= S::kStreamRows (quant_matmul.h): stream_rows with R the
// row count.
template <class S, class T, int R = 1>
void stream_batch(const QuantMatmulArgs& a, int64_t out_begin, int64_t out_end) {
  if constexpr (R < S::kStreamRows) {
    if (a.n_rows > R) return stream_batch<S, T, R + 1>(a, out_begin, out_end);
  }
  stream_rows<S, T, R>(a, out_begin, out_end);
}

}  // namespace
}  // namespace tandem::kernels::detail
