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

}  // namespace
}  // namespace tandem::kernels::detail
