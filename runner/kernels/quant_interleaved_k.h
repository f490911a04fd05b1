// The 512-bit VNNI kernels for the K-quants and IQ4_XS weights interleaved by sixteen rows
// (quant_interleave.h: Q2KRecord .. Q6KRecord, Iq4XsRecord), for
// avx512/quant_matmul.cpp. As for the legacy types (quant_interleaved.h), each lane holds one
// weight row: a step of four quants is one vpdpbusd into every row's sum, with the four activations
// broadcast, and a super-block's integer and float steps run sixteen rows wide, in finish_super's
// order (quant_matmul.h):
//   isum  = sum over the 16-value groups g of scale[g] * (the group's integer dot),
//   summs = sum over g of min[g] * the activations' sum over g (Q2_K, Q4_K, Q5_K; else 0),
//   acc  += (d * xd) * float(isum) - (dmin * xd) * float(summs).
// The integers are exact, so any order of the products gives finish_super's isum and summs,
// and every row gets the portable form's bits at any batch. Q6_K's quants are kept unsigned
// (0 .. 63) for vpdpbusd: a group's dot is then the unsigned one less 32 times the
// activations' sum over the group, exactly the dot of the signed quants; Q3_K's (0 .. 7)
// likewise less 4 times, IQ4_XS's table values 128 more, and 128 times the sum less.
// Everything sits in an anonymous namespace and uses no standard-library template, for the
// reason tile_loop.h gives.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "runner/kernels/quant_interleave.h"
#include "runner/kernels/quant_interleaved.h"

