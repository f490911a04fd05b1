// The CPU sampler's scalar definitions (runner/sampler/kernels.cpp, philox.h) ported to the
// device bit for bit. Every float multiply and add is an explicit __fmul_rn / __fadd_rn: those
// are IEEE round-to-nearest operations that nvcc never fuses into an FMA, whatever -fmad says,
// so each step rounds exactly as the CPU's -ffp-contract=off code does. Denormals must not be
// flushed (no -ftz=true / --use_fast_math for this file): the CPU keeps them.
#pragma once

#include <cstdint>

#include "runner/sampler/philox_constants.h"

namespace tandem::cuda::device_math {

// Philox4x32-10 (philox.h): the same rounds, key schedule and word order.
__device__ __forceinline__ uint4 philox4x32_10(uint4 c, uint2 key) {
  using philox::kMul0, philox::kMul1, philox::kWeyl0, philox::kWeyl1;
#pragma unroll
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      key.x += kWeyl0;
      key.y += kWeyl1;
    }
    const uint32_t hi0 = __umulhi(kMul0, c.x), lo0 = kMul0 * c.x;
    const uint32_t hi1 = __umulhi(kMul1, c.z), lo1 = kMul1 * c.z;
    c = make_uint4(hi1 ^ c.y ^ key.x, lo1, hi0 ^ c.w ^ key.y, lo0);
  }
  return c;
}

// The noise block of ids 4 * group .. 4 * group + 3 (kernels.cpp's noise_block).
__device__ __forceinline__ uint4 noise_block(uint64_t seed, int64_t position, uint32_t group) {
  const auto pos = static_cast<uint64_t>(position);
  return philox4x32_10(
      make_uint4(group, 0u, static_cast<uint32_t>(pos), static_cast<uint32_t>(pos >> 32)),
      make_uint2(static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)));
}

__device__ __forceinline__ uint32_t word(uint4 block, int i) {
  return i == 0 ? block.x : i == 1 ? block.y : i == 2 ? block.z : block.w;
}

// uniform_open01: (2k + 1) * 2^-24 for the top 23 bits k; every step is exact.
__device__ __forceinline__ float uniform_open01(uint32_t bits) {
  return __fadd_rn(__fmul_rn(__uint2float_rn(bits >> 9), 0x1p-23f), 0x1p-24f);
}

// log_approx (Cephes' logf), step for step.
__device__ __forceinline__ float log_approx(float x) {
  const uint32_t bits = __float_as_uint(x);
  int32_t e = static_cast<int32_t>(bits >> 23) - 127;
  float m = __uint_as_float((bits & 0x7fffffu) | 0x3f800000u);
  if (m > 1.41421356f) {
    m = __fmul_rn(m, 0.5f);
    e = e + 1;
  }
  const float fe = __int2float_rn(e);
  const float f = __fsub_rn(m, 1.0f);
  const float f2 = __fmul_rn(f, f);
  float y = 7.0376836292e-2f;
  y = __fadd_rn(__fmul_rn(y, f), -1.1514610310e-1f);
  y = __fadd_rn(__fmul_rn(y, f), 1.1676998740e-1f);
  y = __fadd_rn(__fmul_rn(y, f), -1.2420140846e-1f);
  y = __fadd_rn(__fmul_rn(y, f), 1.4249322787e-1f);
  y = __fadd_rn(__fmul_rn(y, f), -1.6668057665e-1f);
  y = __fadd_rn(__fmul_rn(y, f), 2.0000714765e-1f);
  y = __fadd_rn(__fmul_rn(y, f), -2.4999993993e-1f);
  y = __fadd_rn(__fmul_rn(y, f), 3.3333331174e-1f);
  y = __fmul_rn(y, f);
  y = __fmul_rn(y, f2);
  y = __fadd_rn(y, __fmul_rn(fe, -2.12194440e-4f));
  y = __fadd_rn(y, __fmul_rn(f2, -0.5f));
  float r = __fadd_rn(f, y);
  r = __fadd_rn(r, __fmul_rn(fe, 0.693359375f));
  return r;
}

// exp_shifted (Cephes' expf for d <= 0; 0 below -86, also for -inf and NaN), step for step.
__device__ __forceinline__ float exp_shifted(float d) {
  const bool valid = d >= -86.0f;
  const float dc = valid ? d : 0.0f;
  const float t = __fmul_rn(dc, 1.44269504088896341f);
  const float n = __fsub_rn(__fadd_rn(t, 12582912.0f), 12582912.0f);
  float x = __fsub_rn(dc, __fmul_rn(n, 0.693359375f));
  x = __fsub_rn(x, __fmul_rn(n, -2.12194440e-4f));
  const float x2 = __fmul_rn(x, x);
  float y = 1.9875691500e-4f;
  y = __fadd_rn(__fmul_rn(y, x), 1.3981999507e-3f);
  y = __fadd_rn(__fmul_rn(y, x), 8.3334519073e-3f);
  y = __fadd_rn(__fmul_rn(y, x), 4.1665795894e-2f);
  y = __fadd_rn(__fmul_rn(y, x), 1.6666665459e-1f);
  y = __fadd_rn(__fmul_rn(y, x), 5.0000001201e-1f);
  y = __fmul_rn(y, x2);
  y = __fadd_rn(y, x);
  y = __fadd_rn(y, 1.0f);
  const uint32_t scale_bits = static_cast<uint32_t>(__float2int_rz(n) + 127) << 23;
  const float e = __fmul_rn(y, __uint_as_float(scale_bits));
  return valid ? e : 0.0f;
}

// -log(-log(u)), both logs the sampler's own.
__device__ __forceinline__ float gumbel_from_bits(uint32_t bits) {
  return -log_approx(-log_approx(uniform_open01(bits)));
}

// noise_ceiling: an upper bound of gumbel_from_bits(bits), the CPU's arithmetic exactly.
__device__ __forceinline__ float noise_ceiling(uint32_t bits) {
  const uint32_t x = 0xffffffu - ((bits >> 9) << 1);
  const auto exponent = static_cast<int32_t>(__float_as_uint(__uint2float_rn(x)) >> 23);
  return __fadd_rn(__fmul_rn(__int2float_rn(151 - exponent), 0.693147182f), 1e-3f);
}
inline constexpr float kNoiseCeiling = 16.7f;  // bounds every noise value (kernels.h)

// The rank key of a non-NaN z: smaller key, higher rank (z descending). -0 is made +0 first,
// since the CPU's comparisons tie them (and then the lower id goes first).
__device__ __forceinline__ uint32_t rank_key(float z) {
  const uint32_t b = __float_as_uint(__fadd_rn(z, 0.0f));
  const uint32_t ascending = (b & 0x80000000u) != 0 ? ~b : (b | 0x80000000u);
  return ~ascending;
}

}  // namespace tandem::cuda::device_math
