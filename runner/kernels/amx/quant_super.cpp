// AMX-INT8 form of the quantized matmul for batches on super-block weights interleaved by
// sixteen rows (quant_interleave.h): Q2_K to Q6_K and IQ4_XS, the bulk of the K-quant mixes
// and IQ4_XS files of models whose rows are whole super-blocks. Called from amx/quant_matmul.cpp's
// loop (same conditions: AMX-INT8 present and the tile state granted).
//
// finish_super's integers for one super-block are
//   isum  = sum over the 16-value groups g of sc[g] * (sum over g of q * x),
//   summs = sum over g of mn[g] * (sum over g of x)      (Q2_K, Q4_K and Q5_K; else 0),
// the quants q as the portable form unpacks them (Q6_K's less 32, Q3_K's less 4, IQ4_XS's the
// table's values). Both are dot products of
// the activations with a per-weight integer: isum's with v = sc[g(k)] * q[k] (at most 4096
// in magnitude, so int16) and summs' with mn[g(k)] (0-63, a byte). So a group of sixteen
// weight rows is decoded once into B tiles of v's low byte (signed, -128..127), its high
// part ((v + 128) >> 8, so that v = 256 * hi + lo) and the mins, and TDPBSSD computes
//   C_lo = x . lo,  C_hi = x . hi,  C_min = x . mn     (K = 64 a step, 256 a super-block),
// whence isum = C_lo + 256 * C_hi and summs = C_min, the same int32 (no partial sum comes
// near 2^31). The float steps then are finish_super's, sixteen outputs wide and in its order:
// acc + ((d * xd) * float(isum) - (dmin * xd) * float(summs)). Every output therefore has
// the portable and VNNI forms' bits at every batch (law 2), and the tests hold it to them.
// Where the blocks of 32 need a tile store per block (amx/quant_matmul.cpp), a super-block
// here needs three for 256 values.
#include <immintrin.h>

#include "runner/kernels/amx/quant_tiles.h"
#include "runner/kernels/quant_interleaved_k.h"

