// AMX-INT8 form of the quantized matmul for batches, on weights in blocks of 32 interleaved
// by sixteen rows (quant_interleave.h: Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, Q8_0). Compiled with
// AMX flags and called only where the CPU has AMX-INT8 and the tile state was granted
// (quant_dispatch.cpp), so, as in avx512/, no standard-library template is instantiated here.
//
// A TDPBSSD adds to each 32-bit lane of a 16 x 16 tile of sums (C) the products of one row of
// signed bytes (A: an activation row's Q8_0 quants, straight from the row-major ActRows) and
// one column (B: a weight row's quants): with K = 32, one block of 16 activation rows against
// one block of 16 weight rows, 8192 products per instruction where a vpdpbusd makes 64. A
// record of the interleaved layout already is B's layout once its quants are decoded to
// signed bytes (vector v: quants 4v .. 4v + 3 of every row, row r's at bytes 4r .. 4r + 3),
// so a group of sixteen weight rows is decoded once into a scratch of B tiles and then serves
// every activation row.
//
// The integers are exact: a block's sum of (q - offset) * x is the portable form's sum less
// offset times the activations' block sum, the same int32 (quant_matmul.h). The float steps
// then run sixteen outputs wide in finish_legacy's order, (d * xd) * float(sum), plus m * xs
// where the type has a min, added to the output's running float block by block, so every
// output has the bits of the portable and VNNI forms at every batch and ISA (law 2), and the
// tests hold this form to them.
#include <immintrin.h>

#include "runner/kernels/amx/quant_tiles.h"
#include "runner/kernels/peaks.h"
#include "runner/kernels/quant_interleaved.h"

namespace tandem::kernels::detail {
namespace {

constexpr int kBlockQuads = 8;                   // a block's 32 quants as 8 rows of four (B's rows)
constexpr size_t kTileBytes = kBlockQuads * 64;  // one decoded block of the group: 512 bytes
// Groups of sixteen weight rows decoded together. Each tile of activation rows then passes
// over all of them, its rows' quants kept in L1 and the outputs it writes running along its
// rows of y: one group at a time down all the rows, the scattered stores into y took a fifth
// of the time (one thread, 512 x 1808 x 576: 2.85 -> 2.44-2.62 ms). At most: a range's first
// chunks ramp up to it (quant_tiles.h, kFirstChunkGroups), and a batch of kFewTiles tiles or
// fewer takes one group at a time.
constexpr int64_t kChunkGroups = 8;

// Tiles 0-3: sums (rows x 16 int32); 4 and 5: activations (rows x 32 bytes); 6 and 7:
// weights (8 x 64 bytes).
void configure(int rows) {
  TileConfig c;
  const auto r = static_cast<uint8_t>(rows);
  for (int t = 0; t < 4; ++t) {
    c.colsb[t] = 64;
    c.rows[t] = r;
  }
  c.colsb[4] = c.colsb[5] = 32;
  c.rows[4] = c.rows[5] = r;
  c.colsb[6] = c.colsb[7] = 64;
  c.rows[6] = c.rows[7] = kBlockQuads;
  load_tile_config(c);
}

// A group of sixteen weight rows, decoded: per block, its B tile (signed quants), d and (with
// a min) m as floats.
struct DecodedGroup {
  int8_t* q;  // nb x kTileBytes
  float* d;   // nb x 16
  float* dm;  // nb x 16 (types with a min)
};

// Block j of the group's records into B's signed bytes: the VNNI form's unsigned quants
// (quant_interleaved.h) less their offset, modulo 256 where it is 128 (Q8_0, IQ4_NL).
template <QuantKind K>
TANDEM_QUANT_INLINE void decode_block(const uint8_t* rec, __m512i table, int8_t* out, float* d,
                                      float* dm) {
  constexpr InterleavedRecord I = interleaved_record(K);
  __m512i q[8];
  unsigned_quants<K>(rec, table, q);
  const __m512i offset = _mm512_set1_epi8(static_cast<char>(I.offset));
  for (int v = 0; v < 8; ++v) _mm512_store_si512(out + 64 * v, _mm512_sub_epi8(q[v], offset));
  _mm512_store_ps(d, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(rec))));
  if constexpr (I.min) {
    _mm512_store_ps(
        dm, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(rec + I.m))));
  }
}