namespace tandem::kernels::detail {
namespace {

// Activation row m's Q8_K quants, scales and 16-value sums (row-major ActRows).
struct SuperActRow {
  const int8_t* q;
  const float* d;
  const int32_t* bsums;
};
inline SuperActRow super_act_row(const ActRows& x, int64_t m) {
  const int64_t nb = x.n_in / 256;
  return {x.q + m * x.n_in, x.d + m * nb, x.bsums + m * nb * 16};
}

// finish_super's float step for sixteen rows: acc + ((d * xd) * isum - (dmin * xd) * summs).
TANDEM_QUANT_INLINE __m512 finish_super_lanes(__m512 acc, __m512 d, __m512 dmin, float xd,
                                              __m512i isum, __m512i summs) {
  const __m512 x = _mm512_set1_ps(xd);
  const __m512 dot = _mm512_mul_ps(_mm512_mul_ps(d, x), _mm512_cvtepi32_ps(isum));
  const __m512 mins = _mm512_mul_ps(_mm512_mul_ps(dmin, x), _mm512_cvtepi32_ps(summs));
  return _mm512_add_ps(acc, _mm512_sub_ps(dot, mins));
}

// Sixteen F16 values to floats.
TANDEM_QUANT_INLINE __m512 halves16(const uint8_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

// Two 16-value groups (scale groups g and g + 1) into every row's isum, each group's dot
// weighted by its lane scale: quants q[0 .. 3] against row m's activations at x[m] + at,
// q[4 .. 7] at + 16. With offs, the dots start at offs[m][g] and offs[m][g + 1] (for unsigned
// quants, the negated amount they stand above the signed ones); else at 0 (Q2_K).
template <int R>
TANDEM_QUANT_INLINE void add_group_pair(const __m512i (&q)[8], const int8_t* const (&x)[R], int at,
                                        const int32_t (*offs)[16], int g, __m512i sc0, __m512i sc1,
                                        __m512i (&isum)[R]) {
  for (int m = 0; m < R; ++m) {
    const int8_t* xq = x[m] + at;
    __m512i s0 = _mm512_setzero_si512(), s1 = s0;
    if (offs != nullptr) {
      s0 = _mm512_set1_epi32(offs[m][g]);
      s1 = _mm512_set1_epi32(offs[m][g + 1]);
    }
    for (int u = 0; u < 4; ++u) {
      s0 = dot4_lanes(s0, q[u], xq + 4 * u);
      s1 = dot4_lanes(s1, q[4 + u], xq + 16 + 4 * u);
    }
    isum[m] = _mm512_add_epi32(
        isum[m], _mm512_add_epi32(_mm512_mullo_epi32(sc0, s0), _mm512_mullo_epi32(sc1, s1)));
  }
}

// Row m's quants and 16-value sums at the super-block a kernel's block() is given.
template <int R>
struct SuperRows {
  const int8_t* x[R];
  const int32_t* bs[R];
};

// out[m][g] = kFactor * row m's activation sum over group g (kPairs: over sub-block g / 2,
// at even g). With kFactor the negated amount that unsigned quants stand above the real
// ones, a group's dot starts there.
template <int kFactor, bool kPairs, int R>
TANDEM_QUANT_INLINE void scaled_sums(const SuperRows<R>& rows, int32_t (&out)[R][16]) {
  for (int m = 0; m < R; ++m) {
    __m512i sums = _mm512_loadu_si512(rows.bs[m]);
    if constexpr (kPairs) sums = _mm512_add_epi32(sums, _mm512_srli_epi64(sums, 32));
    _mm512_store_si512(out[m], _mm512_mullo_epi32(sums, _mm512_set1_epi32(kFactor)));
  }
}

// The loop every type shares: out[m][r] = weight row r of the group dotted with activation
// row m0 + m, every m < R. K gives its record (K::kBytes, K::kD, and K::kDmin where
// K::kMins), K::block<R>(rec, rows, isum), which adds one super-block's integer dots for
// every row, and where K::kMins K::mins<R>(rec, rows, summs), their mins' sums: a pass of its
// own after the dots, so that no row's summs holds a register while they run (in one pass a
// Q4_K step of 8 and 32 rows ran 35.1 -> 39.3 and 119 -> 137 us).
template <class K, int R>
void super_group(const uint8_t* group, const ActRows& x, int64_t m0, float (*out)[16]) {
  const int64_t nb = x.n_in / 256;
  SuperActRow act[R];
  __m512 acc[R];
  for (int m = 0; m < R; ++m) {
    act[m] = super_act_row(x, m0 + m);
    acc[m] = _mm512_setzero_ps();
  }
  for (int64_t i = 0; i < nb; ++i) {
    const uint8_t* rec = group + i * K::kBytes;
    prefetch_record<K::kBytes, (R > 1)>(rec);
    SuperRows<R> rows;
    __m512i isum[R], summs[R];
    for (int m = 0; m < R; ++m) {
      rows.x[m] = act[m].q + 256 * i;
      rows.bs[m] = act[m].bsums + 16 * i;
      isum[m] = summs[m] = _mm512_setzero_si512();
    }
    K::template block<R>(rec, rows, isum);
    const __m512 d = halves16(rec + K::kD);
    __m512 dmin = _mm512_setzero_ps();
    if constexpr (K::kMins) {
      K::template mins<R>(rec, rows, summs);
      dmin = halves16(rec + K::kDmin);
    }
    for (int m = 0; m < R; ++m)
      acc[m] = finish_super_lanes(acc[m], d, dmin, act[m].d[i], isum[m], summs[m]);
  }
  for (int m = 0; m < R; ++m) _mm512_storeu_ps(out[m], acc[m]);
}

// K as interleaved_rows' G (quant_interleaved.h).
template <class K>
struct SuperGroup {
  static constexpr int64_t kValues = 256;
  static constexpr size_t kRecordBytes = K::kBytes;
  template <class S, int R>
  static void run(const uint8_t* group, const ActRows& x, int64_t m0, float (*out)[16]) {
    super_group<K, R>(group, x, m0, out);
  }
};

// ---- Q4_K ---------------------------------------------------------------------------------

// Scales and mins J and J + 4 of every row lane, from the scales' three words (w0: bytes
// 0-3, w1: 4-7, w2: 8-11): k4_scales_mins sixteen rows wide.
template <int J>
TANDEM_QUANT_INLINE void k4_lane_scales_pair(const __m512i (&w)[3], __m512i (&sc)[8],
                                             __m512i (&mn)[8]) {
  const __m512i six = _mm512_set1_epi32(63), four = _mm512_set1_epi32(15),
                two = _mm512_set1_epi32(3);
  sc[J] = _mm512_and_si512(_mm512_srli_epi32(w[0], 8 * J), six);
  mn[J] = _mm512_and_si512(_mm512_srli_epi32(w[1], 8 * J), six);
  const __m512i sc_high = _mm512_and_si512(_mm512_srli_epi32(w[0], 8 * J + 6), two);
  const __m512i mn_high = _mm512_and_si512(_mm512_srli_epi32(w[1], 8 * J + 6), two);
  sc[J + 4] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(w[2], 8 * J), four),
                              _mm512_slli_epi32(sc_high, 4));
  mn[J + 4] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(w[2], 8 * J + 4), four),
                              _mm512_slli_epi32(mn_high, 4));
}

