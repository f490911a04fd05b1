// The quantized matmul's vector form, shared by avx2/quant_matmul.cpp and
// avx512/quant_matmul.cpp (256-bit AVX2 intrinsics; each file adds its own -m flags). It
// computes the integers and float steps of quant_matmul.h's portable form, which stays the
// reference it is tested against bit for bit, without that form's scalar unpacking:
//  - each type's blocks are decoded 32 quants per vector (quant_decode.h), kept unsigned
//    where the type allows (Q4_0's nibble n is n - 8: the dot is sum(n * x) minus
//    8 * sum(x), the activations' exact block sums), so one vpmaddubsw/vpdpbusd step needs no
//    sign fix-up; IQ4's signed table values take |w| and x with w's sign;
//  - up to S::kStreamRows activation rows (a decode step, a small batch): four weight rows
//    stream side by side, each span decoded in registers once and dotted with every
//    activation row (quant_streams.h);
//  - a larger batch: a span of 256 weights of kSpanRows weight rows is decoded into a small
//    buffer that stays in L1 (DecodedSpan), and four activation rows at a time take their
//    dots from it (AVX-512 VNNI and AVX2 take the lane form instead, quant_lanes.h, from the
//    row count kernels.cpp picks);
//  - per block the float steps of finish_legacy / finish_super follow, the same operations
//    in the same order (the per-block products in vector lanes, the sum over blocks in
//    block order per lane), so every ISA and every batch size gives the portable form's bits.
// The ISA file's struct S is described in quant_vector_steps.h.
// Everything sits in an anonymous namespace and uses no standard-library template, for the
// reason tile_loop.h gives.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "runner/kernels/quant_streams.h"

