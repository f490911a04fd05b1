// The matmul loops every instruction set shares: rows in register tiles, panels one
// after another, and per packed type the loop over k. Internal to runner/kernels/: only
// the ISA files include it, each supplying its micro-kernel, a struct V of static members:
//   Vec, kWidth            an F32 vector (a GCC vector type, as __m256 and __m512 are)
//                          and its lane count
//   kVecs                  vectors per tile row of a tile of several rows (R rows x
//                          kVecs * kWidth outputs, a sub-panel: the tiles fit the ISA's
//                          register file); a one-row tile is a whole panel (kTileVecs)
//   kPrefetchAhead         bytes ahead in a one-row pass's weight stream (read once),
//   kPrefetchAheadL2       the same where those prefetches go into L2 (Intel, isa.h)
//   kTilePrefetchAhead     bytes ahead in a tile of several rows' stream
//   kChunkBytes            0, or the bytes of a panel's k-chunk: batches then go chunk by
//                          chunk (chunked_panels below)
//   broadcast(const float*), fma(a, b, c) = a * b + c, rounded once
//   store(float*, Vec)
//   load(const float*), load(const uint16_t*): kWidth F32 or F16 (IEEE half) weights
//   load_q8(const int8_t*, Vec scale): kWidth Q8_0 values as scale * q, rounded once (the
//                          KV cache's Q8_0 blocks, vector_loops.h)
// So a new packed type is a k loop here and a load per ISA, not a loop per ISA.
//
// Each output has one accumulator lane that adds x[k] * w[k] for k = 0, 1, ... in order,
// whatever R: rows are bit-identical across batch sizes (runner/kernels/isa.h).
//
// Everything sits in an anonymous namespace and uses no standard-library template: each
// ISA file is compiled with its own -m flags, and a copy with external linkage could be
// the one the linker keeps for every caller, faulting on a CPU without that ISA.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runner/kernels/isa.h"

// Lambdas called once per step of k, inlined into their loop.
#define TANDEM_STEP_INLINE __attribute__((always_inline))