namespace tandem::kernels::detail {
namespace {

constexpr int kChunks = 4;              // a super-block's 256 values as 4 steps of K = 64
constexpr size_t kStepBytes = 16 * 64;  // one B tile: 16 rows of four values x 16 outputs
constexpr size_t kPlaneBytes = kChunks * kStepBytes;  // a super-block's B tiles of one kind
// Groups of sixteen weight rows decoded together (each tile of activation rows passes over
// all of them, as in amx/quant_matmul.cpp), at most: the first chunks ramp up to it.
constexpr int64_t kChunkGroups = 4;

// A super-block of a group decoded for the tiles: the lo, hi and (with mins) mn planes, each
// kChunks B tiles, then d and dmin as floats.
struct SuperTiles {
  static constexpr size_t kLo = 0, kHi = kPlaneBytes, kMn = 2 * kPlaneBytes, kD = 3 * kPlaneBytes,
                          kDmin = kD + 64, kBytes = kDmin + 64;
};

// Tiles 0-2: the sums C_lo, C_hi, C_min (rows x 16 int32); 3 and 4: activations (rows x 64
// bytes), alternating by step; 5-7: the lo, hi and mn weights (16 x 64 bytes).
void configure(int rows) {
  TileConfig c;
  const auto r = static_cast<uint8_t>(rows);
  for (int t = 0; t < 8; ++t) {
    c.colsb[t] = 64;
    c.rows[t] = t < 5 ? r : 16;
  }
  load_tile_config(c);
}

// Each row lane's 16-bit scale in every word of its four bytes, for the lanes of one half of
// a quad-row vector (`index`: lane_word_index(0) for lanes 0-7, (1) for 8-15).
TANDEM_QUANT_INLINE __m512i lane_word_index(int half) {
  alignas(64) int16_t index[32];
  for (int w = 0; w < 32; ++w) index[w] = static_cast<int16_t>(8 * half + w / 4);
  return _mm512_load_si512(index);
}
TANDEM_QUANT_INLINE __m512i lane_words(__m512i scales32, __m512i index) {
  return _mm512_permutexvar_epi16(index, _mm512_castsi256_si512(_mm512_cvtepi32_epi16(scales32)));
}

// One quad-row vector of sixteen rows' quants (bytes, `offset` above the real ones) times each
// row's scale, split into the lo and hi planes at `at`.
TANDEM_QUANT_INLINE void fold(__m512i q, int offset, __m512i scale0, __m512i scale1, uint8_t* sb,
                              size_t at) {
  const __m512i off = _mm512_set1_epi16(static_cast<int16_t>(offset));
  const __m512i v0 = _mm512_mullo_epi16(
      _mm512_sub_epi16(_mm512_cvtepu8_epi16(_mm512_castsi512_si256(q)), off), scale0);
  const __m512i v1 = _mm512_mullo_epi16(
      _mm512_sub_epi16(_mm512_cvtepu8_epi16(_mm512_extracti64x4_epi64(q, 1)), off), scale1);
  const __m512i lo = _mm512_inserti64x4(_mm512_castsi256_si512(_mm512_cvtepi16_epi8(v0)),
                                        _mm512_cvtepi16_epi8(v1), 1);
  const __m512i bias = _mm512_set1_epi16(128);
  const __m512i h0 = _mm512_srai_epi16(_mm512_add_epi16(v0, bias), 8);
  const __m512i h1 = _mm512_srai_epi16(_mm512_add_epi16(v1, bias), 8);
  const __m512i hi = _mm512_inserti64x4(_mm512_castsi256_si512(_mm512_cvtepi16_epi8(h0)),
                                        _mm512_cvtepi16_epi8(h1), 1);
  _mm512_store_si512(sb + SuperTiles::kLo + at, lo);
  _mm512_store_si512(sb + SuperTiles::kHi + at, hi);
}

// The scales of the 16 groups of every row lane as fold takes them (two halves each), and
// with mins, the mn plane: group g's min in each byte of its lane, quad rows 4g .. 4g + 3.
struct LaneWordScales {
  __m512i words[16][2];
};
TANDEM_QUANT_INLINE void group_scales(const __m512i (&sc)[16], LaneWordScales& out) {
  const __m512i index0 = lane_word_index(0), index1 = lane_word_index(1);
  for (int g = 0; g < 16; ++g) {
    out.words[g][0] = lane_words(sc[g], index0);
    out.words[g][1] = lane_words(sc[g], index1);
  }
}
TANDEM_QUANT_INLINE void mins_plane(const __m512i (&mn)[16], uint8_t* sb) {
  for (int g = 0; g < 16; ++g) {
    const __m512i bytes = _mm512_mullo_epi32(mn[g], _mm512_set1_epi32(0x01010101));
    for (int r = 0; r < 4; ++r) _mm512_store_si512(sb + SuperTiles::kMn + 64 * (4 * g + r), bytes);
  }
}

// Quad row (step c, row kk) of the planes: values 64c + 4kk .. + 3, group 4c + kk / 4.
constexpr size_t quad_at(int c, int kk) { return c * kStepBytes + 64 * static_cast<size_t>(kk); }

// A decoded super-block's float scales: the record's d (sixteen halves at `d`) and, for the
// types with mins, its dmin (at `dmin`; null: zeros, as finish_super takes no mins).
TANDEM_QUANT_INLINE void store_scales(uint8_t* sb, const uint8_t* d, const uint8_t* dmin) {
  _mm512_store_ps(reinterpret_cast<float*>(sb + SuperTiles::kD), halves16(d));
  _mm512_store_ps(reinterpret_cast<float*>(sb + SuperTiles::kDmin),
                  dmin != nullptr ? halves16(dmin) : _mm512_setzero_ps());
}

// f.template operator()<N, S>() for the eight quarters (N, S) of a super-block's values in
// the Q2_K and Q3_K order (128N + 32S ..), N and S as literals.
template <class F>
TANDEM_QUANT_INLINE void for_each_quarter(F&& f) {
  f.template operator()<0, 0>();
  f.template operator()<0, 1>();
  f.template operator()<0, 2>();
  f.template operator()<0, 3>();
  f.template operator()<1, 0>();
  f.template operator()<1, 1>();
  f.template operator()<1, 2>();
  f.template operator()<1, 3>();
}

// Q4_K, or Q5_K (kFifth): quants 0-31 as stored (no offset), scales and mins per sub-block of
// 32, so group g takes sub-block g / 2's. Pair P of sub-blocks is step P: quad row u < 8 the
// low nibbles of qs vector 8P + u, 8 + u its high ones (k4_pair's order).
template <bool kFifth>
void decode_k4(const uint8_t* rec, uint8_t* sb) {
  __m512i sc8[8], mn8[8], sc[16], mn[16];
  k4_lane_scales(rec, sc8, mn8);
  for (int g = 0; g < 16; ++g) {
    sc[g] = sc8[g / 2];
    mn[g] = mn8[g / 2];
  }
  LaneWordScales s;
  group_scales(sc, s);
  mins_plane(mn, sb);
  constexpr size_t kQs = kFifth ? Q5KRecord::kQs : Q4KRecord::kQs;
  const __m512i low = _mm512_set1_epi8(0x0F);
  for (int p = 0; p < 4; ++p) {
    for (int u = 0; u < 8; ++u) {
      const __m512i v = _mm512_loadu_si512(rec + kQs + 64 * (8 * p + u));
      __m512i q0 = _mm512_and_si512(v, low);
      __m512i q1 = _mm512_and_si512(_mm512_srli_epi16(v, 4), low);
      if constexpr (kFifth) {
        const __m512i bits = _mm512_loadu_si512(rec + Q5KRecord::kQh + 64 * u);
        // fifth_bit takes its bit as a literal.
        switch (p) {
          case 0:
            q0 = five_bits(q0, fifth_bit<0>(bits));
            q1 = five_bits(q1, fifth_bit<1>(bits));
            break;
          case 1:
            q0 = five_bits(q0, fifth_bit<2>(bits));
            q1 = five_bits(q1, fifth_bit<3>(bits));
            break;
          case 2:
            q0 = five_bits(q0, fifth_bit<4>(bits));
            q1 = five_bits(q1, fifth_bit<5>(bits));
            break;
          default:
            q0 = five_bits(q0, fifth_bit<6>(bits));
            q1 = five_bits(q1, fifth_bit<7>(bits));
        }
      }
      const int g0 = 4 * p + u / 4, g1 = 4 * p + (8 + u) / 4;
      fold(q0, 0, s.words[g0][0], s.words[g0][1], sb, quad_at(p, u));
      fold(q1, 0, s.words[g1][0], s.words[g1][1], sb, quad_at(p, 8 + u));
    }
  }
  store_scales(sb, rec + Q4KRecord::kD, rec + Q4KRecord::kDmin);
}

// Q6_K: six-bit quants 32 above the real ones, a signed scale per group, no mins. Half N,
// class c, u (q6_k_quarter's order) is values 128N + 32c + 4u: step 2N + c / 2, quad row
// 8 (c % 2) + u, group 8N + 2c + u / 4.
void decode_q6_k(const uint8_t* rec, uint8_t* sb) {
  using Rec = Q6KRecord;
  __m512i sc[16];
  q6_k_lane_scales(rec, sc);
  LaneWordScales s;
  group_scales(sc, s);
  const __m512i low = _mm512_set1_epi8(0x0F);
  for (int n = 0; n < 2; ++n) {
    for (int u = 0; u < 8; ++u) {
      const __m512i first = _mm512_loadu_si512(rec + Rec::kQl + 64 * (16 * n + u));
      const __m512i second = _mm512_loadu_si512(rec + Rec::kQl + 64 * (16 * n + 8 + u));
      const __m512i bits = _mm512_loadu_si512(rec + Rec::kQh + 64 * (8 * n + u));
      const __m512i q[4] = {six_bits(_mm512_and_si512(first, low), _mm512_slli_epi16(bits, 4)),
                            six_bits(_mm512_and_si512(second, low), _mm512_slli_epi16(bits, 2)),
                            six_bits(_mm512_and_si512(_mm512_srli_epi16(first, 4), low), bits),
                            six_bits(_mm512_and_si512(_mm512_srli_epi16(second, 4), low),
                                     _mm512_srli_epi16(bits, 2))};
      for (int c = 0; c < 4; ++c) {
        const int g = 8 * n + 2 * c + u / 4;
        fold(q[c], 32, s.words[g][0], s.words[g][1], sb, quad_at(2 * n + c / 2, 8 * (c % 2) + u));
      }
    }
  }
  store_scales(sb, rec + Rec::kD, nullptr);
}

// The quad-row vector of values e .. e + 3 (e a multiple of 4) into the planes: step e / 64,
// quad row e % 64 / 4, group e / 16.
TANDEM_QUANT_INLINE void fold_at(__m512i q, int offset, const LaneWordScales& s, uint8_t* sb,
                                 int e) {
  fold(q, offset, s.words[e / 16][0], s.words[e / 16][1], sb, quad_at(e / 64, e % 64 / 4));
}

// Q2_K: quants 0-3, a scale and a min (nibbles) per group. q2_k_quarter's order: for N, S and
// u < 8, the two bits at 2S of qs word 8N + u are values 128N + 32S + 4u .. + 3.
template <int N, int S>
TANDEM_QUANT_INLINE void q2_k_quarter_planes(const uint8_t* rec, const LaneWordScales& s,
                                             uint8_t* sb) {
  for (int u = 0; u < 8; ++u) {
    const __m512i qs = _mm512_loadu_si512(rec + Q2KRecord::kQs + 64 * (8 * N + u));
    const __m512i q = _mm512_and_si512(_mm512_srli_epi16(qs, 2 * S), _mm512_set1_epi8(3));
    fold_at(q, 0, s, sb, 128 * N + 32 * S + 4 * u);
  }
}
void decode_q2_k(const uint8_t* rec, uint8_t* sb) {
  __m512i w[4], sc[16], mn[16];
  Q2KInterleaved::scale_words(rec, w);
  for (int g = 0; g < 16; ++g) {
    sc[g] = q2_k_nibbles(w, g, 0);
    mn[g] = q2_k_nibbles(w, g, 4);
  }
  LaneWordScales s;
  group_scales(sc, s);
  mins_plane(mn, sb);
  for_each_quarter([&]<int N, int S>() { q2_k_quarter_planes<N, S>(rec, s, sb); });
  store_scales(sb, rec + Q2KRecord::kD, rec + Q2KRecord::kDmin);
}

// Q3_K: quants 0-7, 4 above the real ones (the low two bits and the hmask bit), a signed scale
// per group, no mins; q3_k_quarter's order, values as Q2_K's.
template <int N, int S>
TANDEM_QUANT_INLINE void q3_k_quarter_planes(const uint8_t* rec, const LaneWordScales& s,
                                             uint8_t* sb) {
  for (int u = 0; u < 8; ++u) {
    const __m512i qs = _mm512_loadu_si512(rec + Q3KRecord::kQs + 64 * (8 * N + u));
    const __m512i hm = _mm512_loadu_si512(rec + Q3KRecord::kHmask + 64 * u);
    const __m512i low = _mm512_and_si512(_mm512_srli_epi16(qs, 2 * S), _mm512_set1_epi8(3));
    const __m512i q =
        _mm512_ternarylogic_epi32(low, high_bit_at_2<4 * N + S>(hm), _mm512_set1_epi8(4), 0xF8);
    fold_at(q, 4, s, sb, 128 * N + 32 * S + 4 * u);
  }
}
template <int G>
TANDEM_QUANT_INLINE void q3_k_scales_from(const __m512i (&a)[4], __m512i (&sc)[16]) {
  sc[G] = q3_k_lane_scale<G>(a);
  if constexpr (G + 1 < 16) q3_k_scales_from<G + 1>(a, sc);
}
void decode_q3_k(const uint8_t* rec, uint8_t* sb) {
  __m512i a[4], sc[16];
  q3_k_lane_scale_words(rec, a);
  q3_k_scales_from<0>(a, sc);
  LaneWordScales s;
  group_scales(sc, s);
  for_each_quarter([&]<int N, int S>() { q3_k_quarter_planes<N, S>(rec, s, sb); });
  store_scales(sb, rec + Q3KRecord::kD, nullptr);
}

// IQ4_XS: the table's values plus 128 (so unsigned, `offset` 128), a signed scale per
// sub-block of 32, no mins. iq4_xs_pair's order: sub-block ib's qs word 4ib + u, low nibbles
// values 32ib + 4u .., high ones 32ib + 16 + 4u ...
template <int IB>
TANDEM_QUANT_INLINE void iq4_xs_scales_from(__m512i scales_l, __m512i scales_h, __m512i (&sc)[16]) {
  sc[2 * IB] = sc[2 * IB + 1] = iq4_xs_lane_scale<IB>(scales_l, scales_h);
  if constexpr (IB + 1 < 8) iq4_xs_scales_from<IB + 1>(scales_l, scales_h, sc);
}
void decode_iq4_xs(const uint8_t* rec, uint8_t* sb) {
  using Rec = Iq4XsRecord;
  const __m512i table = iq4_unsigned_table();
  const __m512i scales_l = _mm512_loadu_si512(rec + Rec::kScalesL);
  const __m512i scales_h = _mm512_cvtepu16_epi32(
      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rec + Rec::kScalesH)));
  __m512i sc[16];
  iq4_xs_scales_from<0>(scales_l, scales_h, sc);
  LaneWordScales s;
  group_scales(sc, s);
  const __m512i low = _mm512_set1_epi8(0x0F);
  for (int ib = 0; ib < 8; ++ib) {
    for (int u = 0; u < 4; ++u) {
      const __m512i v = _mm512_loadu_si512(rec + Rec::kQs + 64 * (4 * ib + u));
      fold_at(_mm512_shuffle_epi8(table, _mm512_and_si512(v, low)), 128, s, sb, 32 * ib + 4 * u);
      fold_at(_mm512_shuffle_epi8(table, _mm512_and_si512(_mm512_srli_epi16(v, 4), low)), 128, s,
              sb, 32 * ib + 16 + 4 * u);
    }
  }
  store_scales(sb, rec + Rec::kD, nullptr);
}

