// AMX kernels: BF16 weights times BF16-rounded activations on the tile unit (TDPBF16PS), and
// the loop that measures its peak. Compiled with AMX flags and only called after the run-time
// check in kernels.cpp (the CPU has AMX-BF16 and the kernel granted this process the tile
// state), so, as in avx512/, no standard-library template is instantiated here.
//
// A TDPBF16PS adds to each 32-bit lane of a 16 x 16 tile of sums (C) the products of one row
// of 16 BF16 pairs (A, the activations) and one column of 16 pairs (B, the weights): 512
// products a row per instruction, where a VDPBF16PS makes 32. The packed BF16 panel (isa.h:
// w[k / 2][64][2]) is already the B layout: 16 consecutive pairs of k for 16 outputs are 16
// rows of 64 bytes, 256 bytes apart.
//
// Its arithmetic is not VDPBF16PS's (measured on a Sapphire Rapids class Xeon: a pair's two
// products are summed and rounded before the add to C, where VDPBF16PS adds them one at a
// time, and the 16 pairs of one instruction are not added in any order a chain of F32 adds
// reproduces), so it cannot share bits with the AVX-512 path: under Isa::kAmx every BF16
// matmul takes it, one row as 1024, and a row's sums are the same whatever the batch, the
// tile it sits in or the thread (tests/runner/kernels).
#include <immintrin.h>

#include "runner/kernels/amx/tile_config.h"
#include "runner/kernels/isa.h"
#include "runner/kernels/peaks.h"
#include "runner/kernels/tile_loop.h"