template <QuantKind K>
void decode_group(const uint8_t* group, int64_t nb, const DecodedGroup& out) {
  constexpr InterleavedRecord I = interleaved_record(K);
  __m512i table = _mm512_setzero_si512();
  if constexpr (I.table) table = iq4_unsigned_table();
  for (int64_t j = 0; j < nb; ++j) {
    decode_block<K>(group + j * I.bytes, table, out.q + j * kTileBytes, out.d + 16 * j,
                    out.dm + 16 * j);
  }
}

// The float steps of block j for a tile's 16 activation rows (its sums in c, a row of 16
// int32 each): acc[m] += (d * xd) * float(sum) [+ dm * xs], finish_legacy's order. A tile
// of fewer rows computes the rest too (from zeros) and never stores them.
template <bool kMin>
TANDEM_QUANT_INLINE void finish_block(const int32_t (&c)[kTileRows][16], const TileScales& x,
                                      const DecodedGroup& w, int64_t j, __m512 (&acc)[kTileRows]) {
  const __m512 d = _mm512_load_ps(w.d + 16 * j);
  const __m512 dm = kMin ? _mm512_load_ps(w.dm + 16 * j) : _mm512_setzero_ps();
  const float* xd = x.xd + 16 * j;
  for (int m = 0; m < kTileRows; ++m) {
    const __m512i sum = _mm512_load_si512(c[m]);
    __m512 t = _mm512_mul_ps(_mm512_mul_ps(d, _mm512_set1_ps(xd[m])), _mm512_cvtepi32_ps(sum));
    if constexpr (kMin) t = _mm512_add_ps(t, _mm512_mul_ps(dm, _mm512_set1_ps(x.xs[16 * j + m])));
    acc[m] = _mm512_add_ps(acc[m], t);
  }
}

// Block j's products into sums tile C (of four, j % 4), its activations and weights through
// tiles A (4 + j % 2) and B (6 + j % 2), then stored to `sums`. A macro: GCC's tile
// intrinsics spell the tile's number into the instruction as written.
#define TANDEM_BLOCK_PRODUCT(C, A, B, a, stride, b, sums) \
  do {                                                    \
    _tile_zero(C);                                        \
    _tile_loadd(A, (a), (stride));                        \
    _tile_loadd(B, (b), 64);                              \
    _tile_dpbssd(C, A, B);                                \
    _tile_stored(C, (sums), 64);                          \
  } while (false)

// What a row tile's blocks read: the decoded group, the activation rows (stride apart), their
// scales, and the four blocks' sums as stored from the tiles.
struct TileRun {
  const DecodedGroup& w;
  int64_t nb;
  const int8_t* a;
  int64_t stride;
  const TileScales& x;
  int32_t (*c)[kTileRows][16];  // [4]
  Ahead ahead;                  // lines of the next chunk to ask for (quant_tiles.h)
};

// Block j's products (j < nb) into sums tile C and its store, then the float steps of block
// f = j - 2 (f >= 0; its sums stored two blocks before). Tiles A and B are j's activations
// and weights (4 + j % 2, 6 + j % 2); C is j % 4. A macro again for the tile numbers.
#define TANDEM_BLOCK_STEP(C, A, B, r, j, kMin, acc)                                         \
  do {                                                                                      \
    if ((j) < (r).nb) {                                                                     \
      fetch_ahead((r).ahead, (j), (r).nb);                                                  \
      TANDEM_BLOCK_PRODUCT(C, A, B, (r).a + 32 * (j), (r).stride, (r).w.q + (j)*kTileBytes, \
                           (r).c[C]);                                                       \
    }                                                                                       \
    if ((j) >= 2 && (j)-2 < (r).nb)                                                         \
      finish_block<kMin>((r).c[((j) + 2) % 4], (r).x, (r).w, (j)-2, acc);                   \
  } while (false)