// Whether the kind has mins (the third plane and product).
constexpr bool has_mins(QuantKind k) {
  return k == QuantKind::kQ2_K || k == QuantKind::kQ4_K || k == QuantKind::kQ5_K;
}

template <QuantKind K>
void decode_super(const uint8_t* rec, uint8_t* sb) {
  if constexpr (K == QuantKind::kQ6_K) {
    decode_q6_k(rec, sb);
  } else if constexpr (K == QuantKind::kQ2_K) {
    decode_q2_k(rec, sb);
  } else if constexpr (K == QuantKind::kQ3_K) {
    decode_q3_k(rec, sb);
  } else if constexpr (K == QuantKind::kIq4Xs) {
    decode_iq4_xs(rec, sb);
  } else {
    decode_k4<K == QuantKind::kQ5_K>(rec, sb);
  }
}

template <QuantKind K>
constexpr size_t record_bytes() {
  if constexpr (K == QuantKind::kQ6_K) return Q6KRecord::kBytes;
  if constexpr (K == QuantKind::kQ5_K) return Q5KRecord::kBytes;
  if constexpr (K == QuantKind::kQ2_K) return Q2KRecord::kBytes;
  if constexpr (K == QuantKind::kQ3_K) return Q3KRecord::kBytes;
  if constexpr (K == QuantKind::kIq4Xs) return Iq4XsRecord::kBytes;
  return Q4KRecord::kBytes;
}

