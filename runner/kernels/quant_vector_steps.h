// The steps the quantized matmul's vector forms share (quant_streams.h, quant_vector.h,
// quant_lanes.h): dots of decoded quants with activation rows, a legacy span's per-block
// float terms, and AVX-512 VNNI's 512-bit steps. 256-bit AVX2 intrinsics, and 512-bit ones
// behind S::kWide; each ISA file adds its own -m flags.
// The ISA file supplies a struct S:
//   static __m256i dot4(__m256i u, __m256i x): int32 lane k = sum of the four products
//       u[4k + i] * x[4k + i], u unsigned (at most 128), x signed;
//   static __m256i madd_add(__m256i acc, __m256i pairs, __m256i scales): acc plus the int16
//       pairs times the int16 scales, each two adjacent products summed into an int32 lane;
//   static __m256i bits_to_bytes(uint32_t bits, char value): byte j = value where bit j
//       of bits is set, else 0;
//   static constexpr bool kWide: whether the 512-bit steps may be taken.
// Everything sits in an anonymous namespace and uses no standard-library template, for the
// reason tile_loop.h gives.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "runner/gguf/quant.h"
#include "runner/kernels/quant_decode.h"
#include "runner/kernels/quant_matmul.h"
#include "runner/kernels/quantize_q8.h"

// Per-span steps inlined into their loops, where a literal block count folds the conditions.
#define TANDEM_QUANT_INLINE __attribute__((always_inline)) inline

