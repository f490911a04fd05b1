// The AMX tile configuration every file in runner/kernels/amx/ loads: LDTILECFG's operand and
// the one way to load it. Internal to runner/kernels/amx/ (compiled with AMX flags).
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace tandem::kernels::detail {
namespace {

// LDTILECFG's 64-byte operand, palette 1: each tile's bytes a row and rows.
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

inline void load_tile_config(const TileConfig& c) {
  // GCC 12 does not count LDTILECFG as reading its operand and dropped the stores that fill
  // it (colsb came out zero: #GP): the empty asm makes them happen first.
  asm volatile("" : : "r"(&c) : "memory");
  _tile_loadconfig(&c);
}

}  // namespace
}  // namespace tandem::kernels::detail