namespace tandem::kernels::detail {
namespace {

// ---- A batch: kSpanRows weight rows decoded per span into L1, four x rows at a time ---------

// One weight row's span, decoded: its quants, and the block scales (legacy: d and dm per
// block in lanes; super: the block's SuperScales).
struct DecodedSpan {
  alignas(32) uint8_t q[kSpan];
  __m256 d, dm;
  SuperScales s;
};

template <class S, class T>
int decode_span(const uint8_t* row, int64_t span, int64_t n, DecodedSpan& out) {
  using B = typename T::B;
  if constexpr (T::kSuper) {
    const B& b = blocks_of<B>(row)[span];
    for (int c = 0; c < 8; ++c) store32(out.q + 32 * c, T::template chunk<S>(b, c));
    out.s = T::scales(b);
    return 8;
  } else {
    const B* b = blocks_of<B>(row) + 8 * span;
    const int64_t left = n / 32 - 8 * span;
    const int count = left < 8 ? static_cast<int>(left) : 8;
    for (int c = 0; c < count; ++c) store32(out.q + 32 * c, T::template quants<S>(b[c]));
    out.d = block_halves(b, count, offsetof(B, d));
    out.dm = _mm256_setzero_ps();
    if constexpr (T::kHasMin) out.dm = block_halves(b, count, offsetof(B, m));
    return count;
  }
}

// R running sums (R = 4 or 1) as the lanes of a vector, and back.
template <int R>
inline __m128 load_sums(const float* acc) {
  if constexpr (R == 4) return _mm_loadu_ps(acc);
  return _mm_setr_ps(acc[0], 0.f, 0.f, 0.f);
}
template <int R>
inline void store_sums(float* acc, __m128 v) {
  if constexpr (R == 4) {
    _mm_storeu_ps(acc, v);
  } else {
    acc[0] = _mm_cvtss_f32(v);
  }
}

// acc[0..R-1] += this span's part of the dots of one decoded weight row with x rows
// m0..m0+R-1 (R = 4, or 1 for the last rows): each weight chunk loaded once for the R.
template <class S, class T, int R>
TANDEM_QUANT_INLINE void span_rows(const DecodedSpan& w, int count, const ActRows& x, int64_t m0,
                                   int64_t span, float* acc) {
  const int8_t* xq = x.q + m0 * x.n_in + span * kSpan;
  const int64_t row = x.n_in;
  if constexpr (T::kSuper) {
    const int64_t nb = x.n_in / 256;
    __m256i v[8];  // the rows' scaled group sums, then their bias products
    for (int r = 0; r < 8; ++r) v[r] = _mm256_setzero_si256();
    const GroupScales g = group_scales(w.s.sc16);
    for (int c = 0; c < 8; ++c) {
      const __m256i q = load32(w.q + 32 * c), sc = chunk_scale(g, c);
      for (int r = 0; r < R; ++r) {
        v[r] = S::madd_add(v[r], pairs<T>(q, load32(xq + r * row + 32 * c)), sc);
      }
    }
    float xd[4] = {};
    for (int r = 0; r < R; ++r) {
      if constexpr (T::kBias) v[4 + r] = bias_products(w.s, x.bsums + ((m0 + r) * nb + span) * 16);
      xd[r] = x.d[(m0 + r) * nb + span];
    }
    const __m128 xdv = _mm_setr_ps(xd[0], xd[1], xd[2], xd[3]);
    store_sums<R>(
        acc, add_super4<T>(load_sums<R>(acc), v, _mm_set1_ps(w.s.d), _mm_set1_ps(w.s.dm), xdv));
  } else {
    const int64_t nb = x.n_in / 32;
    __m256 t[4];
    for (int r = 0; r < 4; ++r) t[r] = _mm256_setzero_ps();
    for (int r = 0; r < R; ++r) {
      __m256i p[8];
      for (int c = 0; c < 8; ++c) {
        p[c] = c < count ? dot4<S, T>(load32(w.q + 32 * c), load32(xq + r * row + 32 * c))
                         : _mm256_setzero_si256();
      }
      t[r] = legacy_terms<T>(sum_each(p), count, w.d, w.dm, x, (m0 + r) * nb + 8 * span);
    }
    store_sums<R>(acc, add_terms4(load_sums<R>(acc), t, count));
  }
}

template <class S, class T>
void quant_rows_vector(const QuantMatmulArgs& a, int64_t out_begin, int64_t out_end) {
  const int64_t n = a.n_in;
  if (a.n_rows <= S::kStreamRows) return stream_batch<S, T>(a, out_begin, out_end);
  const int64_t n_spans = (n + kSpan - 1) / kSpan;
  const int64_t span_bytes = static_cast<int64_t>((T::kSuper ? 1 : 8) * sizeof(typename T::B));
  // The sums of the decoded rows, row i's for x rows 0..n_rows-1 contiguous.
  auto* acc = static_cast<float*>(quant_scratch(static_cast<size_t>(kSpanRows * a.n_rows) * 4));
  DecodedSpan decoded[kSpanRows];
  for (int64_t o0 = out_begin; o0 < out_end; o0 += kSpanRows) {
    const int64_t rows = out_end - o0 < kSpanRows ? out_end - o0 : kSpanRows;
    for (int64_t i = 0; i < rows * a.n_rows; ++i) acc[i] = 0.f;
    for (int64_t span = 0; span < n_spans; ++span) {
      int count = 0;
      for (int64_t i = 0; i < rows; ++i) {
        const uint8_t* row = a.w + (o0 + i) * a.row_bytes;
        prefetch_span(row, span, n_spans, span_bytes);
        count = decode_span<S, T>(row, span, n, decoded[i]);
      }
      for (int64_t i = 0; i < rows; ++i) {
        float* acc_i = acc + i * a.n_rows;
        int64_t m = 0;
        auto rows_of_x = [&]<int kCount>() {
          for (; m + 4 <= a.n_rows; m += 4) {
            span_rows<S, T, 4>(decoded[i], kCount, a.x, m, span, acc_i + m);
          }
          for (; m < a.n_rows; ++m) span_rows<S, T, 1>(decoded[i], kCount, a.x, m, span, acc_i + m);
        };
        if constexpr (T::kSuper) {
          rows_of_x.template operator()<8>();
        } else {
          with_block_count(count, rows_of_x);
        }
      }
    }
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t m = 0; m < a.n_rows; ++m) a.y[m * a.n_out + o0 + i] = acc[i * a.n_rows + m];
  }
}

// f.template operator()<VT>() with VT the vector form's type for `kind` (quant_decode.h):
// one dispatch for the row form here and the lane form (quant_lanes.h).
template <class F>
void with_vector_type(QuantKind kind, F&& f) {
  switch (kind) {
    case QuantKind::kQ4_0:
      return f.template operator()<VQ4_0>();
    case QuantKind::kQ4_1:
      return f.template operator()<VQ4_1>();
    case QuantKind::kQ5_0:
      return f.template operator()<VQ5_0>();
    case QuantKind::kQ5_1:
      return f.template operator()<VQ5_1>();
    case QuantKind::kQ2_K:
      return f.template operator()<VQ2_K>();
    case QuantKind::kQ3_K:
      return f.template operator()<VQ3_K>();
    case QuantKind::kQ4_K:
      return f.template operator()<VQ4_K>();
    case QuantKind::kQ5_K:
      return f.template operator()<VQ5_K>();
    case QuantKind::kQ6_K:
      return f.template operator()<VQ6_K>();
    case QuantKind::kIq4Nl:
      return f.template operator()<VIq4Nl>();
    case QuantKind::kIq4Xs:
      return f.template operator()<VIq4Xs>();
  }
}

template <class S>
void quant_vector_loop(const QuantMatmulArgs& a, int64_t out_begin, int64_t out_end) {
  with_vector_type(a.kind, [&]<class T>() { quant_rows_vector<S, T>(a, out_begin, out_end); });
}

}  // namespace
}  // namespace tandem::kernels::detail
