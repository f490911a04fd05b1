// IEEE half (F16) and bfloat16 (BF16) conversions: the project's one scalar converter,
// used to write and check model files and by the kernels (packing, dequantize_row).
// Portable and exact: narrowing rounds to nearest, ties to even (overflow gives infinity,
// subnormals are kept); widening is exact. Pure functions, thread-safe.
//
// NaN rule, the one the x86 conversion instructions follow (vcvtph2ps, vcvtps2ph,
// vcvtneps2bf16), so the scalar and vector paths agree: a NaN stays a NaN of the same sign,
// always quiet (the payload's top bit set), with as much of the payload as fits (its top
// bits when narrowing, all of it when widening). A quiet NaN therefore survives a round
// trip bit for bit; a signalling one comes back quiet.
#pragma once

#include <bit>
#include <cstdint>

namespace tandem {

inline uint16_t half_from_float(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) {  // NaN: quiet, the payload's top bits
    return static_cast<uint16_t>(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu));
  }
  if (magnitude >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520: inf
  const int exponent = static_cast<int>(magnitude >> 23) - 127;
  if (exponent >= -14) {  // normal half: drop 13 mantissa bits, rounding to nearest even
    uint32_t half = ((static_cast<uint32_t>(exponent + 15)) << 10) | ((magnitude >> 13) & 0x3ffu);
    const uint32_t rest = magnitude & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;  // may carry into exponent
    return static_cast<uint16_t>(sign | half);
  }
  if (exponent < -25) return sign;  // below half the smallest subnormal: zero
  // Subnormal half: value = m * 2^-24 with the implicit bit made explicit.
  const uint32_t mantissa = (magnitude & 0x7fffffu) | 0x800000u;
  const int shift = -exponent - 1;  // 14..24: bits of `mantissa` below 2^-24
  uint32_t half = mantissa >> shift;
  const uint32_t rest = mantissa & ((1u << shift) - 1u);
  const uint32_t halfway = 1u << (shift - 1);
  if (rest > halfway || (rest == halfway && (half & 1u))) ++half;
  return static_cast<uint16_t>(sign | half);
}

inline float float_from_half(uint16_t half) {
  const uint32_t sign = static_cast<uint32_t>(half & 0x8000u) << 16;
  const uint32_t exponent = (half >> 10) & 0x1fu;
  const uint32_t mantissa = half & 0x3ffu;
  if (exponent == 0x1f) {  // infinity, or a NaN made quiet with its payload kept
    const uint32_t quiet = mantissa != 0 ? 0x400000u : 0u;
    return std::bit_cast<float>(sign | 0x7f800000u | quiet | (mantissa << 13));
  }
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24, exact in F32
    const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
    return sign != 0 ? -magnitude : magnitude;
  }
  return std::bit_cast<float>(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

inline uint16_t bfloat_from_float(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) {  // NaN: quiet, the payload's top bits
    return static_cast<uint16_t>((bits >> 16) | 0x40u);
  }
  return static_cast<uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

inline float float_from_bfloat(uint16_t bfloat) {
  uint32_t bits = static_cast<uint32_t>(bfloat) << 16;
  if ((bits & 0x7fffffffu) > 0x7f800000u) bits |= 0x400000u;  // NaN: made quiet
  return std::bit_cast<float>(bits);
}

}  // namespace tandem