// What a row tile's super-blocks read: the group's decoded super-blocks, the activation rows
// (stride apart) and their scales, and two super-blocks' sums as stored from the tiles.
struct SuperRun {
  const uint8_t* decoded;  // nb x SuperTiles::kBytes
  int64_t nb;
  const int8_t* a;
  int64_t stride;
  const float* xd;                 // TileScales' layout, one d per super-block
  int32_t (*c)[3][kTileRows][16];  // [2]: C_lo, C_hi, C_min of super-blocks i % 2
  Ahead ahead;                     // lines of the next chunk to ask for (quant_tiles.h)
};

// Super-block i's products into tiles 0-2 and their stores (activations alternating between
// tiles 3 and 4 by step). A macro for GCC's literal tile numbers.
#define TANDEM_SUPER_STEP(A, r, sb, c, kMins)                      \
  do {                                                             \
    _tile_loadd(A, (r).a + 64 * (c), (r).stride);                  \
    _tile_loadd(5, (sb) + SuperTiles::kLo + (c)*kStepBytes, 64);   \
    _tile_dpbssd(0, A, 5);                                         \
    _tile_loadd(6, (sb) + SuperTiles::kHi + (c)*kStepBytes, 64);   \
    _tile_dpbssd(1, A, 6);                                         \
    if (kMins) {                                                   \
      _tile_loadd(7, (sb) + SuperTiles::kMn + (c)*kStepBytes, 64); \
      _tile_dpbssd(2, A, 7);                                       \
    }                                                              \
  } while (false)