// (Q4_K and Q5_K records keep the scales' words at the same place.)
TANDEM_QUANT_INLINE void k4_lane_scales(const uint8_t* rec, __m512i (&sc)[8], __m512i (&mn)[8]) {
  static_assert(Q4KRecord::kScales == Q5KRecord::kScales);
  const __m512i w[3] = {_mm512_loadu_si512(rec + Q4KRecord::kScales),
                        _mm512_loadu_si512(rec + Q4KRecord::kScales + 64),
                        _mm512_loadu_si512(rec + Q4KRecord::kScales + 128)};
  k4_lane_scales_pair<0>(w, sc, mn);
  k4_lane_scales_pair<1>(w, sc, mn);
  k4_lane_scales_pair<2>(w, sc, mn);
  k4_lane_scales_pair<3>(w, sc, mn);
}

// A quant's fifth bit: bit B of `bits`' bytes moved to 0x10 (B a literal).
template <int B>
TANDEM_QUANT_INLINE __m512i fifth_bit(__m512i bits) {
  if constexpr (B <= 4) return _mm512_slli_epi16(bits, 4 - B);
  return _mm512_srli_epi16(bits, B - 4);
}

// A low nibble (masked) with the bit of `high` at 0x10 (ternary-logic 0xF8: a | (b & c)).
TANDEM_QUANT_INLINE __m512i five_bits(__m512i nibble, __m512i high) {
  return _mm512_ternarylogic_epi32(nibble, high, _mm512_set1_epi8(0x10), 0xF8);
}

// Pair P of a super-block's sub-blocks (quants 64P .. 64P + 63: qs words 8P .. 8P + 7, word
// 8P + u's low nibbles quants 64P + 4u .. + 3 under scale 2P, its high ones 64P + 32 + 4u ..
// under scale 2P + 1; for Q5_K (kFifth) their fifth bits are bits 2P and 2P + 1 of qh word
// u, as unpack_q5_k reads them) into every row's isum; x[m]: row m's super-block quants.
template <bool kFifth, int P, int R>
TANDEM_QUANT_INLINE void k4_pair(const uint8_t* rec, const int8_t* const (&x)[R],
                                 const __m512i (&sc)[8], __m512i (&isum)[R]) {
  constexpr size_t kQs = kFifth ? Q5KRecord::kQs : Q4KRecord::kQs;
  const __m512i low = _mm512_set1_epi8(0x0F);
  __m512i q[16];  // q[u]: quants 64P + 4u ..; q[8 + u]: 64P + 32 + 4u ..
  for (int u = 0; u < 8; ++u) {
    const __m512i v = _mm512_loadu_si512(rec + kQs + 64 * (8 * P + u));
    q[u] = _mm512_and_si512(v, low);
    q[8 + u] = _mm512_and_si512(_mm512_srli_epi16(v, 4), low);
    if constexpr (kFifth) {
      const __m512i bits = _mm512_loadu_si512(rec + Q5KRecord::kQh + 64 * u);
      q[u] = five_bits(q[u], fifth_bit<2 * P>(bits));
      q[8 + u] = five_bits(q[8 + u], fifth_bit<2 * P + 1>(bits));
    }
  }
  for (int m = 0; m < R; ++m) {
    const int8_t* xq = x[m] + 64 * P;
    __m512i a0 = _mm512_setzero_si512(), a1 = a0, b0 = a0, b1 = a0;
    for (int u = 0; u < 8; u += 2) {
      a0 = dot4_lanes(a0, q[u], xq + 4 * u);
      a1 = dot4_lanes(a1, q[u + 1], xq + 4 * u + 4);
      b0 = dot4_lanes(b0, q[8 + u], xq + 32 + 4 * u);
      b1 = dot4_lanes(b1, q[9 + u], xq + 36 + 4 * u);
    }
    const __m512i lo = _mm512_mullo_epi32(sc[2 * P], _mm512_add_epi32(a0, a1));
    const __m512i hi = _mm512_mullo_epi32(sc[2 * P + 1], _mm512_add_epi32(b0, b1));
    isum[m] = _mm512_add_epi32(isum[m], _mm512_add_epi32(lo, hi));
  }
}