// One tile of up to 16 activation rows against the decoded group, into out (rows out_stride
// apart). Four tiles of sums take the blocks in turn, and the float steps of block j run after
// block j + 2's products are issued: a tile's store read at once, or a tile used again by the
// next block, would hold each block's steps until the one before had finished (3.1 -> 2.9 ms,
// one thread, 512 x 1808 x 576). Storing each tile a block later than its product was level. The
// sums of the 16 rows stay in registers throughout (no lambda may capture them: GCC then kept them
// in memory, a load and a store per row per block).
template <QuantKind K>
void rows_tile(const TileRun& r, int rows, float* out, int64_t out_stride) {
  constexpr bool kMin = interleaved_record(K).min;
  __m512 acc[kTileRows];
  for (int m = 0; m < kTileRows; ++m) acc[m] = _mm512_setzero_ps();
  if (rows < kTileRows) __builtin_memset(r.c, 0, 4 * sizeof r.c[0]);  // rows no store writes
  for (int64_t j = 0; j < r.nb + 2; j += 4) {
    TANDEM_BLOCK_STEP(0, 4, 6, r, j, kMin, acc);
    TANDEM_BLOCK_STEP(1, 5, 7, r, j + 1, kMin, acc);
    TANDEM_BLOCK_STEP(2, 4, 6, r, j + 2, kMin, acc);
    TANDEM_BLOCK_STEP(3, 5, 7, r, j + 3, kMin, acc);
  }
  for (int m = 0; m < rows; ++m) _mm512_storeu_ps(out + m * out_stride, acc[m]);
}

// Outputs [out_begin, out_end) of every activation row: each group of sixteen weight rows the
// range touches, decoded once, against tiles of 16 activation rows.
template <QuantKind K>
void amx_rows(const QuantMatmulArgs& a, int64_t out_begin, int64_t out_end) {
  constexpr InterleavedRecord I = interleaved_record(K);
  const int64_t nb = a.n_in / 32;
  const size_t group_bytes = static_cast<size_t>(nb) * I.bytes;
  const int64_t tiles = (a.n_rows + kTileRows - 1) / kTileRows;
  const size_t decoded_bytes = static_cast<size_t>(nb) * (kTileBytes + 128);  // one group
  const size_t scales_bytes = static_cast<size_t>(tiles * nb) * 2 * 64;
  auto* scratch = static_cast<uint8_t*>(quant_scratch(kChunkGroups * decoded_bytes + scales_bytes));
  auto decoded = [&](int64_t i) {
    uint8_t* p = scratch + i * decoded_bytes;
    return DecodedGroup{reinterpret_cast<int8_t*>(p), reinterpret_cast<float*>(p + nb * kTileBytes),
                        reinterpret_cast<float*>(p + nb * (kTileBytes + 64))};
  };
  auto* xd = reinterpret_cast<float*>(scratch + kChunkGroups * decoded_bytes);
  float* xs = xd + tiles * nb * 16;
  transpose_scales(a.x, nb, tiles, xd, I.min ? xs : nullptr);
  alignas(64) float sums[kTileRows][16];
  alignas(64) int32_t c[4][kTileRows][16];
  int configured = -1;
  const int64_t first = out_begin / kInterleaveRows,
                end = (out_end + kInterleaveRows - 1) / kInterleaveRows;
  const int64_t full = tiles <= kFewTiles ? 1 : kChunkGroups;
  for (int64_t chunk = first, size = kFirstChunkGroups; chunk < end;
       chunk += size, size = ramp(size, full)) {
    const int64_t groups = groups_at(chunk, size, end);
    const int64_t next = groups_at(chunk + groups, ramp(size, full), end);
    for (int64_t i = 0; i < groups; ++i)
      decode_group<K>(a.w + (chunk + i) * group_bytes, nb, decoded(i));
    for (int64_t m0 = 0; m0 < a.n_rows; m0 += kTileRows) {
      const int rows = static_cast<int>(a.n_rows - m0 < kTileRows ? a.n_rows - m0 : kTileRows);
      if (rows != configured) {
        configure(rows);
        configured = rows;
      }
      const int64_t t = m0 / kTileRows;
      const TileScales scales{xd + t * nb * 16, xs + t * nb * 16};
      for (int64_t i = 0; i < groups; ++i) {
        const int64_t g0 = (chunk + i) * kInterleaveRows;
        const int64_t from = g0 > out_begin ? g0 : out_begin;
        const int64_t to = g0 + kInterleaveRows < out_end ? g0 + kInterleaveRows : out_end;
        const DecodedGroup w = decoded(i);
        const TileRun run{w,
                          nb,
                          a.x.q + m0 * a.n_in,
                          a.n_in,
                          scales,
                          c,
                          ahead_share(a.w + (chunk + groups) * group_bytes, next, group_bytes,
                                      t * groups + i, tiles * groups)};
        if (from == g0 && to == g0 + kInterleaveRows) {  // straight into y
          rows_tile<K>(run, rows, a.y + m0 * a.row_stride() + g0, a.row_stride());
          continue;
        }
        rows_tile<K>(run, rows, &sums[0][0], 16);
        for (int m = 0; m < rows; ++m)
          for (int64_t o = from; o < to; ++o) a.y[(m0 + m) * a.row_stride() + o] = sums[m][o - g0];
      }
    }
  }
  if (configured >= 0) _tile_release();
}

