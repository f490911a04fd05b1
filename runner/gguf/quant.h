// ggml's quantized block layouts, as GGUF files store them, and their exact scalar
// dequantization: the meaning of every quantized weight, which the fast kernels must
// reproduce. Layouts follow ggml-common.h; scales are IEEE halves. Pure functions.
#pragma once

#include <cstdint>

#include "runner/gguf/gguf.h"

namespace tandem::gguf {

inline constexpr int kQK4 = 32;   // elements per block of the legacy types and IQ4_NL
inline constexpr int kQKK = 256;  // elements per super-block of the K-quants and IQ4_XS

struct BlockQ4_0 {
  uint16_t d;
  uint8_t qs[kQK4 / 2];  // element j in the low nibble of qs[j], j + 16 in the high one
};
struct BlockQ4_1 {
  uint16_t d, m;  // x = q * d + m
  uint8_t qs[kQK4 / 2];
};
struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];  // bit j: the fifth bit of element j
  uint8_t qs[kQK4 / 2];
};
struct BlockQ5_1 {
  uint16_t d, m;
  uint8_t qh[4];
  uint8_t qs[kQK4 / 2];
};
struct BlockQ2_K {
  uint8_t scales[kQKK / 16];  // per 16 elements: low nibble scale, high nibble min
  uint8_t qs[kQKK / 4];
  uint16_t d, dmin;
};
struct BlockQ3_K {
  uint8_t hmask[kQKK / 8];
  uint8_t qs[kQKK / 4];
  uint8_t scales[12];  // sixteen 6-bit scales
  uint16_t d;
};
struct BlockQ4_K {
  uint16_t d, dmin;
  uint8_t scales[12];  // eight 6-bit scales and eight 6-bit mins
  uint8_t qs[kQKK / 2];
};
struct BlockQ5_K {
  uint16_t d, dmin;
  uint8_t scales[12];
  uint8_t qh[kQKK / 8];
  uint8_t qs[kQKK / 2];
};
struct BlockQ6_K {
  uint8_t ql[kQKK / 2];
  uint8_t qh[kQKK / 4];
  int8_t scales[kQKK / 16];
  uint16_t d;
};
struct BlockIq4Nl {
  uint16_t d;
  uint8_t qs[kQK4 / 2];
};
struct BlockIq4Xs {
  uint16_t d;
  uint16_t scales_h;
  uint8_t scales_l[kQKK / 64];
  uint8_t qs[kQKK / 2];
};
static_assert(sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_1) == 20);
static_assert(sizeof(BlockQ5_0) == 22 && sizeof(BlockQ5_1) == 24);
static_assert(sizeof(BlockQ2_K) == 84 && sizeof(BlockQ3_K) == 110);
static_assert(sizeof(BlockQ4_K) == 144 && sizeof(BlockQ5_K) == 176);
static_assert(sizeof(BlockQ6_K) == 210);
static_assert(sizeof(BlockIq4Nl) == 18 && sizeof(BlockIq4Xs) == 136);

// The 16 values an IQ4 nibble selects (ggml's kvalues_iq4nl).
inline constexpr int8_t kIq4NlValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                            1,    13,   25,  38,  53,  69,  89,  113};

// Writes the n values that `src` (n / block_elements(type) blocks of `type`) encodes.
// n must be a whole number of blocks. Every supported type, F32/F16/BF16 included.
void dequantize_row(TensorType type, const void* src, int64_t n, float* dst);

}  // namespace tandem::gguf