namespace tandem::kernels::detail {
namespace {

constexpr int64_t kSpan = 256;  // weights per row in one step: 8 chunks of 32
// Bytes ahead that a decode step prefetches its four rows, taken as one stretch
// (prefetch_rows): 1024 in each row where rows are long. Rows of 2048 Q5_0 weights (1408
// bytes) measured slower at 1024 and 8192 on the 2-vCPU EPYC (BM_QuantMatmul M = 1).
constexpr int64_t kDecodePrefetch = 4096;

// ---- Dots against activation rows -----------------------------------------------------------

inline int32_t sum_lanes(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
  return _mm_cvtsi128_si32(s);
}

// Eight vectors of eight int32 to the sum of each, in order.
inline __m256i sum_each(const __m256i (&p)[8]) {
  const __m256i a = _mm256_hadd_epi32(_mm256_hadd_epi32(p[0], p[1]), _mm256_hadd_epi32(p[2], p[3]));
  const __m256i b = _mm256_hadd_epi32(_mm256_hadd_epi32(p[4], p[5]), _mm256_hadd_epi32(p[6], p[7]));
  // a: sums of p0..p3 over lanes 0-3, then over lanes 4-7 (b likewise for p4..p7).
  return _mm256_add_epi32(_mm256_permute2x128_si256(a, b, 0x20),
                          _mm256_permute2x128_si256(a, b, 0x31));
}

// A chunk's product pairs as vpmaddubsw makes them (|w| <= 128: no saturation), x taking
// w's sign where the quants are signed.
template <class T>
inline __m256i pairs(__m256i w, __m256i x) {
  if constexpr (T::kSigned) return _mm256_maddubs_epi16(_mm256_abs_epi8(w), _mm256_sign_epi8(x, w));
  return _mm256_maddubs_epi16(w, x);
}
template <class S, class T>
inline __m256i dot4(__m256i w, __m256i x) {
  if constexpr (T::kSigned) return S::dot4(_mm256_abs_epi8(w), _mm256_sign_epi8(x, w));
  return S::dot4(w, x);
}

// Eight values at p (the rest 0 when fewer are left): a span's per-block activation scales
// and sums, which end with the row. A short span takes masked loads (masked-off lanes are
// neither read nor faulted on), not scalar stores reloaded as a vector, which cannot be
// forwarded and stall (a 576-wide row ends in a span of two blocks).
TANDEM_QUANT_INLINE __m256i lanes_below(int count) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(count), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
TANDEM_QUANT_INLINE __m256 load_floats(const float* p, int count) {
  if (count == 8) return _mm256_loadu_ps(p);
  return _mm256_maskload_ps(p, lanes_below(count));
}
TANDEM_QUANT_INLINE __m256i load_ints(const int32_t* p, int count) {
  if (count == 8) return load32(p);
  return _mm256_maskload_epi32(p, lanes_below(count));
}

// The F16 fields at byte `offset` of `count` consecutive blocks, as floats (the rest 0;
// vcvtph2ps is exact, as half() is). Lanes are set from registers, as above.
template <class Block>
TANDEM_QUANT_INLINE __m256 block_halves(const Block* b, int count, size_t offset) {
  auto field = [&](int c) -> short {
    if (c >= count) return 0;
    uint16_t h;
    __builtin_memcpy(&h, reinterpret_cast<const uint8_t*>(b + c) + offset, 2);
    return static_cast<short>(h);
  };
  return _mm256_cvtph_ps(_mm_setr_epi16(field(0), field(1), field(2), field(3), field(4), field(5),
                                        field(6), field(7)));
}

// A legacy span's per-block float terms: `count` blocks' exact dots (sums, one per lane)
// less the offset times the activations' block sums, then
// r.d[i] * xd[i] * g (+ r.dm[i] * xs[i]) per block in its lane (finish_legacy's operations).
template <class T>
TANDEM_QUANT_INLINE __m256 legacy_terms(__m256i sums, int count, __m256 d, __m256 dm,
                                        const ActRows& x, int64_t first_block) {
  if constexpr (T::kOffset != 0) {
    const __m256i xsum = load_ints(x.qsum + first_block, count);
    sums = _mm256_sub_epi32(sums, _mm256_mullo_epi32(xsum, _mm256_set1_epi32(T::kOffset)));
  }
  __m256 t = _mm256_mul_ps(_mm256_mul_ps(d, load_floats(x.d + first_block, count)),
                           _mm256_cvtepi32_ps(sums));
  if constexpr (T::kHasMin) {
    t = _mm256_add_ps(t, _mm256_mul_ps(dm, load_floats(x.s + first_block, count)));
  }
  return t;
}

// Four dots' sums (acc, one per lane) plus their spans' terms (t[k]: dot k's per-block terms
// in lanes), added block after block: each lane adds its terms in block order, as the
// one-dot form does.
TANDEM_QUANT_INLINE __m128 add_terms4(__m128 acc, const __m256 (&t)[4], int count) {
  const __m256 lo01 = _mm256_unpacklo_ps(t[0], t[1]), hi01 = _mm256_unpackhi_ps(t[0], t[1]);
  const __m256 lo23 = _mm256_unpacklo_ps(t[2], t[3]), hi23 = _mm256_unpackhi_ps(t[2], t[3]);
  // by_block[c % 4] holds block c's four terms at lanes 4 * (c / 4).
  const __m256 by_block[4] = {
      _mm256_shuffle_ps(lo01, lo23, 0x44), _mm256_shuffle_ps(lo01, lo23, 0xEE),
      _mm256_shuffle_ps(hi01, hi23, 0x44), _mm256_shuffle_ps(hi01, hi23, 0xEE)};
  for (int c = 0; c < count && c < 4; ++c)
    acc = _mm_add_ps(acc, _mm256_castps256_ps128(by_block[c]));
  for (int c = 4; c < count; ++c) acc = _mm_add_ps(acc, _mm256_extractf128_ps(by_block[c - 4], 1));
  return acc;
}

// Four super-block dots (v[k]: dot k's scaled group sums, v[4 + k] its bias products) and
// finish_super's step for each in its lane: d * xd * dot - dm * xd * summs, added to acc.
template <class T>
inline __m128 add_super4(__m128 acc, const __m256i (&v)[8], __m128 d, __m128 dm, __m128 xd) {
  const __m256i sums = sum_each(v);
  __m128i dot = _mm256_castsi256_si128(sums), summs = _mm_setzero_si128();
  if constexpr (T::kMins) {
    summs = _mm256_extracti128_si256(sums, 1);
  } else if constexpr (T::kBias) {
    dot = _mm_sub_epi32(dot, _mm256_extracti128_si256(sums, 1));
  }
  const __m128 t = _mm_sub_ps(_mm_mul_ps(_mm_mul_ps(d, xd), _mm_cvtepi32_ps(dot)),
                              _mm_mul_ps(_mm_mul_ps(dm, xd), _mm_cvtepi32_ps(summs)));
  return _mm_add_ps(acc, t);
}

inline __m256i bias_products(const SuperScales& s, const int32_t* bsums) {
  return _mm256_add_epi32(_mm256_mullo_epi32(s.bias_lo, load32(bsums)),
                          _mm256_mullo_epi32(s.bias_hi, load32(bsums + 8)));
}

// A decode step reads four consecutive rows side by side, each at byte `pos`: together a
// stretch of 4 * row_bytes read front to back at four times one row's pace, which runs on
// into the next four. So the prefetch runs ahead of that stretch as one stream,
// kDecodePrefetch bytes past 4 * pos from the first row's start. (Prefetching each row's
// own stream ahead instead, wrapping into the next four rows, left short rows too little
// lead: smollm2's 576-wide Q5_0 rows read 1.16x slower, BM_DecodeStep Q5_0 M:1.)
// Prefetches never fault; a short last group's repeated row only shortens the stretch.
// As read once, as quant_interleaved.h's (isa.h, TANDEM_PREFETCH_READ_ONCE).
inline void prefetch_rows(const uint8_t* first_row, int64_t pos, int64_t bytes) {
  const uint8_t* ahead = first_row + 4 * pos + kDecodePrefetch;
  for (int64_t b = 0; b < 4 * bytes; b += 64) TANDEM_PREFETCH_READ_ONCE(ahead + b);
}

// f.template operator()<count>() for count in 1..8: a span's block count as a literal, so
// that the inlined span steps fold their per-block conditions (a row's last span is short).
template <class F>
TANDEM_QUANT_INLINE void with_block_count(int count, F&& f) {
  switch (count) {
    case 1:
      return f.template operator()<1>();
    case 2:
      return f.template operator()<2>();
    case 3:
      return f.template operator()<3>();
    case 4:
      return f.template operator()<4>();
    case 5:
      return f.template operator()<5>();
    case 6:
      return f.template operator()<6>();
    case 7:
      return f.template operator()<7>();
    default:
      return f.template operator()<8>();
  }
}

// ---- 512-bit steps (ISA files whose S sets kWide: AVX-512 VNNI) ------------------------------

template <class S>
concept WideSteps = S::kWide;

// Chunks 2p (low 256 bits) and 2p + 1 (high) of a super-block: the type's own pair decoding
// where it has one (Q4_K, Q6_K: quant_decode.h), else its two 256-bit chunks joined.
template <class S, class T>
TANDEM_QUANT_INLINE __m512i chunk_pair(const typename T::B& b, int p) {
  if constexpr (requires { T::template chunk_pair<S>(b, p); }) {
    return T::template chunk_pair<S>(b, p);
  } else {
    return _mm512_inserti64x4(_mm512_castsi256_si512(T::template chunk<S>(b, 2 * p)),
                              T::template chunk<S>(b, 2 * p + 1), 1);
  }
}

// chunk_scale for chunks 2p and 2p + 1 side by side (wide: a group half's scales in every
// 128-bit lane, as GroupScales holds them). A template only so that the AVX2 files, which
// include this header too, never compile a 512-bit signature.
template <class S>
TANDEM_QUANT_INLINE __m512i pair_scale(__m512i wide, int p) {
  const __m512i spread =
      _mm512_inserti64x4(_mm512_castsi256_si512(chunk_spread(2 * p)), chunk_spread(2 * p + 1), 1);
  return _mm512_shuffle_epi8(wide, spread);
}

// A super-block's eight chunks, decoded two at a time for the 512-bit steps.
template <class S, class T>
TANDEM_QUANT_INLINE void chunk_pairs(const typename T::B& b, __m512i (&pairs)[4]) {
  for (int p = 0; p < 4; ++p) pairs[p] = chunk_pair<S, T>(b, p);
}

// A super-block's decoded chunk pairs against the activations in 512-bit steps: the same
// int32 products and scales as the 256-bit loop, summed in another order, which integer
// sums do not notice.
template <class S, class T>
TANDEM_QUANT_INLINE __m256i wide_chunk_sums(const __m512i (&pairs)[4], const GroupScales& g,
                                            const int8_t* xq) {
  const __m512i low = _mm512_broadcast_i64x4(g.low), high = _mm512_broadcast_i64x4(g.high);
  __m512i acc = _mm512_setzero_si512();
  for (int p = 0; p < 4; ++p) {
    const __m512i pr = _mm512_maddubs_epi16(pairs[p], _mm512_loadu_si512(xq + 64 * p));
    acc = _mm512_dpwssd_epi32(acc, pr, pair_scale<S>(p < 2 ? low : high, p));
  }
  return _mm256_add_epi32(_mm512_castsi512_si256(acc), _mm512_extracti64x4_epi64(acc, 1));
}

// The dot of 64 quants (two legacy blocks) with 64 activations: int32 lanes 0-7 the first
// block's partial sums, 8-15 the second's. IQ4's signed quants as in dot4: |w|, and x with
// w's sign (AVX-512 has no vpsignb: x negated under the mask of w's sign bits; w = 0 gives 0).
template <class S, class T>
TANDEM_QUANT_INLINE __m512i wide_dot4(__m512i w, __m512i x) {
  if constexpr (T::kSigned) {
    const __m512i zero = _mm512_setzero_si512();
    return _mm512_dpbusd_epi32(zero, _mm512_abs_epi8(w),
                               _mm512_mask_sub_epi8(x, _mm512_movepi8_mask(w), zero, x));
  }
  return _mm512_dpbusd_epi32(_mm512_setzero_si512(), w, x);
}

// Four pairs' partial sums (v[p]: blocks 2p and 2p + 1, eight lanes each) to the eight
// blocks' sums in order. Adding lanes within each 128-bit lane, across the four vectors at
// once, leaves lane 4L + p the sum of v[p]'s 128-bit lane L; then lanes L and L + 1 hold
// the halves of one block.
template <class S>
TANDEM_QUANT_INLINE __m256i pair_block_sums(const __m512i (&v)[4]) {
  const __m512i s01 =
      _mm512_add_epi32(_mm512_unpacklo_epi32(v[0], v[1]), _mm512_unpackhi_epi32(v[0], v[1]));
  const __m512i s23 =
      _mm512_add_epi32(_mm512_unpacklo_epi32(v[2], v[3]), _mm512_unpackhi_epi32(v[2], v[3]));
  const __m512i s =
      _mm512_add_epi32(_mm512_unpacklo_epi64(s01, s23), _mm512_unpackhi_epi64(s01, s23));
  // Lanes 0-3: blocks 0, 2, 4, 6; lanes 8-11: blocks 1, 3, 5, 7.
  const __m512i t = _mm512_add_epi32(s, _mm512_shuffle_i32x4(s, s, _MM_SHUFFLE(2, 3, 0, 1)));
  const __m512i order = _mm512_setr_epi32(0, 8, 1, 9, 2, 10, 3, 11, 0, 0, 0, 0, 0, 0, 0, 0);
  return _mm512_castsi512_si256(_mm512_permutexvar_epi32(order, t));
}

// A legacy span's `count` blocks decoded two per 512-bit vector (pair p: blocks 2p, 2p + 1).
// A lone last block takes the 256-bit decoding, zero-extended; pairs past the span are 0.
template <class S, class T>
TANDEM_QUANT_INLINE void wide_legacy_quants(const typename T::B* b, int count, __m512i (&w)[4]) {
  for (int p = 0; p < 4; ++p) {
    if (2 * p + 1 < count) {
      w[p] = T::template quant_pair<S>(b[2 * p], b[2 * p + 1]);
    } else if (2 * p < count) {
      w[p] = _mm512_zextsi256_si512(T::template quants<S>(b[2 * p]));
    } else {
      w[p] = _mm512_setzero_si512();
    }
  }
}

// The exact dots of those blocks with the activations at xq, as sum_each of the 256-bit
// dots gives them, two blocks per 512-bit step (nothing past the row's end is read).
template <class S, class T>
TANDEM_QUANT_INLINE __m256i wide_legacy_sums(const __m512i (&w)[4], int count, const int8_t* xq) {
  __m512i v[4];
  for (int p = 0; p < 4; ++p) {
    if (2 * p + 1 < count) {
      v[p] = wide_dot4<S, T>(w[p], _mm512_loadu_si512(xq + 64 * p));
    } else if (2 * p < count) {
      v[p] = wide_dot4<S, T>(w[p], _mm512_zextsi256_si512(load32(xq + 64 * p)));
    } else {
      v[p] = _mm512_setzero_si512();
    }
  }
  return pair_block_sums<S>(v);
}

// Whether a span's eight blocks of B fit span_words' three vectors (Q8_0's 272 bytes do not:
// its scales are read block by block).
template <class B>
constexpr bool kSpanWordsFit = sizeof(B) % 2 == 0 && sizeof(B) * 8 <= 192;

// A legacy span's first 96 16-bit words (8 blocks are 72 to 96), each vector loaded under
// the mask of the span's own `count` blocks: nothing past them is read or faulted on.
template <class S, class B>
TANDEM_QUANT_INLINE void span_words(const B* b, int count, __m512i (&w)[3]) {
  static_assert(kSpanWordsFit<B>);
  const int words = count * static_cast<int>(sizeof(B) / 2);
  for (int i = 0; i < 3; ++i) {
    const int left = words - 32 * i;
    const __mmask32 mask = left >= 32 ? ~0u : left <= 0 ? 0u : (1u << left) - 1;
    w[i] = _mm512_maskz_loadu_epi16(mask, reinterpret_cast<const uint8_t*>(b) + 64 * i);
  }
}

// The word of the field at byte kOffset of each of a span's eight blocks (vpermw's index).
template <class B, size_t kOffset>
struct FieldWords {
  static constexpr int kStride = sizeof(B) / 2, kAt = kOffset / 2;
  struct Index {
    short word[32];
  };
  alignas(64) static constexpr Index kIndex = [] {
    Index index{};
    for (int c = 0; c < 8; ++c) index.word[c] = static_cast<short>(kAt + c * kStride);
    return index;
  }();
  // The lanes whose word lies past the first 64.
  static constexpr __mmask32 kThird = [] {
    __mmask32 m = 0;
    for (int c = 0; c < 8; ++c) m |= (kAt + c * kStride >= 64 ? 1u : 0u) << c;
    return m;
  }();
};

// block_halves from span_words: the field at byte kOffset of each of `count` blocks, as
// floats (the rest 0), picked out by word permutes instead of a scalar load per block.
template <class S, class B, size_t kOffset>
TANDEM_QUANT_INLINE __m256 span_halves(const __m512i (&w)[3], int count) {
  using F = FieldWords<B, kOffset>;
  const __m512i index = _mm512_load_si512(F::kIndex.word);
  // Words 0-63 from the first two vectors; lanes whose word is 64 or more from the third
  // (whose 32 words the index's low five bits pick).
  __m512i v = _mm512_permutex2var_epi16(w[0], index, w[1]);
  if constexpr (F::kThird != 0) v = _mm512_mask_permutexvar_epi16(v, F::kThird, index, w[2]);
  const __mmask32 live = (1u << count) - 1;
  return _mm256_cvtph_ps(_mm512_castsi512_si128(_mm512_maskz_mov_epi16(live, v)));
}

}  // namespace
}  // namespace tandem::kernels::detail