// Q4_K, or Q5_K where kFifth, as super_group's K.
template <bool kFifth>
struct K4Interleaved {
  using Rec = Q4KRecord;
  static_assert(Rec::kD == Q5KRecord::kD && Rec::kDmin == Q5KRecord::kDmin);
  static constexpr size_t kBytes = kFifth ? Q5KRecord::kBytes : Rec::kBytes;
  static constexpr size_t kD = Rec::kD, kDmin = Rec::kDmin;
  static constexpr bool kMins = true;
  template <int R>
  TANDEM_QUANT_INLINE static void block(const uint8_t* rec, const SuperRows<R>& rows,
                                        __m512i (&isum)[R]) {
    __m512i sc[8], mn[8];
    k4_lane_scales(rec, sc, mn);
    k4_pair<kFifth, 0, R>(rec, rows.x, sc, isum);
    k4_pair<kFifth, 1, R>(rec, rows.x, sc, isum);
    k4_pair<kFifth, 2, R>(rec, rows.x, sc, isum);
    k4_pair<kFifth, 3, R>(rec, rows.x, sc, isum);
  }
  template <int R>
  TANDEM_QUANT_INLINE static void mins(const uint8_t* rec, const SuperRows<R>& rows,
                                       __m512i (&summs)[R]) {
    __m512i sc[8], mn[8];
    k4_lane_scales(rec, sc, mn);
    alignas(64) int32_t pairs[R][16];  // the sums per sub-block j, at 2j
    scaled_sums<1, true, R>(rows, pairs);
    for (int m = 0; m < R; ++m)
      for (int j = 0; j < 8; ++j)
        summs[m] = _mm512_add_epi32(summs[m],
                                    _mm512_mullo_epi32(mn[j], _mm512_set1_epi32(pairs[m][2 * j])));
  }
};

// ---- Q6_K ---------------------------------------------------------------------------------

// Byte J of every lane of w, sign-extended.
template <int J>
TANDEM_QUANT_INLINE __m512i lane_byte(__m512i w) {
  return _mm512_srai_epi32(_mm512_slli_epi32(w, 24 - 8 * J), 24);
}

// The sixteen signed scales of every row lane, from the scales' four words.
TANDEM_QUANT_INLINE void q6_k_lane_scales(const uint8_t* rec, __m512i (&sc)[16]) {
  for (int k = 0; k < 4; ++k) {
    const __m512i w = _mm512_loadu_si512(rec + Q6KRecord::kScales + 64 * k);
    sc[4 * k] = lane_byte<0>(w);
    sc[4 * k + 1] = lane_byte<1>(w);
    sc[4 * k + 2] = lane_byte<2>(w);
    sc[4 * k + 3] = lane_byte<3>(w);
  }
}

// Six-bit quants: a low nibble (masked) with the two bits of `high` at 0x30 (ternary-logic
// 0xF8: a | (b & c)).
TANDEM_QUANT_INLINE __m512i six_bits(__m512i nibble, __m512i high) {
  return _mm512_ternarylogic_epi32(nibble, high, _mm512_set1_epi8(0x30), 0xF8);
}