namespace tandem::kernels::detail {
namespace {

constexpr int kBlockRows = 16;            // rows of an A or C tile
constexpr int kBlockPairs = 16;           // k pairs of an A row, rows of a B tile (64 bytes)
constexpr int kGroupRows = 32;            // a unit of work: one panel times up to 32 rows
constexpr int64_t kPairRow = kPanel * 4;  // bytes of one pair of k across a panel's outputs
constexpr int64_t kKBlockBytes = kBlockPairs * kPairRow;  // a panel's 16 pairs of k: 4 KiB
// Groups of rows a chunk holds. A prefill's activations run to megabytes; a chunk's (256
// rows: 288-768 KiB at n_in 576-1536) stay in L2 while every panel of the task's share
// passes over them, and then the next chunk takes the panels again.
constexpr int64_t kChunkGroups = 8;

// The tiles' roles. One block of rows (up to 16): sums 0-3 for the panel's four 16-output
// columns, activations in 4, weights through 5, 6 and 7. Two blocks: sums 0-1 (block 0) and
// 2-3 (block 1) for half a panel, activations in 4 and 5, weights in 6 and 7; the panel
// takes two passes, each block's activations loaded twice, each weight once.
void configure(int rows0, int rows1) {
  TileConfig c;
  for (int t = 0; t < 8; ++t) {
    c.colsb[t] = 64;
    c.rows[t] = kBlockRows;
  }
  const auto r0 = static_cast<uint8_t>(rows0), r1 = static_cast<uint8_t>(rows1);
  if (rows1 == 0) {
    c.rows[0] = c.rows[1] = c.rows[2] = c.rows[3] = c.rows[4] = r0;
  } else {
    c.rows[0] = c.rows[1] = c.rows[4] = r0;
    c.rows[2] = c.rows[3] = c.rows[5] = r1;
  }
  load_tile_config(c);
}

// Where a tile of sums goes: straight into y where its 16 outputs exist, else (the last
// panel's padding) through a buffer, the outputs past n_out dropped.
struct Sums {
  float* y;
  int64_t n_out;
  int64_t row0, col;  // the tile's first row and output
  int rows;
  bool whole() const { return col + 16 <= n_out; }
  float* at() const { return y + row0 * n_out + col; }
  void from_buffer(const float (&tmp)[kBlockRows][16]) const {
    const int64_t n = n_out - col;
    for (int r = 0; r < rows; ++r)
      for (int64_t i = 0; i < n; ++i) y[(row0 + r) * n_out + col + i] = tmp[r][i];
  }
};

// Stores tile `tile` of sums (GCC's _tile_stored names the tile register by its literal
// number, so this is a macro): straight into y, or through a buffer where it is cut.
#define TANDEM_STORE_SUMS(tile, sums)                                               \
  do {                                                                              \
    const Sums& s_ = (sums);                                                        \
    if (s_.col >= s_.n_out) break;                                                  \
    alignas(64) float tmp_[kBlockRows][16];                                         \
    const bool whole_ = s_.whole();                                                 \
    _tile_stored(tile, whole_ ? s_.at() : &tmp_[0][0], whole_ ? s_.n_out * 4 : 64); \
    if (!whole_) s_.from_buffer(tmp_);                                              \
  } while (false)

// How far ahead a panel's first pass prefetches its weights, in k blocks (4 KiB of the
// panel each). Measured on the Xeon, `bench_forward` `BM_DecodeStep/bf16`, 2 rounds each:
// 1 block 10.8-10.9 ms at one row, 21.0-21.3 at 32; 2 blocks 11.0-11.1, 21.6-21.7; 4 blocks
// 11.3-11.5, 22.1-22.2; none 11.7-13.2, 22.4.
constexpr int64_t kAheadBlocks = 1;

// Prefetches the first `lines` lines from `block` in each of a k block's 16 pair rows (256
// bytes apart) into L2: the weights a later k block's tile loads will read. Into L2 rather
// than L1 (`bench_forward` `BM_DecodeStep/bf16`, 3 alternating rounds): 32 rows 20.5-20.7 ->
// 20.0-20.1 ms, one row and 8 rows level, `BM_Prefill/tokens:512` 186-194 -> 181-186 ms.
[[gnu::always_inline]] inline void prefetch_block(const uint8_t* block, int lines) {
  for (int r = 0; r < kBlockPairs; ++r)
    for (int l = 0; l < lines; ++l)
      _mm_prefetch(reinterpret_cast<const char*>(block + r * kPairRow + 64 * l), _MM_HINT_T1);
}

struct Unit {
  const MatmulArgs& a;
  const uint8_t* panel;
  int64_t k_blocks;
  int64_t row0, col0;  // first row, first output
  int rows0, rows1;    // rows in each block (rows1 0: one block)
  bool prefetch;       // the panel's first pass: stream it in ahead
  // The panel the task takes next (null: none), which the unit's passes bring into L2 a share
  // at a time: from its line line0 on, lines_per_block lines a k block of each pass.
  const uint8_t* next = nullptr;
  int64_t line0 = 0, lines_per_block = 0;
  const uint8_t* act(int block) const {
    return reinterpret_cast<const uint8_t*>(a.x_pairs +
                                            (row0 + block * kBlockRows) * padded_pairs(a.n_in));
  }
  int64_t act_stride() const { return padded_pairs(a.n_in) * 4; }
  Sums sums(int block, int col_block) const {
    return {a.y, a.n_out, row0 + block * kBlockRows, col0 + 16 * col_block,
            block == 0 ? rows0 : rows1};
  }
};

[[gnu::always_inline]] inline void zero_sums() {
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
}

// The weights at w (k block kb), `lines` lines a pair row wide, kAheadBlocks on.
[[gnu::always_inline]] inline void prefetch_ahead(const Unit& u, int64_t kb, const uint8_t* w,
                                                  int lines) {
  if (u.prefetch && kb + kAheadBlocks < u.k_blocks)
    prefetch_block(w + kAheadBlocks * kKBlockBytes, lines);
}

// This k block's share of the next panel into L2 (Unit::next), for the unit's half-panel
// pass `pass` (0 or 1; a one-block unit takes both). A chunk's first group streamed its panel
// from memory, waiting at every k block, while the other groups computed from L2; now the
// stream runs under the other groups' products.
[[gnu::always_inline]] inline void prefetch_next_panel(const Unit& u, int64_t kb, int pass) {
  if (u.next == nullptr) return;
  const int64_t lines = static_cast<int64_t>(u.a.panel_bytes) / 64;
  const int64_t first = u.line0 + (pass * u.k_blocks + kb) * u.lines_per_block;
  const int64_t end = first + u.lines_per_block < lines ? first + u.lines_per_block : lines;
  for (int64_t l = first; l < end; ++l)
    _mm_prefetch(reinterpret_cast<const char*>(u.next + 64 * l), _MM_HINT_T1);
}

// One block of rows against the whole panel: four tiles of sums.
void one_block(const Unit& u) {
  zero_sums();
  const uint8_t* x = u.act(0);
  for (int64_t kb = 0; kb < u.k_blocks; ++kb) {
    const uint8_t* w = u.panel + kb * kKBlockBytes;
    prefetch_ahead(u, kb, w, 4);
    prefetch_next_panel(u, kb, 0);
    prefetch_next_panel(u, kb, 1);
    _tile_loadd(4, x + kb * 64, u.act_stride());
    _tile_loadd(5, w, kPairRow);
    _tile_dpbf16ps(0, 4, 5);
    _tile_loadd(6, w + 64, kPairRow);
    _tile_dpbf16ps(1, 4, 6);
    _tile_loadd(7, w + 128, kPairRow);
    _tile_dpbf16ps(2, 4, 7);
    _tile_loadd(5, w + 192, kPairRow);
    _tile_dpbf16ps(3, 4, 5);
  }
  TANDEM_STORE_SUMS(0, u.sums(0, 0));
  TANDEM_STORE_SUMS(1, u.sums(0, 1));
  TANDEM_STORE_SUMS(2, u.sums(0, 2));
  TANDEM_STORE_SUMS(3, u.sums(0, 3));
}

// Two blocks of rows against half the panel (columns 2h and 2h + 1): 2 x 2 tiles of sums.
void two_blocks(const Unit& u, int half) {
  zero_sums();
  const uint8_t* x0 = u.act(0);
  const uint8_t* x1 = u.act(1);
  for (int64_t kb = 0; kb < u.k_blocks; ++kb) {
    const uint8_t* w = u.panel + kb * kKBlockBytes + 128 * half;
    // The first half brings in whole pair rows; the second finds its half in cache. A
    // 32-row step 22.3-23.0 -> 22.0-22.1 ms against each half prefetching its own (3 rounds).
    if (half == 0) prefetch_ahead(u, kb, w, 4);
    prefetch_next_panel(u, kb, half);
    // The weights with TILELOADDT1, the load that tells the caches they are not read again
    // soon (the next group reads them from L2), so they do not push the block's
    // activations, which the second half reads again, out of L1. 1024-token prefill's
    // matmuls 130.2-131.3 -> 116.9-122.8 ms (4 alternating rounds, TANDEM_BENCH_PHASES=1
    // BM_Prefill); the activations streamed instead: 182-193 ms. docs/performance.md.
    _tile_loadd(4, x0 + kb * 64, u.act_stride());
    _tile_stream_loadd(6, w, kPairRow);
    _tile_dpbf16ps(0, 4, 6);
    _tile_stream_loadd(7, w + 64, kPairRow);
    _tile_dpbf16ps(1, 4, 7);
    _tile_loadd(5, x1 + kb * 64, u.act_stride());
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  TANDEM_STORE_SUMS(0, u.sums(0, 2 * half));
  TANDEM_STORE_SUMS(1, u.sums(0, 2 * half + 1));
  TANDEM_STORE_SUMS(2, u.sums(1, 2 * half));
  TANDEM_STORE_SUMS(3, u.sums(1, 2 * half + 1));
}

// A task's share of (panel, group of 32 rows) units. They are ordered chunk by chunk
// (kChunkGroups groups of rows), panel by panel within a chunk and group by group within a
// panel: a panel is read from memory or L3 by a chunk's first group and from L2 by the rest,
// and a chunk's activations stay in L2 across the panels. Each output's sums are one pass
// over the whole of k in one tile, so the split changes no bit.
void amx_bf16_loop(const MatmulArgs& a, int64_t from, int64_t to, int64_t of) {
  const int64_t n_panels = (a.n_out + kPanel - 1) / kPanel;
  const int64_t n_groups = (a.n_rows + kGroupRows - 1) / kGroupRows;
  const TaskShare ours(n_panels, n_groups, from, to, of);
  const int64_t k_blocks = static_cast<int64_t>(a.panel_bytes) / kKBlockBytes;
  const int64_t chunk_units = kChunkGroups * n_panels;
  int configured0 = -1, configured1 = -1;
  for (int64_t u = ours.first; u < ours.end; ++u) {
    const int64_t chunk = u / chunk_units, in_chunk = u % chunk_units;
    const int64_t left = n_groups - chunk * kChunkGroups;
    const int64_t groups = left < kChunkGroups ? left : kChunkGroups;
    const int64_t p = in_chunk / groups, in_panel = in_chunk % groups;
    const int64_t g = chunk * kChunkGroups + in_panel;
    const int64_t row0 = g * kGroupRows;
    const int64_t rows = a.n_rows - row0 < kGroupRows ? a.n_rows - row0 : kGroupRows;
    const int rows0 = static_cast<int>(rows < kBlockRows ? rows : kBlockRows);
    const int rows1 = static_cast<int>(rows - rows0);
    if (rows0 != configured0 || rows1 != configured1) {
      configure(rows0, rows1);
      configured0 = rows0;
      configured1 = rows1;
    }
    // A panel's first group in the share streams it in ahead of its tile loads.
    const bool first_pass = in_panel == 0 || u == ours.first;
    Unit unit{a,          a.panels + p * static_cast<int64_t>(a.panel_bytes),
              k_blocks,   row0,
              p * kPanel, rows0,
              rows1,      first_pass};
    // The chunk's other groups bring in the panel that follows (that of the next chunk
    // after the last), each pass its share.
    const bool more = p + 1 < n_panels || (chunk + 1) * kChunkGroups < n_groups;
    if (in_panel > 0 && more) {
      const int64_t next_p = p + 1 < n_panels ? p + 1 : 0;
      const int64_t passes = 2 * (groups - 1) * k_blocks;
      unit.next = a.panels + next_p * static_cast<int64_t>(a.panel_bytes);
      unit.lines_per_block = (static_cast<int64_t>(a.panel_bytes) / 64 + passes - 1) / passes;
      unit.line0 = 2 * (in_panel - 1) * k_blocks * unit.lines_per_block;
    }
    if (rows1 == 0) {
      one_block(unit);
    } else {
      two_blocks(unit, 0);
      if (unit.col0 + 32 < a.n_out) two_blocks(unit, 1);
    }
  }
  if (configured0 >= 0) _tile_release();
}

}  // namespace

PanelLoop amx_bf16_panel_loop() { return &amx_bf16_loop; }

// Four tiles of sums against two of activations and two of weights, back to back: the tile
// unit's throughput. Each instruction is 16 x 16 lanes of 16 pairs: 16384 flops.
int64_t peak_amx_bf16(int64_t iterations, float* sink) {
  configure(kBlockRows, kBlockRows);
  alignas(64) uint16_t ones[kBlockRows * 32];
  for (uint16_t& v : ones) v = 0x3c00;  // BF16 2^-7: sums stay finite
  _tile_loadd(4, ones, 64);
  _tile_loadd(5, ones, 64);
  _tile_loadd(6, ones, 64);
  _tile_loadd(7, ones, 64);
  zero_sums();
  for (int64_t i = 0; i < iterations; ++i) {
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  alignas(64) float out[kBlockRows][16];
  _tile_stored(0, out, 64);
  _tile_release();
  *sink += out[3][5];
  return iterations * 4 * kBlockRows * 16 * kBlockPairs * 4;  // two products, two adds a pair
}

}  // namespace tandem::kernels::detail
