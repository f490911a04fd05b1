// What the two AMX-INT8 files of the quantized matmul share (amx/quant_matmul.cpp: blocks of
// 32; amx/quant_super.cpp: the K-quants' super-blocks of 256): the tile configuration, the
// activation rows' scales laid out by tiles of 16 rows, and the K-quants' entry points.
// Internal to runner/kernels/amx/; every such file is compiled with AMX flags.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "runner/kernels/quant_matmul.h"

namespace tandem::kernels::detail {

// The super-block types with a tile form (Q2_K to Q6_K, IQ4_XS), and that form:
// quant_super.cpp.
bool amx_super_kind(QuantKind kind);
void amx_super_rows(const QuantMatmulArgs& a, int64_t out_begin, int64_t out_end);

namespace {

constexpr int kTileRows = 16;  // activation rows of an A or C tile

// LDTILECFG's 64-byte operand, palette 1: each tile's bytes a row and rows.
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

inline void load_tile_config(const TileConfig& c) {
  // As amx/matmul.cpp: GCC 12 would drop the stores that fill c without the empty asm.
  asm volatile("" : : "r"(&c) : "memory");
  _tile_loadconfig(&c);
}

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

}  // namespace
}  // namespace tandem::kernels::detail