// Quarter (N, H) of a super-block into every row's isum. Half N (quants 128N ..) is ql words
// 16N .. 16N + 15 and qh words 8N .. 8N + 7; for u < 8, ql words 16N + u and 16N + 8 + u and
// qh word 8N + u make four steps, class c of them quants 128N + 32c + 4u .. (unpack_q6_k):
// c = 0 the first word's low nibbles with qh bits 0-1, c = 1 the second's with bits 2-3,
// c = 2 the first's high nibbles with bits 4-5, c = 3 the second's with bits 6-7. Sixteen
// values of a class make scale group 8N + 2c + (u >= 4), so a quarter takes u = 4H .. 4H + 3.
// x[m]: row m's super-block quants; offs[m][g]: -32 * its group g's sum, where the signed
// quants' dot starts.
template <int N, int H, int R>
TANDEM_QUANT_INLINE void q6_k_quarter(const uint8_t* rec, const int8_t* const (&x)[R],
                                      const int32_t (&offs)[R][16], const __m512i (&sc)[16],
                                      __m512i (&isum)[R]) {
  using Rec = Q6KRecord;
  const __m512i low = _mm512_set1_epi8(0x0F);
  __m512i q[4][4];  // q[c][k]: class c, u = 4H + k
  for (int k = 0; k < 4; ++k) {
    const int u = 4 * H + k;
    const __m512i first = _mm512_loadu_si512(rec + Rec::kQl + 64 * (16 * N + u));
    const __m512i second = _mm512_loadu_si512(rec + Rec::kQl + 64 * (16 * N + 8 + u));
    const __m512i bits = _mm512_loadu_si512(rec + Rec::kQh + 64 * (8 * N + u));
    q[0][k] = six_bits(_mm512_and_si512(first, low), _mm512_slli_epi16(bits, 4));
    q[1][k] = six_bits(_mm512_and_si512(second, low), _mm512_slli_epi16(bits, 2));
    q[2][k] = six_bits(_mm512_and_si512(_mm512_srli_epi16(first, 4), low), bits);
    q[3][k] =
        six_bits(_mm512_and_si512(_mm512_srli_epi16(second, 4), low), _mm512_srli_epi16(bits, 2));
  }
  for (int m = 0; m < R; ++m) {
    const int8_t* xq = x[m] + 128 * N + 16 * H;
    for (int c = 0; c < 4; ++c) {
      const int g = 8 * N + 2 * c + H;
      __m512i s = _mm512_set1_epi32(offs[m][g]);
      for (int k = 0; k < 4; ++k) s = dot4_lanes(s, q[c][k], xq + 32 * c + 4 * k);
      isum[m] = _mm512_add_epi32(isum[m], _mm512_mullo_epi32(sc[g], s));
    }
  }
}

// Q6_K as super_group's K.
struct Q6KInterleaved {
  using Rec = Q6KRecord;
  static constexpr size_t kBytes = Rec::kBytes, kD = Rec::kD, kDmin = 0;
  static constexpr bool kMins = false;
  template <int R>
  TANDEM_QUANT_INLINE static void block(const uint8_t* rec, const SuperRows<R>& rows,
                                        __m512i (&isum)[R]) {
    __m512i sc[16];
    q6_k_lane_scales(rec, sc);
    alignas(64) int32_t offs[R][16];
    scaled_sums<-32, false, R>(rows, offs);
    q6_k_quarter<0, 0, R>(rec, rows.x, offs, sc, isum);
    q6_k_quarter<0, 1, R>(rec, rows.x, offs, sc, isum);
    q6_k_quarter<1, 0, R>(rec, rows.x, offs, sc, isum);
    q6_k_quarter<1, 1, R>(rec, rows.x, offs, sc, isum);
  }
};

// ---- Q2_K -----------------------------------------------------------------------------------

// Group g's scale (kShift 0) or min (4) in every row lane: a nibble of byte g % 4 of scales
// word g / 4.
inline __m512i q2_k_nibbles(const __m512i (&w)[4], int g, int shift) {
  const __m512i word = _mm512_srl_epi32(w[g / 4], _mm_cvtsi32_si128(8 * (g % 4) + shift));
  return _mm512_and_si512(word, _mm512_set1_epi32(15));
}

// Quants 128N + 32S .. + 31 (scale groups G = 8N + 2S and G + 1) into every row's isum
// (unpack_q2_k: the two bits at 2S of qs word 8N + u are quants 128N + 32S + 4u .. + 3).
template <int N, int S, int R>
TANDEM_QUANT_INLINE void q2_k_quarter(const uint8_t* rec, const int8_t* const (&x)[R],
                                      const __m512i (&w)[4], __m512i (&isum)[R]) {
  constexpr int G = 8 * N + 2 * S;
  const __m512i sc0 = q2_k_nibbles(w, G, 0), sc1 = q2_k_nibbles(w, G + 1, 0);
  const __m512i two = _mm512_set1_epi8(3);
  __m512i q[8];
  for (int u = 0; u < 8; ++u) {
    const __m512i qs = _mm512_loadu_si512(rec + Q2KRecord::kQs + 64 * (8 * N + u));
    q[u] = _mm512_and_si512(_mm512_srli_epi16(qs, 2 * S), two);
  }
  add_group_pair<R>(q, x, 128 * N + 32 * S, nullptr, G, sc0, sc1, isum);
}