// Rows kept as stored go to the VNNI loop (so tests may call this one with any arguments);
// super-blocks (their activations in Q8_K) to quant_super.cpp.
void amx_loop(const QuantMatmulArgs& a, int64_t out_begin, int64_t out_end) {
  if (!a.interleaved) return avx512vnni_quant_loop()(a, out_begin, out_end);
  if (a.x.format == ActFormat::kQ8_K) return amx_super_rows(a, out_begin, out_end);
  switch (a.kind) {
    case QuantKind::kQ4_1:
      return amx_rows<QuantKind::kQ4_1>(a, out_begin, out_end);
    case QuantKind::kQ5_0:
      return amx_rows<QuantKind::kQ5_0>(a, out_begin, out_end);
    case QuantKind::kQ5_1:
      return amx_rows<QuantKind::kQ5_1>(a, out_begin, out_end);
    case QuantKind::kIq4Nl:
      return amx_rows<QuantKind::kIq4Nl>(a, out_begin, out_end);
    case QuantKind::kQ8_0:
      return amx_rows<QuantKind::kQ8_0>(a, out_begin, out_end);
    default:
      return amx_rows<QuantKind::kQ4_0>(a, out_begin, out_end);
  }
}

}  // namespace

// Four tiles of sums against two of activations and two of weights, full size (16 rows of 64
// bytes), back to back: the tile unit's integer throughput. Each instruction is 16 x 16 lanes
// of 64 byte products: 32768 operations.
int64_t peak_amx_int8(int64_t iterations, float* sink) {
  TileConfig c;
  for (int t = 0; t < 8; ++t) {
    c.colsb[t] = 64;
    c.rows[t] = kTileRows;
  }
  load_tile_config(c);
  alignas(64) int8_t ones[kTileRows * 64];
  for (int8_t& v : ones) v = 1;
  _tile_loadd(4, ones, 64);
  _tile_loadd(5, ones, 64);
  _tile_loadd(6, ones, 64);
  _tile_loadd(7, ones, 64);
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  for (int64_t i = 0; i < iterations; ++i) {
    _tile_dpbssd(0, 4, 6);
    _tile_dpbssd(1, 4, 7);
    _tile_dpbssd(2, 5, 6);
    _tile_dpbssd(3, 5, 7);
  }
  alignas(64) int32_t out[kTileRows][16];
  _tile_stored(3, out, 64);
  _tile_release();
  *sink += static_cast<float>(out[3][5]);
  return iterations * 4 * kTileRows * 16 * 64 * 2;  // a product and an add per byte pair
}

QuantLoop amx_quant_loop() { return &amx_loop; }

}  // namespace tandem::kernels::detail
