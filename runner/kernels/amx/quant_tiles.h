// What the two AMX-INT8 files of the quantized matmul share (amx/quant_matmul.cpp: blocks of
// 32; amx/quant_super.cpp: the K-quants' super-blocks of 256): the activation rows' scales
// laid out by tiles of 16 rows, and the super-blocks' entry point (the tile configuration is
// tile_config.h's, shared with amx/matmul.cpp).
// Internal to runner/kernels/amx/; every such file is compiled with AMX flags.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "runner/kernels/amx/tile_config.h"
#include "runner/kernels/quant_matmul.h"

namespace tandem::kernels::detail {

// The super-block types' tile form (Q2_K to Q6_K, IQ4_XS: activations in Q8_K):
// quant_super.cpp.
void amx_super_rows(const QuantMatmulArgs& a, int64_t out_begin, int64_t out_end);

namespace {

constexpr int kTileRows = 16;  // activation rows of an A or C tile

// A tile of 16 activation rows' block scales, block by block: xd[16 * j + m] is row m's d
// for block j (and xs its s, for the types with a min), so that the float steps read each
// as a broadcast at a fixed offset.
struct TileScales {
  const float* xd;
  const float* xs;
};

// The activation rows' block scales (d, and s where xs is not null; nb blocks a row) by
// tiles of 16 rows, as TileScales reads them; rows past the last are zeros.
inline void transpose_scales(const ActRows& x, int64_t nb, int64_t tiles, float* xd, float* xs) {
  for (int64_t t = 0; t < tiles; ++t) {
    for (int64_t j = 0; j < nb; ++j) {
      for (int64_t m = 0; m < kTileRows; ++m) {
        const int64_t row = t * kTileRows + m;
        const bool real = row < x.n_rows;
        xd[(t * nb + j) * 16 + m] = real ? x.d[row * nb + j] : 0.0f;
        if (xs != nullptr) xs[(t * nb + j) * 16 + m] = real ? x.s[row * nb + j] : 0.0f;
      }
    }
  }
}

// What one pass of a tile of activation rows over a decoded group asks of the next chunk's
// weights: its share of their cache lines, asked for a few per block (fetch_ahead), so that the
// next chunk's decode finds its records in L2 instead of waiting on memory. Both AMX loops
// decode a chunk of groups and then compute on it alone; the decode's loads stalled for about
// a fifth of a 32-row Q8_0 step (`perf annotate`) with nothing else to run meanwhile.
struct Ahead {
  const char* lines = nullptr;
  int64_t count = 0;
};

// Pass `pass` of `passes`'s share of the `groups` groups (group_bytes each) from `next`.
inline Ahead ahead_share(const uint8_t* next, int64_t groups, size_t group_bytes, int64_t pass,
                         int64_t passes) {
  const auto total = static_cast<int64_t>((static_cast<size_t>(groups) * group_bytes + 63) / 64);
  const int64_t share = (total + passes - 1) / passes;
  const int64_t first = pass * share < total ? pass * share : total;
  return {reinterpret_cast<const char*>(next) + 64 * first,
          total - first < share ? total - first : share};
}

// Block j of nb's part of a pass's share.
[[gnu::always_inline]] inline void fetch_ahead(const Ahead& a, int64_t j, int64_t nb) {
  const int64_t per = (a.count + nb - 1) / nb;
  const int64_t end = (j + 1) * per < a.count ? (j + 1) * per : a.count;
  for (int64_t l = j * per; l < end; ++l) _mm_prefetch(a.lines + 64 * l, _MM_HINT_T1);
}

// The chunks of a range ramp up: its first is decoded with nothing asked for ahead, so it is
// one group, and each later chunk doubles, up to `full` groups, while the one before it
// computes and asks for its lines. (A 32-row Q4_K_M step, 3 alternating rounds: a first chunk
// of two groups 18.1-18.4 ms, of one 17.3-17.8, of the full eight 18.8-19.4.)
constexpr int64_t kFirstChunkGroups = 1;
// A batch of one or two tiles of rows (a decode step of up to 32 rows) takes one group at a
// time in the blocks-of-32 loop: its activations are a few KiB and stay in L1 whatever the
// order, so a chunk of eight bought nothing and sent the decoded groups (11.5 KiB each at
// 576 inputs) out to L2 between the tiles' passes. One group: `BM_DecodeStep/bf16/batch:32`
// on the Q4_K_M file 17.5-18.7 -> 16.7-17.5 ms (4 rounds), `bench_matmul` Q5_0 M:16 8.9-9.1
// -> 7.6-7.9 ms, Q8_0 M:32 14.8-15.8 -> 13.3-13.8. The K-quants' loop was level or slower
// with it (ffn_down 3.49-3.59 -> 3.50-3.86 ms) and keeps its chunks.
constexpr int64_t kFewTiles = 2;
inline int64_t ramp(int64_t size, int64_t full) { return 2 * size < full ? 2 * size : full; }

// Groups in the chunk of `size` groups at `at`, the range ending at group `end`.
inline int64_t groups_at(int64_t at, int64_t size, int64_t end) {
  return at >= end ? 0 : (end - at < size ? end - at : size);
}

}  // namespace
}  // namespace tandem::kernels::detail