// Q2_K as super_group's K.
struct Q2KInterleaved {
  using Rec = Q2KRecord;
  static constexpr size_t kBytes = Rec::kBytes, kD = Rec::kD, kDmin = Rec::kDmin;
  static constexpr bool kMins = true;
  static void scale_words(const uint8_t* rec, __m512i (&w)[4]) {
    for (int k = 0; k < 4; ++k) w[k] = _mm512_loadu_si512(rec + Rec::kScales + 64 * k);
  }
  template <int R>
  TANDEM_QUANT_INLINE static void block(const uint8_t* rec, const SuperRows<R>& rows,
                                        __m512i (&isum)[R]) {
    __m512i w[4];
    scale_words(rec, w);
    q2_k_quarter<0, 0, R>(rec, rows.x, w, isum);
    q2_k_quarter<0, 1, R>(rec, rows.x, w, isum);
    q2_k_quarter<0, 2, R>(rec, rows.x, w, isum);
    q2_k_quarter<0, 3, R>(rec, rows.x, w, isum);
    q2_k_quarter<1, 0, R>(rec, rows.x, w, isum);
    q2_k_quarter<1, 1, R>(rec, rows.x, w, isum);
    q2_k_quarter<1, 2, R>(rec, rows.x, w, isum);
    q2_k_quarter<1, 3, R>(rec, rows.x, w, isum);
  }
  template <int R>
  TANDEM_QUANT_INLINE static void mins(const uint8_t* rec, const SuperRows<R>& rows,
                                       __m512i (&summs)[R]) {
    __m512i w[4];
    scale_words(rec, w);
    for (int g = 0; g < 16; ++g) {
      const __m512i mn = q2_k_nibbles(w, g, 4);
      for (int m = 0; m < R; ++m)
        summs[m] =
            _mm512_add_epi32(summs[m], _mm512_mullo_epi32(mn, _mm512_set1_epi32(rows.bs[m][g])));
    }
  }
};

// ---- Q3_K -----------------------------------------------------------------------------------

// Bit B of `bits`' bytes moved to 0x04 (B a literal).
template <int B>
TANDEM_QUANT_INLINE __m512i high_bit_at_2(__m512i bits) {
  if constexpr (B <= 2) return _mm512_slli_epi16(bits, 2 - B);
  return _mm512_srli_epi16(bits, B - 2);
}

// Bits 4 and 5 of q3_k_scales' word for scales 4k .. 4k + 3: two bits at kShift of each
// byte of the third scales word, moved to 4.
template <int kShift>
TANDEM_QUANT_INLINE __m512i q3_k_high_bits(__m512i third) {
  const __m512i bits = _mm512_srli_epi32(third, kShift);
  return _mm512_slli_epi32(_mm512_and_si512(bits, _mm512_set1_epi32(0x03030303)), 4);
}

// The sixteen 6-bit scales of every row lane, as q3_k_scales unpacks them (its 32-bit steps
// run lane-wide), each at byte g % 4 of word g / 4, still offset by 32.
TANDEM_QUANT_INLINE void q3_k_lane_scale_words(const uint8_t* rec, __m512i (&a)[4]) {
  const __m512i w0 = _mm512_loadu_si512(rec + Q3KRecord::kScales);
  const __m512i w1 = _mm512_loadu_si512(rec + Q3KRecord::kScales + 64);
  const __m512i third = _mm512_loadu_si512(rec + Q3KRecord::kScales + 128);
  const __m512i m4 = _mm512_set1_epi32(0x0f0f0f0f);
  a[0] = _mm512_or_si512(_mm512_and_si512(w0, m4), q3_k_high_bits<0>(third));
  a[1] = _mm512_or_si512(_mm512_and_si512(w1, m4), q3_k_high_bits<2>(third));
  a[2] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(w0, 4), m4), q3_k_high_bits<4>(third));
  a[3] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(w1, 4), m4), q3_k_high_bits<6>(third));
}

// Scale group G (0 .. 15) of every row lane, signed.
template <int G>
TANDEM_QUANT_INLINE __m512i q3_k_lane_scale(const __m512i (&a)[4]) {
  const __m512i byte =
      _mm512_and_si512(_mm512_srli_epi32(a[G / 4], 8 * (G % 4)), _mm512_set1_epi32(0xFF));
  return _mm512_sub_epi32(byte, _mm512_set1_epi32(32));
}