namespace tandem::kernels::detail {
namespace {

// A one-row tile (batch 1, and a batch's odd row) takes the whole panel: its accumulators
// fit the registers even on AVX2, and it then streams the panel's weights in order from
// memory, where AVX2's quarter-panel passes each read one line in four (BF16 at batch 1:
// about half the read bandwidth). Each output still adds its products in k order in one
// lane, so the width changes no bits.
template <class V>
constexpr int tile_vecs(int64_t rows) {
  return rows == 1 ? kPanel / V::kWidth : V::kVecs;
}
template <class V, int R>
constexpr int kTileVecs = tile_vecs<V>(R);
template <class V, int R>
constexpr int kTileOutputs = (V::kWidth * kTileVecs<V, R>);

template <class V, int R>
using Acc = typename V::Vec[R][kTileVecs<V, R>];

// One prefetch per cache line of a sub-panel's weights for one step of k; as read once
// where the tile is a single row (a decode step: nothing reads the panel again, and
// weights kept in every cache level would push out the activations and the KV blocks;
// isa.h, TANDEM_PREFETCH_READ_ONCE), into every level where further row tiles read the
// same panel.
template <class V, size_t kRowBytes, bool kReadOnce>
[[gnu::always_inline]] inline void prefetch_row(const void* row) {
  int ahead = V::kTilePrefetchAhead;
  if constexpr (kReadOnce) ahead = g_read_once_into_l2 ? V::kPrefetchAheadL2 : V::kPrefetchAhead;
  for (size_t offset = 0; offset < kRowBytes; offset += 64) {
    const char* p = static_cast<const char*>(row) + offset + ahead;
    if constexpr (kReadOnce) {
      TANDEM_PREFETCH_READ_ONCE(p);
    } else {
      __builtin_prefetch(p, 0, 3);
    }
  }
}

// acc[r] += x[r * ldx] * w for each of the R rows: one FMA per output lane.
template <class V, int R>
[[gnu::always_inline]] inline void fma_rows(Acc<V, R>& acc,
                                            const typename V::Vec (&w)[kTileVecs<V, R>],
                                            const float* x, int64_t ldx) {
  for (int r = 0; r < R; ++r) {
    const typename V::Vec xr = V::broadcast(x + r * ldx);
    for (int v = 0; v < kTileVecs<V, R>; ++v) acc[r][v] = V::fma(xr, w[v], acc[r][v]);
  }
}

// A second stream a tile pass prefetches into L2 as it goes: a part of the next panel,
// `bytes_per_step` at each step of k (none where base is null).
struct FarPrefetch {
  const char* base = nullptr;
  int64_t bytes_per_step = 0;
  int64_t sub_stride = 0;  // run_tile: sub-panel i's stream starts i * sub_stride further
};

// Step s's share of a far stream, into L2 (nothing where far.base is null).
[[gnu::always_inline]] inline void prefetch_far(const FarPrefetch& far, int64_t s) {
  if (far.base == nullptr) return;
  for (int64_t b = 0; b < far.bytes_per_step; b += 64)
    __builtin_prefetch(far.base + s * far.bytes_per_step + b, 0, 2);
}

// Calls step(s, w) for s < n_steps, w the sub-panel's weights at step s (steps are kPanel
// Weights apart) for a tile of R rows, prefetching kPrefetchAhead bytes ahead in that stream.
template <class V, class Weight, int R, class Step>
[[gnu::always_inline]] inline void stream(const void* weights, int col, int64_t n_steps,
                                          const FarPrefetch& far, Step&& step) {
  const Weight* p = static_cast<const Weight*>(weights) + col;
  for (int64_t s = 0; s < n_steps; ++s) {
    const Weight* ws = p + s * kPanel;
    prefetch_row<V, kTileOutputs<V, R> * sizeof(Weight), R == 1>(ws);
    prefetch_far(far, s);
    step(s, ws);
  }
}

// A tile type is a TileShape (its ISA and rows per tile: as many as leave registers for
// the weights) with a k loop adding one sub-panel's products into acc over a range of its
// units (units(a) in all, kUnitBytes of the panel each, kStepsPerUnit steps of k each).
template <class V, int kRows>
struct TileShape {
  using Isa = V;
  static constexpr int kMaxRows = kRows;
};

// F32 and F16 (Weight = float or uint16_t): one k per step, w[k][64]. With kStore, the pass
// also stores the widened weights into a.widened (widened_panels below): chunk[k - u0][64].
template <class V, class Weight>
struct WidenTile : TileShape<V, 6> {
  static int64_t units(const MatmulArgs& a) { return a.n_in; }
  static constexpr int64_t kUnitBytes = kPanel * sizeof(Weight);
  static constexpr int64_t kStepsPerUnit = 1;
  // Whether batches widen these weights once for all their row tiles (widened_panels): F16,
  // whose vcvtph2ps is two uops on Intel's FMA ports.
  static constexpr bool kWidenOnce = sizeof(Weight) == 2;
  template <int R, bool kStore = false>
  [[gnu::always_inline]] static void k_loop(Acc<V, R>& acc, const MatmulArgs& a,
                                            const uint8_t* panel, int64_t row0, int col, int64_t u0,
                                            int64_t u1, const FarPrefetch& far) {
    const float* x = a.x + row0 * a.n_in + u0;
    float* out = kStore ? a.widened + col : nullptr;
    stream<V, Weight, R>(panel + u0 * kUnitBytes, col, u1 - u0, far,
                         [&](int64_t k, const Weight* wk) TANDEM_STEP_INLINE {
                           typename V::Vec w[kTileVecs<V, R>];
                           for (int v = 0; v < kTileVecs<V, R>; ++v) {
                             w[v] = V::load(wk + v * V::kWidth);
                             if constexpr (kStore) V::store(out + k * kPanel + v * V::kWidth, w[v]);
                           }
                           fma_rows<V, R>(acc, w, x + k, a.n_in);
                         });
  }
};

template <class V>
using F32Tile = WidenTile<V, float>;
template <class V>
using F16Tile = WidenTile<V, uint16_t>;

// BF16 pairs of k, w[k / 2][64][2], widened to F32 by integer lane operations (GCC's
// vector extensions, vpslld and vpand on every ISA). A BF16 value is the top half of an
// F32: the pair's first k is its low half shifted up, the second its high half in place.
// (One shift or mask per vector: widening once for all row tiles, as F16 is, measured no
// faster; widened_panels.)
template <class V>
struct Bf16WidenTile : TileShape<V, 5> {
  static int64_t units(const MatmulArgs& a) { return (a.n_in + 1) / 2; }
  static constexpr int64_t kUnitBytes = kPanel * 4;
  static constexpr int64_t kStepsPerUnit = 1;
  typedef uint32_t Lanes __attribute__((vector_size(sizeof(typename V::Vec))));
  template <int R>
  [[gnu::always_inline]] static void k_loop(Acc<V, R>& acc, const MatmulArgs& a,
                                            const uint8_t* panel, int64_t row0, int col, int64_t u0,
                                            int64_t u1, const FarPrefetch& far) {
    const float* x = a.x + row0 * a.n_in + 2 * u0;
    const int64_t last = a.n_in - 2 * u0;  // 2 * kp + 1 == last: an odd n_in's last pair
    auto pair = [&](int64_t kp, const uint32_t* wk) TANDEM_STEP_INLINE {
      Lanes raw[kTileVecs<V, R>];
      for (int v = 0; v < kTileVecs<V, R>; ++v) {
        __builtin_memcpy(&raw[v], wk + v * V::kWidth, sizeof(Lanes));
      }
      typename V::Vec w[kTileVecs<V, R>];
      for (int v = 0; v < kTileVecs<V, R>; ++v)
        w[v] = __builtin_bit_cast(typename V::Vec, raw[v] << 16);
      fma_rows<V, R>(acc, w, x + 2 * kp, a.n_in);
      if (2 * kp + 1 == last) return;  // an odd n_in: the last pair has no second k
      for (int v = 0; v < kTileVecs<V, R>; ++v) {
        w[v] = __builtin_bit_cast(typename V::Vec, raw[v] & 0xffff0000u);
      }
      fma_rows<V, R>(acc, w, x + 2 * kp + 1, a.n_in);
    };
    stream<V, uint32_t, R>(panel + u0 * kUnitBytes, col, u1 - u0, far, pair);
  }
};

// A widening tile's pass that also stores what it widens (widened_panels).
template <class Tile>
struct StoringTile : TileShape<typename Tile::Isa, Tile::kMaxRows> {
  template <int R>
  [[gnu::always_inline]] static void k_loop(Acc<typename Tile::Isa, R>& acc, const MatmulArgs& a,
                                            const uint8_t* panel, int64_t row0, int col, int64_t u0,
                                            int64_t u1, const FarPrefetch& far) {
    Tile::template k_loop<R, true>(acc, a, panel, row0, col, u0, u1, far);
  }
};

// F32 weights a StoringTile pass widened, a.widened[k - u0][64], read by the other row tiles
// of the batch (widened_panels). Each such pass also prefetches its share of the next chunk's
// source into L2, far.bytes_per_step bytes a step.
template <class V>
struct ChunkTile : TileShape<V, 6> {
  template <int R>
  [[gnu::always_inline]] static void k_loop(Acc<V, R>& acc, const MatmulArgs& a, const uint8_t*,
                                            int64_t row0, int col, int64_t u0, int64_t u1,
                                            const FarPrefetch& far) {
    const float* x = a.x + row0 * a.n_in + u0;
    const float* w = a.widened + col;
    for (int64_t s = 0; s < u1 - u0; ++s) {
      prefetch_far(far, s);
      typename V::Vec wv[kTileVecs<V, R>];
      for (int v = 0; v < kTileVecs<V, R>; ++v) wv[v] = V::load(w + s * kPanel + v * V::kWidth);
      fma_rows<V, R>(acc, wv, x + s, a.n_in);
    }
  }
};

// The k range of a pass, in its tile's units (k, BF16 pairs or Q8_0 blocks): the whole of
// k, or one chunk of it (chunked_panels).
struct UnitRange {
  int64_t begin = 0, end = 0;
};

// One sub-panel's pass: R rows x kTileOutputs outputs at (row0, c), through acc, over the
// units u. A pass that does not start at k = 0 resumes from the sums the pass before it
// stored in y: a float stored and loaded back is the same float, so each lane still adds
// its products in k order. A sub-panel cut by n_out (the last panel's) goes through a
// buffer, in a pass of its own: where one pass served both, the buffer's copy kept GCC from
// holding the accumulators in registers, so every step of k stored them to the stack
// (AVX2's FMA chains went through memory: the 32-row BF16 step ran at 0.29 of the FMA peak
// on a Zen 3).
template <class Tile, int R, bool kCut>
[[gnu::always_inline]] inline void sub_panel_pass(const MatmulArgs& a, const uint8_t* panel,
                                                  int64_t row0, int col, int64_t c, UnitRange u,
                                                  const FarPrefetch& far) {
  using V = typename Tile::Isa;
  constexpr int kVecs = kTileVecs<V, R>;
  Acc<V, R> acc;
  float* y = a.y + row0 * a.n_out + c;
  for (int r = 0; r < R; ++r) {
    if (u.begin == 0) {
      for (int v = 0; v < kVecs; ++v) acc[r][v] = typename V::Vec{};
    } else if constexpr (!kCut) {
      for (int v = 0; v < kVecs; ++v) acc[r][v] = V::load(y + r * a.n_out + v * V::kWidth);
    } else {
      alignas(64) float tmp[kTileOutputs<V, R>] = {};
      for (int64_t i = 0; i < a.n_out - c; ++i) tmp[i] = y[r * a.n_out + i];
      for (int v = 0; v < kVecs; ++v) acc[r][v] = V::load(tmp + v * V::kWidth);
    }
  }
  Tile::template k_loop<R>(acc, a, panel, row0, col, u.begin, u.end, far);
  for (int r = 0; r < R; ++r) {
    if constexpr (!kCut) {
      for (int v = 0; v < kVecs; ++v) V::store(y + r * a.n_out + v * V::kWidth, acc[r][v]);
    } else {
      alignas(64) float tmp[kTileOutputs<V, R>];
      for (int v = 0; v < kVecs; ++v) V::store(tmp + v * V::kWidth, acc[r][v]);
      for (int64_t i = 0; i < a.n_out - c; ++i) y[r * a.n_out + i] = tmp[i];
    }
  }
}

template <class Tile, int R>
[[gnu::noinline]] void cut_sub_panel(const MatmulArgs& a, const uint8_t* panel, int64_t row0,
                                     int col, int64_t c, UnitRange u, const FarPrefetch& far) {
  sub_panel_pass<Tile, R, true>(a, panel, row0, col, c, u, far);
}

// R rows x one panel at (row0, col0), a sub-panel at a time; sub-panels past n_out (the
// last panel's padding) are skipped. Sub-panel i prefetches from far.base + i * sub_stride.
template <class Tile, int R>
void run_tile(const MatmulArgs& a, const uint8_t* panel, int64_t row0, int64_t col0, UnitRange u,
              const FarPrefetch& far) {
  using V = typename Tile::Isa;
  for (int col = 0, i = 0; col < kPanel && col0 + col < a.n_out; col += kTileOutputs<V, R>, ++i) {
    const int64_t c = col0 + col;
    const FarPrefetch sub{far.base != nullptr ? far.base + i * far.sub_stride : nullptr,
                          far.bytes_per_step};
    if (a.n_out - c >= kTileOutputs<V, R>) {
      sub_panel_pass<Tile, R, false>(a, panel, row0, col, c, u, sub);
    } else {
      cut_sub_panel<Tile, R>(a, panel, row0, col, c, u, sub);
    }
  }
}

template <class Tile, int R = Tile::kMaxRows>
inline void run_rows(int64_t rows, const MatmulArgs& a, const uint8_t* panel, int64_t row0,
                     int64_t col0, UnitRange u, const FarPrefetch& far) {
  if constexpr (R >= 1) {
    if (rows == R) {
      run_tile<Tile, R>(a, panel, row0, col0, u, far);
    } else {
      run_rows<Tile, R - 1>(rows, a, panel, row0, col0, u, far);
    }
  }
}

// A batch's rows in tiles: the first takes kMaxRows, the others share the rest evenly
// (32 = 6 + 6 + 5 + 5 + 5 + 5, not a last tile of 2 that leaves most FMA pipes idle).
template <class Tile>
struct TilePlan {
  int64_t n_tiles, base, extra;
  explicit TilePlan(int64_t n_rows)
      : n_tiles((n_rows + Tile::kMaxRows - 1) / Tile::kMaxRows),
        base(n_tiles > 1 ? (n_rows - Tile::kMaxRows) / (n_tiles - 1) : n_rows),
        extra(n_tiles > 1 ? (n_rows - Tile::kMaxRows) % (n_tiles - 1) : 0) {}
  int64_t rows(int64_t t) const {
    if (n_tiles == 1) return base;
    return t == 0 ? Tile::kMaxRows : base + (t - 1 < extra ? 1 : 0);
  }
  int64_t first_row(int64_t t) const {
    int64_t row0 = 0;
    for (int64_t i = 0; i < t; ++i) row0 += rows(i);
    return row0;
  }
};

// A task's share of a matmul, [from, to) of `of` parts (isa.h, PanelLoop), in units of
// (panel, row tile) pairs taken panel-major, so a share may start or end between a
// panel's row tiles: a batch's matmul splits into shares as fine as its tiles, where whole
// panels left a 576-output matrix (9 panels) split 4 + 5 at best. Panel p's tiles
// [tile_begin(p), tile_end(p)) are the task's. Each output is still computed by one tile
// pass over the whole of k, so the split changes no bit. At one row a tile is a panel.
struct TaskShare {
  int64_t n_tiles, first, end;  // units: p * n_tiles + t
  TaskShare(int64_t n_panels, int64_t tiles, int64_t from, int64_t to, int64_t of)
      : n_tiles(tiles), first(from * (n_panels * tiles) / of), end(to * (n_panels * tiles) / of) {}
  int64_t panel_begin() const { return first / n_tiles; }
  int64_t panel_end() const { return first < end ? (end - 1) / n_tiles + 1 : panel_begin(); }
  int64_t tile_begin(int64_t p) const { return first > p * n_tiles ? first - p * n_tiles : 0; }
  int64_t tile_end(int64_t p) const {
    return end < (p + 1) * n_tiles ? end - p * n_tiles : n_tiles;
  }
};

// The panel before which a task's far prefetches stop: the end of its own, or, where the
// thread's next range starts where this one ends (MatmulArgs::region_parts), one panel on,
// so that range does not start on a panel still in memory.
inline int64_t prefetch_end(const MatmulArgs& a, const TaskShare& ours, int64_t to) {
  const int64_t n_panels = (a.n_out + kPanel - 1) / kPanel;
  const bool follows = a.region_parts > 0 && to % a.region_parts != 0;
  return follows && ours.panel_end() < n_panels ? ours.panel_end() + 1 : ours.panel_end();
}

// Rows [row0, row0 + rows) of panel p are final: the matmul's epilogue, if any (isa.h,
// MatmulArgs::epilogue), runs on them while they are in this core's cache.
inline void panel_done(const MatmulArgs& a, int64_t row0, int64_t rows, int64_t p) {
  if (a.epilogue == nullptr) return;
  const int64_t col0 = p * kPanel;
  a.epilogue(a.epilogue_ctx, row0, rows, col0, a.n_out - col0 < kPanel ? a.n_out - col0 : kPanel);
}

// Batches of one or two tiles where V::kChunkBytes > 0 (AVX2). A tile of several rows there
// covers a quarter panel, so the first tile's four passes each read one cache line in four
// of the whole panel from memory and stall on it (at M = 8, BF16, half of the 5-row tile's
// samples sat on its weight load), while a second tile computed from cache with memory
// idle. Here all the tiles run over one k-chunk of the panel (kChunkBytes: it stays in L1)
// before the next chunk, and every pass prefetches its share of that next chunk into L2 as
// it goes: memory streams while the arithmetic runs. Each pass resumes its sums from y
// (sub_panel_pass), so the bits are those of one pass over the whole of k. From three tiles
// up, panel_loop's far prefetch already hides the next panel behind the later tiles, and
// chunks there were no faster (M = 16 and 32, Zen 3, `BM_DecodeStep`).
constexpr int64_t kMaxChunkedTiles = 2;

template <class Tile>
void chunked_panels(const MatmulArgs& a, const TilePlan<Tile>& plan, const TaskShare& ours,
                    int64_t to) {
  using V = typename Tile::Isa;
  const int64_t units = Tile::units(a);
  constexpr int64_t kPerChunk =
      V::kChunkBytes > Tile::kUnitBytes ? V::kChunkBytes / Tile::kUnitBytes : 1;
  constexpr int64_t kChunkBytes = kPerChunk * Tile::kUnitBytes;
  const int64_t share = (kChunkBytes + plan.n_tiles - 1) / plan.n_tiles;  // a tile's
  const uint8_t* end = a.panels + prefetch_end(a, ours, to) * static_cast<int64_t>(a.panel_bytes);
  for (int64_t p = ours.panel_begin(); p < ours.panel_end(); ++p) {
    const uint8_t* panel = a.panels + p * static_cast<int64_t>(a.panel_bytes);
    const int64_t t_begin = ours.tile_begin(p), t_end = ours.tile_end(p);
    // units >= 1 (PackedWeights::pack refuses empty rows), so every output gets a pass.
    for (int64_t u0 = 0; u0 < units; u0 += kPerChunk) {
      const UnitRange u{u0, u0 + kPerChunk < units ? u0 + kPerChunk : units};
      // The next chunk is this panel's next, or the next panel's first: contiguous.
      const uint8_t* next = panel + u.end * Tile::kUnitBytes;
      const int64_t steps = (u.end - u.begin) * Tile::kStepsPerUnit;
      for (int64_t t = t_begin, row0 = plan.first_row(t_begin); t < t_end; ++t) {
        const int64_t rows = plan.rows(t);
        const int64_t n_sub = kPanel / (V::kWidth * tile_vecs<V>(rows));  // its passes
        const int64_t sub_share = (share + n_sub - 1) / n_sub;
        const FarPrefetch far{
            next < end ? reinterpret_cast<const char*>(next + t * share) : nullptr,
            (sub_share + steps - 1) / steps, sub_share};
        run_rows<Tile>(rows, a, panel, row0, p * kPanel, u, far);
        if (u.end == units) panel_done(a, row0, rows, p);
        row0 += rows;
      }
    }
  }
}

// Batches of kMinWidenedTiles row tiles or more, where V::kWidenChunk > 0 (AVX-512), for
// the weights a tile widens at a cost (Tile::kWidenOnce: F16). A task's first row tile of a
// panel widens each k-chunk as it computes and stores it (StoringTile); the task's other row
// tiles of that panel run plain F32 FMAs over the stored chunk (ChunkTile). Widening in
// every tile's pass spent each tile's FMA ports on the conversion again: per step of k, a
// 6-row tile's four vcvtph2ps are 8 uops on Intel beside its 24 FMAs. The stores go to the
// store ports, which the tiles leave idle, and a chunk stays in L1 (a chunk of 512 k, in L2,
// made the storing pass twice as slow). The passes resume from the sums in y
// (sub_panel_pass), and a widened weight is the same float, so each output adds the same
// products in the same order as one pass over the whole of k: the bits of a row alone.
template <class Tile>
void widened_panels(const MatmulArgs& a, const TilePlan<Tile>& plan, const TaskShare& ours,
                    int64_t to) {
  using V = typename Tile::Isa;
  constexpr int64_t kK = V::kWidenChunk;
  alignas(64) float chunk[kK * kPanel];
  MatmulArgs wa = a;
  wa.widened = chunk;
  const uint8_t* end = a.panels + prefetch_end(a, ours, to) * static_cast<int64_t>(a.panel_bytes);
  for (int64_t p = ours.panel_begin(); p < ours.panel_end(); ++p) {
    const uint8_t* panel = a.panels + p * static_cast<int64_t>(a.panel_bytes);
    const int64_t t_begin = ours.tile_begin(p), t_end = ours.tile_end(p);
    const int64_t row_begin = plan.first_row(t_begin);
    if (t_end - t_begin == 1) {  // nothing would read a stored chunk
      run_rows<Tile>(plan.rows(t_begin), a, panel, row_begin, p * kPanel,
                     UnitRange{0, Tile::units(a)}, FarPrefetch{});
      panel_done(a, row_begin, plan.rows(t_begin), p);
      continue;
    }
    // The other tiles' shares of the next chunk's source, which they prefetch into L2.
    const int64_t share = (kK * Tile::kUnitBytes + t_end - t_begin - 2) / (t_end - t_begin - 1);
    for (int64_t k0 = 0; k0 < a.n_in; k0 += kK) {
      const UnitRange k{k0, k0 + kK < a.n_in ? k0 + kK : a.n_in};
      run_rows<StoringTile<Tile>>(plan.rows(t_begin), wa, panel, row_begin, p * kPanel, k,
                                  FarPrefetch{});
      const bool last = k.end == a.n_in;
      if (last) panel_done(a, row_begin, plan.rows(t_begin), p);
      // The next chunk's source: this panel's next, or the next panel's first.
      const uint8_t* next =
          k.end < a.n_in ? panel + k.end * Tile::kUnitBytes : panel + a.panel_bytes;
      const int64_t steps = k.end - k.begin;
      const int64_t per_step = ((share + steps - 1) / steps + 63) / 64 * 64;
      int64_t row0 = row_begin + plan.rows(t_begin);
      for (int64_t t = t_begin + 1; t < t_end; ++t) {
        const int64_t rows = plan.rows(t);
        const FarPrefetch far{
            next < end ? reinterpret_cast<const char*>(next) + (t - t_begin - 1) * share : nullptr,
            per_step};
        run_rows<ChunkTile<V>>(rows, wa, panel, row0, p * kPanel, k, far);
        if (last) panel_done(a, row0, rows, p);
        row0 += rows;
      }
    }
  }
}

// Whether Tile's batches go through widened_panels.
template <class Tile>
constexpr bool widens_once() {
  if constexpr (requires { Tile::kWidenOnce; }) {
    return Tile::kWidenOnce && Tile::Isa::kWidenChunk > 0;
  } else {
    return false;
  }
}

// The fewest row tiles for which widened_panels pays. F16 on the Xeon (`bench_matmul`
// `BM_DecodeStep<kF16>`, medians of 4 alternating rounds): 32 rows (6 tiles) 36.7 -> 32.1
// ms, 16 (3 tiles) 19.5 -> 20.0, 8 (2 tiles) 14.6 -> 15.3.
constexpr int64_t kMinWidenedTiles = 4;

// Panel by panel; within a panel, rows in tiles, so the panel is read from memory once,
// by the first tile's pass, and then served from cache to the other tiles. That first pass
// waits on memory, so it takes the most rows (kMaxRows): their arithmetic hides in the
// wait. Memory idles during the later passes, so from three tiles up each also prefetches
// its share of the next panel into L2, spread over its steps; with two tiles, the second
// pass alone could not hide a whole panel.
template <class Tile>
void panel_loop(const MatmulArgs& a, int64_t from, int64_t to, int64_t of) {
  const int64_t n_panels = (a.n_out + kPanel - 1) / kPanel;
  const TilePlan<Tile> plan(a.n_rows);
  if constexpr (widens_once<Tile>()) {
    if (g_widen_chunks && plan.n_tiles >= kMinWidenedTiles)
      return widened_panels<Tile>(a, plan, TaskShare(n_panels, plan.n_tiles, from, to, of), to);
  }
  const TaskShare ours(n_panels, plan.n_tiles, from, to, of);
  if constexpr (Tile::Isa::kChunkBytes > 0) {
    if (a.n_rows > 1 && plan.n_tiles <= kMaxChunkedTiles)
      return chunked_panels<Tile>(a, plan, ours, to);
  }
  const UnitRange whole{0, Tile::units(a)};
  const int64_t n_steps = whole.end * Tile::kStepsPerUnit;
  const bool far_ahead = plan.n_tiles >= 3;
  const int64_t share = far_ahead ? (a.panel_bytes + plan.n_tiles - 2) / (plan.n_tiles - 1) : 0;
  const int64_t per_step = far_ahead ? (share + n_steps - 1) / n_steps : 0;
  const int64_t panel_end = ours.panel_end(), far_end = prefetch_end(a, ours, to);
  for (int64_t p = ours.panel_begin(); p < panel_end; ++p) {
    const uint8_t* panel = a.panels + p * a.panel_bytes;
    const char* next = reinterpret_cast<const char*>(panel + a.panel_bytes);
    const int64_t t_end = ours.tile_end(p);
    for (int64_t t = ours.tile_begin(p), row0 = plan.first_row(t); t < t_end; ++t) {
      const int64_t rows = plan.rows(t);
      const FarPrefetch far{
          far_ahead && t > 0 && p + 1 < far_end ? next + (t - 1) * share : nullptr, per_step};
      run_rows<Tile>(rows, a, panel, row0, p * kPanel, whole, far);
      panel_done(a, row0, rows, p);
      row0 += rows;
    }
  }
}

}  // namespace
}  // namespace tandem::kernels::detail