template <bool kMins>
TANDEM_QUANT_INLINE void super_products(const SuperRun& r, int64_t i) {
  const uint8_t* sb = r.decoded + i * SuperTiles::kBytes;
  SuperRun at = r;
  at.a = r.a + 256 * i;
  _tile_zero(0);
  _tile_zero(1);
  if (kMins) _tile_zero(2);
  TANDEM_SUPER_STEP(3, at, sb, 0, kMins);
  TANDEM_SUPER_STEP(4, at, sb, 1, kMins);
  TANDEM_SUPER_STEP(3, at, sb, 2, kMins);
  TANDEM_SUPER_STEP(4, at, sb, 3, kMins);
  _tile_stored(0, r.c[i % 2][0], 64);
  _tile_stored(1, r.c[i % 2][1], 64);
  if (kMins) _tile_stored(2, r.c[i % 2][2], 64);
}

// finish_super's float steps for super-block i, sixteen outputs wide, for the tile's rows.
template <bool kMins>
TANDEM_QUANT_INLINE void super_finish(const SuperRun& r, int64_t i, __m512 (&acc)[kTileRows]) {
  const uint8_t* sb = r.decoded + i * SuperTiles::kBytes;
  const __m512 d = _mm512_load_ps(reinterpret_cast<const float*>(sb + SuperTiles::kD));
  const __m512 dmin = _mm512_load_ps(reinterpret_cast<const float*>(sb + SuperTiles::kDmin));
  const int32_t(&c)[3][kTileRows][16] = r.c[i % 2];
  const float* xd = r.xd + 16 * i;
  for (int m = 0; m < kTileRows; ++m) {
    const __m512i isum = _mm512_add_epi32(_mm512_load_si512(c[0][m]),
                                          _mm512_slli_epi32(_mm512_load_si512(c[1][m]), 8));
    const __m512i summs = kMins ? _mm512_load_si512(c[2][m]) : _mm512_setzero_si512();
    const __m512 x = _mm512_set1_ps(xd[m]);
    const __m512 dot = _mm512_mul_ps(_mm512_mul_ps(d, x), _mm512_cvtepi32_ps(isum));
    const __m512 mins = _mm512_mul_ps(_mm512_mul_ps(dmin, x), _mm512_cvtepi32_ps(summs));
    acc[m] = _mm512_add_ps(acc[m], _mm512_sub_ps(dot, mins));
  }
}