// Quants 128N + 32S .. + 31 (two scale groups, 8N + 2S and the next) into every row's isum
// (unpack_q3_k): for u < 8 the two bits at 2S of qs word 8N + u and bit 4N + S of hmask word
// u make quants 128N + 32S + 4u .. + 3, unsigned (0 .. 7). offs[m][g]: -4 * row m's
// activation sum over group g, where the signed dot starts.
template <int N, int S, int R>
TANDEM_QUANT_INLINE void q3_k_quarter(const uint8_t* rec, const int8_t* const (&x)[R],
                                      const int32_t (&offs)[R][16], const __m512i (&a)[4],
                                      __m512i (&isum)[R]) {
  constexpr int G = 8 * N + 2 * S;
  const __m512i sc0 = q3_k_lane_scale<G>(a), sc1 = q3_k_lane_scale<G + 1>(a);
  const __m512i two = _mm512_set1_epi8(3), third = _mm512_set1_epi8(4);
  __m512i q[8];
  for (int u = 0; u < 8; ++u) {
    const __m512i qs = _mm512_loadu_si512(rec + Q3KRecord::kQs + 64 * (8 * N + u));
    const __m512i hm = _mm512_loadu_si512(rec + Q3KRecord::kHmask + 64 * u);
    const __m512i low = _mm512_and_si512(_mm512_srli_epi16(qs, 2 * S), two);
    q[u] = _mm512_ternarylogic_epi32(low, high_bit_at_2<4 * N + S>(hm), third, 0xF8);
  }
  add_group_pair<R>(q, x, 128 * N + 32 * S, offs, G, sc0, sc1, isum);
}

// Q3_K as super_group's K.
struct Q3KInterleaved {
  using Rec = Q3KRecord;
  static constexpr size_t kBytes = Rec::kBytes, kD = Rec::kD, kDmin = 0;
  static constexpr bool kMins = false;
  template <int R>
  TANDEM_QUANT_INLINE static void block(const uint8_t* rec, const SuperRows<R>& rows,
                                        __m512i (&isum)[R]) {
    __m512i a[4];
    q3_k_lane_scale_words(rec, a);
    alignas(64) int32_t offs[R][16];
    scaled_sums<-4, false, R>(rows, offs);
    q3_k_quarter<0, 0, R>(rec, rows.x, offs, a, isum);
    q3_k_quarter<0, 1, R>(rec, rows.x, offs, a, isum);
    q3_k_quarter<0, 2, R>(rec, rows.x, offs, a, isum);
    q3_k_quarter<0, 3, R>(rec, rows.x, offs, a, isum);
    q3_k_quarter<1, 0, R>(rec, rows.x, offs, a, isum);
    q3_k_quarter<1, 1, R>(rec, rows.x, offs, a, isum);
    q3_k_quarter<1, 2, R>(rec, rows.x, offs, a, isum);
    q3_k_quarter<1, 3, R>(rec, rows.x, offs, a, isum);
  }
};

// ---- IQ4_XS ---------------------------------------------------------------------------------

// Sub-block IB's scale of every row lane, less 32 (Iq4Xs::unpack): four bits at 4 * IB of
// the scales_l word, two at 2 * IB of scales_h.
template <int IB>
TANDEM_QUANT_INLINE __m512i iq4_xs_lane_scale(__m512i low, __m512i high) {
  const __m512i l = _mm512_and_si512(_mm512_srli_epi32(low, 4 * IB), _mm512_set1_epi32(15));
  const __m512i h = _mm512_and_si512(_mm512_srli_epi32(high, 2 * IB), _mm512_set1_epi32(3));
  return _mm512_sub_epi32(_mm512_or_si512(l, _mm512_slli_epi32(h, 4)), _mm512_set1_epi32(32));
}

