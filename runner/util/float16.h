// IEEE half (F16) and bfloat16 (BF16) conversions for writing and checking model files.
// Scalar, portable and exact (round to nearest even, NaN kept NaN); the kernels have
// their own vectorized conversions (runner/kernels.h). Pure functions, thread-safe.
#pragma once

#include <bit>
#include <cstdint>

namespace tandem {

inline uint16_t half_from_float(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude >= 0x7f800000u) {  // infinity or NaN
    return static_cast<uint16_t>(sign | 0x7c00u | (magnitude > 0x7f800000u ? 0x200u : 0u));
  }
  if (magnitude >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to inf
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
  uint32_t exponent = (half >> 10) & 0x1fu;
  uint32_t mantissa = half & 0x3ffu;
  uint32_t bits;
  if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112u) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    bits = sign;
  } else {  // subnormal half: normalize
    exponent = 113;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      --exponent;
    }
    bits = sign | (exponent << 23) | ((mantissa & 0x3ffu) << 13);
  }
  return std::bit_cast<float>(bits);
}

inline uint16_t bfloat_from_float(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);
  return static_cast<uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

inline float float_from_bfloat(uint16_t bfloat) {
  return std::bit_cast<float>(static_cast<uint32_t>(bfloat) << 16);
}

}  // namespace tandem
