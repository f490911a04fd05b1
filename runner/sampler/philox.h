// Philox4x32-10, the counter-based generator of Salmon et al. (SC'11, "Parallel random
// numbers: as easy as 1, 2, 3"), as in Random123, cuRAND and JAX: a pure function of
// (counter, key), so any draw can be recomputed anywhere. Header-only; thread-safe.
#pragma once

#include <array>
#include <cstdint>

#include "runner/sampler/philox_constants.h"

namespace tandem {

// One Philox4x32 block with 10 rounds. Matches Random123's philox4x32_10 bit for bit
// (known-answer vectors in tests/runner/philox_test.cpp).
constexpr std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> counter,
                                                std::array<uint32_t, 2> key) {
  using philox::kMul0, philox::kMul1, philox::kWeyl0, philox::kWeyl1;
  auto& c = counter;
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {  // the key schedule bumps before every round but the first
      key[0] += kWeyl0;
      key[1] += kWeyl1;
    }
    const uint64_t p0 = uint64_t{kMul0} * c[0];
    const uint64_t p1 = uint64_t{kMul1} * c[2];
    c = {static_cast<uint32_t>(p1 >> 32) ^ c[1] ^ key[0], static_cast<uint32_t>(p1),
         static_cast<uint32_t>(p0 >> 32) ^ c[3] ^ key[1], static_cast<uint32_t>(p0)};
  }
  return c;
}

// Maps a 32-bit output into the open interval (0, 1): the top 23 bits k give
// u = (2k + 1) * 2^-24, so u lies in [2^-24, 1 - 2^-24] on a grid of step 2^-23.
// Every step is exact in float (k * 2^-23 and the 2^-24 offset fit in 24 bits), so a
// vectorized conversion that does the same steps gives the same bits; 0 and 1 never occur.
constexpr float uniform_open01(uint32_t bits) {
  return static_cast<float>(bits >> 9) * 0x1p-23f + 0x1p-24f;
}

}  // namespace tandem