// Sub-blocks 2B and 2B + 1 (quants 64B ..) into every row's isum. Sub-block ib is qs words
// 4ib .. 4ib + 3: word 4ib + u's low nibbles index quants 32ib + 4u .. + 3, its high ones
// 32ib + 16 + 4u ... offs[m][2ib]: -128 * row m's activation sum over sub-block ib.
template <int B, int R>
TANDEM_QUANT_INLINE void iq4_xs_pair(const uint8_t* rec, const int8_t* const (&x)[R],
                                     const int32_t (&offs)[R][16], __m512i table,
                                     __m512i (&isum)[R]) {
  const __m512i low = _mm512_set1_epi8(0x0F);
  const __m512i scales_l = _mm512_loadu_si512(rec + Iq4XsRecord::kScalesL);
  const __m512i scales_h = _mm512_cvtepu16_epi32(
      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rec + Iq4XsRecord::kScalesH)));
  const __m512i sc[2] = {iq4_xs_lane_scale<2 * B>(scales_l, scales_h),
                         iq4_xs_lane_scale<2 * B + 1>(scales_l, scales_h)};
  __m512i q[16];  // sub-block 2B + h: q[8h + u] quants 32(2B + h) + 4u .., q[8h + 4 + u] + 16
  for (int h = 0; h < 2; ++h) {
    for (int u = 0; u < 4; ++u) {
      const __m512i v = _mm512_loadu_si512(rec + Iq4XsRecord::kQs + 64 * (8 * B + 4 * h + u));
      q[8 * h + u] = _mm512_shuffle_epi8(table, _mm512_and_si512(v, low));
      q[8 * h + 4 + u] = _mm512_shuffle_epi8(table, _mm512_and_si512(_mm512_srli_epi16(v, 4), low));
    }
  }
  for (int m = 0; m < R; ++m) {
    for (int h = 0; h < 2; ++h) {
      const int8_t* xq = x[m] + 64 * B + 32 * h;
      __m512i s0 = _mm512_set1_epi32(offs[m][2 * (2 * B + h)]), s1 = _mm512_setzero_si512();
      for (int u = 0; u < 4; ++u) {
        s0 = dot4_lanes(s0, q[8 * h + u], xq + 4 * u);
        s1 = dot4_lanes(s1, q[8 * h + 4 + u], xq + 16 + 4 * u);
      }
      isum[m] = _mm512_add_epi32(isum[m], _mm512_mullo_epi32(sc[h], _mm512_add_epi32(s0, s1)));
    }
  }
}

// IQ4_XS as super_group's K.
struct Iq4XsInterleaved {
  using Rec = Iq4XsRecord;
  static constexpr size_t kBytes = Rec::kBytes, kD = Rec::kD, kDmin = 0;
  static constexpr bool kMins = false;
  template <int R>
  TANDEM_QUANT_INLINE static void block(const uint8_t* rec, const SuperRows<R>& rows,
                                        __m512i (&isum)[R]) {
    const __m512i table = iq4_unsigned_table();
    alignas(64) int32_t offs[R][16];
    scaled_sums<-128, true, R>(rows, offs);
    iq4_xs_pair<0, R>(rec, rows.x, offs, table, isum);
    iq4_xs_pair<1, R>(rec, rows.x, offs, table, isum);
    iq4_xs_pair<2, R>(rec, rows.x, offs, table, isum);
    iq4_xs_pair<3, R>(rec, rows.x, offs, table, isum);
  }
};

// The 512-bit VNNI form's interleaved loop: the K-quants here, the blocks of 32 through
// LegacyGroup (quant_interleaved.h).
template <class S>
void interleaved_wide_loop(const QuantMatmulArgs& a, int64_t out_begin, int64_t out_end) {
  switch (a.kind) {
    case QuantKind::kQ2_K:
      return interleaved_rows<S, SuperGroup<Q2KInterleaved>>(a, out_begin, out_end);
    case QuantKind::kQ3_K:
      return interleaved_rows<S, SuperGroup<Q3KInterleaved>>(a, out_begin, out_end);
    case QuantKind::kQ4_K:
      return interleaved_rows<S, SuperGroup<K4Interleaved<false>>>(a, out_begin, out_end);
    case QuantKind::kQ5_K:
      return interleaved_rows<S, SuperGroup<K4Interleaved<true>>>(a, out_begin, out_end);
    case QuantKind::kQ6_K:
      return interleaved_rows<S, SuperGroup<Q6KInterleaved>>(a, out_begin, out_end);
    case QuantKind::kIq4Xs:
      return interleaved_rows<S, SuperGroup<Iq4XsInterleaved>>(a, out_begin, out_end);
    case QuantKind::kQ4_1:
      return interleaved_rows<S, LegacyGroup<QuantKind::kQ4_1>>(a, out_begin, out_end);
    case QuantKind::kQ5_1:
      return interleaved_rows<S, LegacyGroup<QuantKind::kQ5_1>>(a, out_begin, out_end);
    case QuantKind::kIq4Nl:
      return interleaved_rows<S, LegacyGroup<QuantKind::kIq4Nl>>(a, out_begin, out_end);
    case QuantKind::kQ8_0:
      return interleaved_rows<S, LegacyGroup<QuantKind::kQ8_0>>(a, out_begin, out_end);
    default:
      return interleaved_loop<S>(a, out_begin, out_end);
  }
}

}  // namespace
}  // namespace tandem::kernels::detail