// One tile of up to 16 activation rows against a decoded group, into out (rows out_stride
// apart): super-block i's products are issued before i - 1's float steps run, which read
// sums stored a super-block earlier.
template <QuantKind K>
void super_tile(const SuperRun& r, int rows, float* out, int64_t out_stride) {
  constexpr bool kMins = has_mins(K);
  __m512 acc[kTileRows];
  for (int m = 0; m < kTileRows; ++m) acc[m] = _mm512_setzero_ps();
  if (rows < kTileRows) __builtin_memset(r.c, 0, 2 * sizeof r.c[0]);  // rows no store writes
  for (int64_t i = 0; i < r.nb; ++i) {
    fetch_ahead(r.ahead, i, r.nb);
    super_products<kMins>(r, i);
    if (i > 0) super_finish<kMins>(r, i - 1, acc);
  }
  if (r.nb > 0) super_finish<kMins>(r, r.nb - 1, acc);
  for (int m = 0; m < rows; ++m) _mm512_storeu_ps(out + m * out_stride, acc[m]);
}

// Outputs [out_begin, out_end) of every activation row, kChunkGroups groups decoded at a time
// and every tile of activation rows passed over them (amx/quant_matmul.cpp's order).
template <QuantKind K>
void super_rows(const QuantMatmulArgs& a, int64_t out_begin, int64_t out_end) {
  const int64_t nb = a.n_in / 256;
  const size_t group_bytes = static_cast<size_t>(nb) * record_bytes<K>();
  const size_t decoded_bytes = static_cast<size_t>(nb) * SuperTiles::kBytes;
  const int64_t tiles = (a.n_rows + kTileRows - 1) / kTileRows;
  auto* scratch = static_cast<uint8_t*>(
      quant_scratch(kChunkGroups * decoded_bytes + static_cast<size_t>(tiles * nb) * 64));
  auto* xd = reinterpret_cast<float*>(scratch + kChunkGroups * decoded_bytes);
  transpose_scales(a.x, nb, tiles, xd, nullptr);
  alignas(64) float sums[kTileRows][16];
  alignas(64) int32_t c[2][3][kTileRows][16];
  int configured = -1;
  const int64_t first = out_begin / kInterleaveRows;
  const int64_t end = (out_end + kInterleaveRows - 1) / kInterleaveRows;
  for (int64_t chunk = first, size = kFirstChunkGroups; chunk < end;
       chunk += size, size = ramp(size, kChunkGroups)) {
    const int64_t groups = groups_at(chunk, size, end);
    const int64_t next = groups_at(chunk + groups, ramp(size, kChunkGroups), end);
    for (int64_t g = 0; g < groups; ++g) {
      for (int64_t i = 0; i < nb; ++i) {
        decode_super<K>(a.w + (chunk + g) * group_bytes + i * record_bytes<K>(),
                        scratch + g * decoded_bytes + i * SuperTiles::kBytes);
      }
    }
    for (int64_t m0 = 0; m0 < a.n_rows; m0 += kTileRows) {
      const int rows = static_cast<int>(a.n_rows - m0 < kTileRows ? a.n_rows - m0 : kTileRows);
      if (rows != configured) {
        configure(rows);
        configured = rows;
      }
      for (int64_t g = 0; g < groups; ++g) {
        const int64_t g0 = (chunk + g) * kInterleaveRows;
        const int64_t from = g0 > out_begin ? g0 : out_begin;
        const int64_t to = g0 + kInterleaveRows < out_end ? g0 + kInterleaveRows : out_end;
        const SuperRun run{scratch + g * decoded_bytes,
                           nb,
                           a.x.q + m0 * a.n_in,
                           a.n_in,
                           xd + m0 / kTileRows * nb * 16,
                           c,
                           ahead_share(a.w + (chunk + groups) * group_bytes, next, group_bytes,
                                       m0 / kTileRows * groups + g, tiles * groups)};
        if (from == g0 && to == g0 + kInterleaveRows) {  // straight into y
          super_tile<K>(run, rows, a.y + m0 * a.row_stride() + g0, a.row_stride());
          continue;
        }
        super_tile<K>(run, rows, &sums[0][0], 16);
        for (int m = 0; m < rows; ++m)
          for (int64_t o = from; o < to; ++o) a.y[(m0 + m) * a.row_stride() + o] = sums[m][o - g0];
      }
    }
  }
  if (configured >= 0) _tile_release();
}

}  // namespace

void amx_super_rows(const QuantMatmulArgs& a, int64_t out_begin, int64_t out_end) {
  switch (a.kind) {
    case QuantKind::kQ5_K:
      return super_rows<QuantKind::kQ5_K>(a, out_begin, out_end);
    case QuantKind::kQ6_K:
      return super_rows<QuantKind::kQ6_K>(a, out_begin, out_end);
    case QuantKind::kQ2_K:
      return super_rows<QuantKind::kQ2_K>(a, out_begin, out_end);
    case QuantKind::kQ3_K:
      return super_rows<QuantKind::kQ3_K>(a, out_begin, out_end);
    case QuantKind::kIq4Xs:
      return super_rows<QuantKind::kIq4Xs>(a, out_begin, out_end);
    default:
      return super_rows<QuantKind::kQ4_K>(a, out_begin, out_end);
  }
}

}  // namespace tandem::kernels::detail
