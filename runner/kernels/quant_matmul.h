// The quantized matmul's portable form: the reference the vector forms (quant_vector.h, for
// AVX2 and AVX-512 VNNI) are checked against bit for bit, and the arithmetic they follow.
// Internal to runner/kernels/: quant_portable.cpp includes it and supplies one thing, a
// struct S with
//   static void group_sums(const int8_t* w, const int8_t* x, int64_t n, int32_t* out);
// out[g] = sum of w[i] * x[i] over the g-th 16 values (n a multiple of 32). Those sums are
// exact integers.
//
// How one output y[m][o] is computed, whatever the form and whatever the number of rows:
//  1. weight row o, kept in its GGUF blocks, is unpacked to one int8 per weight (the block's
//     quant as ggml's integer dot products see it: Q4_0 nibble - 8, Q4_K nibble, Q6_K six
//     bits - 32, IQ4 the table's value, Q8_0 the byte itself, ...) and its scales decoded
//     (RowScales);
//  2. activation row m was quantized (quantize_q8.h) to Q8_0, Q8_1 or Q8_K, as ggml does;
//  3. group_sums gives the integer dot of every 16 values;
//  4. the block's integer scales combine those sums exactly (int32), and per block the float
//     scales are applied in one fixed order (finish_* below, compiled without contraction),
//     accumulating in one float over the blocks in order.
// So a row's result does not depend on the batch (law 2) nor on the ISA: the vector forms
// may reach the integers of step 4 another way (any exact way gives the same integers) but
// not the float steps. For batches the rows of kChunk outputs are unpacked once and used for
// every activation row.
//
// Everything sits in an anonymous namespace and uses no standard-library template, for the
// reason tile_loop.h gives.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runner/gguf/quant.h"
#include "runner/kernels/isa.h"
#include "runner/kernels/quant_interleave.h"
#include "runner/kernels/quantize_q8.h"

namespace tandem::kernels::detail {

// The weight types with a quantized kernel (GGUF types map one to one).
enum class QuantKind : uint8_t {
  kQ4_0,
  kQ4_1,
  kQ5_0,
  kQ5_1,
  kQ2_K,
  kQ3_K,
  kQ4_K,
  kQ5_K,
  kQ6_K,
  kIq4Nl,
  kIq4Xs,
  kQ8_0
};

struct QuantMatmulArgs {
  QuantKind kind = QuantKind::kQ4_0;
  const uint8_t* w = nullptr;  // n_out rows of row_bytes, GGUF blocks as stored (but see below)
  size_t row_bytes = 0;
  int64_t n_in = 0;
  int64_t n_out = 0;
  ActRows x;  // n_rows rows, in the activation format the kind needs
  int64_t n_rows = 0;
  float* y = nullptr;  // n_rows rows of n_out outputs, row_stride() apart
  // Q4_0/Q5_0 rows interleaved by sixteen (quant_interleave.h) instead of as stored; x is then
  // row-major whatever n_rows.
  bool interleaved = false;
  // y's row stride where these outputs are some of a wider y's columns (the parts of one
  // matrix in one job, quant_dispatch.cpp); 0: n_out.
  int64_t y_stride = 0;
  int64_t row_stride() const { return y_stride > 0 ? y_stride : n_out; }
};

// The most activation rows each ISA's vector form streams (quant_streams.h: each span of
// four weight rows decoded in registers once for all of them); quant_dispatch.cpp gives larger
// batches the lane layout (quant_lanes.h). Measured on a Zen 5 (docs/performance.md,
// 2026-11-29 evening): with VNNI streaming beat the folded lane form up to 8 rows; on AVX2
// the lane form was ahead from 4.
inline constexpr int64_t kVnniStreamRows = 8, kAvx2StreamRows = 3;

// Per-thread scratch of at least `bytes`, 64-byte aligned (quant_dispatch.cpp owns it).
void* quant_scratch(size_t bytes);

namespace {

// An IEEE half to float, exactly (scales are finite). Defined here, with internal linkage,
// rather than calling util/float16.h: an out-of-line copy of that inline function compiled
// with this file's AVX-512 flags (at -O0) could be the one the linker keeps for every caller.
inline float half(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24, exact in a float
    const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
    return __builtin_bit_cast(float, __builtin_bit_cast(uint32_t, magnitude) | sign);
  }
  const uint32_t biased = exponent == 0x1f ? 0xffu : exponent + 112;
  return __builtin_bit_cast(float, sign | (biased << 23) | (mantissa << 13));
}

template <class Block>
const Block* blocks_of(const uint8_t* row) {
  return reinterpret_cast<const Block*>(row);
}

// ---- Unpacking: one int8 per weight, in element order -------------------------------

// Legacy nibbles: element j in the low nibble of qs[j], j + 16 in the high one.
template <int kOffset>
inline void unpack_nibbles(const uint8_t* qs, int8_t* q) {
  for (int j = 0; j < 16; ++j) {
    q[j] = static_cast<int8_t>((qs[j] & 0x0F) - kOffset);
    q[j + 16] = static_cast<int8_t>((qs[j] >> 4) - kOffset);
  }
}

// Q5_0/Q5_1: the fifth bit of element j is bit j of qh.
template <int kOffset>
inline void unpack_q5(const uint8_t (&qh_bytes)[4], const uint8_t* qs, int8_t* q) {
  uint32_t qh;
  __builtin_memcpy(&qh, qh_bytes, 4);
  for (int j = 0; j < 16; ++j) {
    const int lo = static_cast<int>((qh >> j) & 1) << 4;
    const int hi = static_cast<int>((qh >> (j + 16)) & 1) << 4;
    q[j] = static_cast<int8_t>(((qs[j] & 0x0F) | lo) - kOffset);
    q[j + 16] = static_cast<int8_t>(((qs[j] >> 4) | hi) - kOffset);
  }
}

inline void unpack_iq4(const uint8_t* qs, int8_t* q) {
  for (int j = 0; j < 16; ++j) {
    q[j] = gguf::kIq4NlValues[qs[j] & 0x0F];
    q[j + 16] = gguf::kIq4NlValues[qs[j] >> 4];
  }
}

// Q2_K: 128 values per 32 bytes; value 32 * s + l is bits 2s..2s+1 of q[l].
inline void unpack_q2_k(const gguf::BlockQ2_K& b, int8_t* q) {
  for (int n = 0; n < 2; ++n) {
    const uint8_t* qs = b.qs + 32 * n;
    for (int s = 0; s < 4; ++s)
      for (int l = 0; l < 32; ++l)
        q[128 * n + 32 * s + l] = static_cast<int8_t>((qs[l] >> 2 * s) & 3);
  }
}

// Q3_K: the two low bits as Q2_K, minus 4 where the hmask bit is clear.
inline void unpack_q3_k(const gguf::BlockQ3_K& b, int8_t* q) {
  for (int n = 0; n < 2; ++n) {
    const uint8_t* qs = b.qs + 32 * n;
    for (int s = 0; s < 4; ++s) {
      const int bit = 4 * n + s;
      for (int l = 0; l < 32; ++l) {
        const int low = (qs[l] >> 2 * s) & 3;
        const int high = (b.hmask[l] >> bit) & 1;
        q[128 * n + 32 * s + l] = static_cast<int8_t>(low - 4 + 4 * high);
      }
    }
  }
}

// Q4_K: 64 values per 32 bytes, the low nibbles then the high ones.
inline void unpack_q4_k(const gguf::BlockQ4_K& b, int8_t* q) {
  for (int j = 0; j < 4; ++j)
    for (int l = 0; l < 32; ++l) {
      q[64 * j + l] = static_cast<int8_t>(b.qs[32 * j + l] & 0x0F);
      q[64 * j + 32 + l] = static_cast<int8_t>(b.qs[32 * j + l] >> 4);
    }
}

inline void unpack_q5_k(const gguf::BlockQ5_K& b, int8_t* q) {
  for (int j = 0; j < 4; ++j)
    for (int l = 0; l < 32; ++l) {
      const int h1 = ((b.qh[l] >> (2 * j)) & 1) << 4, h2 = ((b.qh[l] >> (2 * j + 1)) & 1) << 4;
      q[64 * j + l] = static_cast<int8_t>((b.qs[32 * j + l] & 0x0F) | h1);
      q[64 * j + 32 + l] = static_cast<int8_t>((b.qs[32 * j + l] >> 4) | h2);
    }
}

inline void unpack_q6_k(const gguf::BlockQ6_K& b, int8_t* q) {
  for (int n = 0; n < 2; ++n) {
    const uint8_t* ql = b.ql + 64 * n;
    const uint8_t* qh = b.qh + 32 * n;
    int8_t* out = q + 128 * n;
    for (int l = 0; l < 32; ++l) {
      out[l] = static_cast<int8_t>(((ql[l] & 0x0F) | (((qh[l] >> 0) & 3) << 4)) - 32);
      out[l + 32] = static_cast<int8_t>(((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32);
      out[l + 64] = static_cast<int8_t>(((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32);
      out[l + 96] = static_cast<int8_t>(((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32);
    }
  }
}

inline void unpack_iq4_xs(const gguf::BlockIq4Xs& b, int8_t* q) {
  for (int ib = 0; ib < 8; ++ib) unpack_iq4(b.qs + 16 * ib, q + 32 * ib);
}

// ---- Block scales ------------------------------------------------------------------

// Q3_K's sixteen 6-bit scales (ggml's unpacking), each minus 32.
inline void q3_k_scales(const uint8_t (&packed)[12], int (&scales)[16]) {
  constexpr uint32_t kmask1 = 0x03030303, kmask2 = 0x0f0f0f0f;
  uint32_t aux[4];
  __builtin_memcpy(aux, packed, 12);
  const uint32_t tmp = aux[2];
  aux[2] = ((aux[0] >> 4) & kmask2) | (((tmp >> 4) & kmask1) << 4);
  aux[3] = ((aux[1] >> 4) & kmask2) | (((tmp >> 6) & kmask1) << 4);
  aux[0] = (aux[0] & kmask2) | (((tmp >> 0) & kmask1) << 4);
  aux[1] = (aux[1] & kmask2) | (((tmp >> 2) & kmask1) << 4);
  int8_t bytes[16];
  __builtin_memcpy(bytes, aux, 16);
  for (int j = 0; j < 16; ++j) scales[j] = bytes[j] - 32;
}

// Q4_K/Q5_K: the eight 6-bit scales and mins (ggml's get_scale_min_k4).
inline void k4_scales_mins(const uint8_t (&q)[12], int (&sc)[8], int (&mn)[8]) {
  for (int j = 0; j < 4; ++j) {
    sc[j] = q[j] & 63;
    mn[j] = q[j + 4] & 63;
  }
  for (int j = 4; j < 8; ++j) {
    sc[j] = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    mn[j] = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

// ---- Per-type unpacking of a row: its int8 quants and its scales --------------------
// A row's scales, decoded once per unpacking and then used for every activation row:
//   legacy types (blocks of 32): d[b], and for Q4_1/Q5_1 the min m[b] (else 0);
//   super-block types (256): d[b], dmin[b] (0 where there is no min), and per 16 values
//   the integer scale sc[g] and min mn[g] (0 where there is none).
struct RowScales {
  float* d;
  float* dm;
  int32_t* sc;
  int32_t* mn;
};

template <class Block, int kOffset>
void unpack_legacy_nibbles(const uint8_t* row, int64_t n, int8_t* q, const RowScales& r) {
  const auto* b = blocks_of<Block>(row);
  for (int64_t i = 0; i < n / 32; ++i) {
    unpack_nibbles<kOffset>(b[i].qs, q + 32 * i);
    r.d[i] = half(b[i].d);
  }
}

struct Q4_0 {
  static constexpr bool kSuper = false;
  static void unpack(const uint8_t* row, int64_t n, int8_t* q, const RowScales& r) {
    unpack_legacy_nibbles<gguf::BlockQ4_0, 8>(row, n, q, r);
  }
};

struct Q4_1 {
  static constexpr bool kSuper = false;
  static void unpack(const uint8_t* row, int64_t n, int8_t* q, const RowScales& r) {
    unpack_legacy_nibbles<gguf::BlockQ4_1, 0>(row, n, q, r);
    const auto* b = blocks_of<gguf::BlockQ4_1>(row);
    for (int64_t i = 0; i < n / 32; ++i) r.dm[i] = half(b[i].m);
  }
};

struct Q5_0 {
  static constexpr bool kSuper = false;
  static void unpack(const uint8_t* row, int64_t n, int8_t* q, const RowScales& r) {
    const auto* b = blocks_of<gguf::BlockQ5_0>(row);
    for (int64_t i = 0; i < n / 32; ++i) {
      unpack_q5<16>(b[i].qh, b[i].qs, q + 32 * i);
      r.d[i] = half(b[i].d);
    }
  }
};

struct Q5_1 {
  static constexpr bool kSuper = false;
  static void unpack(const uint8_t* row, int64_t n, int8_t* q, const RowScales& r) {
    const auto* b = blocks_of<gguf::BlockQ5_1>(row);
    for (int64_t i = 0; i < n / 32; ++i) {
      unpack_q5<0>(b[i].qh, b[i].qs, q + 32 * i);
      r.d[i] = half(b[i].d);
      r.dm[i] = half(b[i].m);
    }
  }
};

struct Iq4Nl {
  static constexpr bool kSuper = false;
  static void unpack(const uint8_t* row, int64_t n, int8_t* q, const RowScales& r) {
    const auto* b = blocks_of<gguf::BlockIq4Nl>(row);
    for (int64_t i = 0; i < n / 32; ++i) {
      unpack_iq4(b[i].qs, q + 32 * i);
      r.d[i] = half(b[i].d);
    }
  }
};

struct Q8_0 {
  static constexpr bool kSuper = false;
  static void unpack(const uint8_t* row, int64_t n, int8_t* q, const RowScales& r) {
    const auto* b = blocks_of<gguf::BlockQ8_0>(row);
    for (int64_t i = 0; i < n / 32; ++i) {
      __builtin_memcpy(q + 32 * i, b[i].qs, 32);
      r.d[i] = half(b[i].d);
    }
  }
};

struct Q2_K {
  static constexpr bool kSuper = true;
  static void unpack(const uint8_t* row, int64_t n, int8_t* q, const RowScales& r) {
    const auto* b = blocks_of<gguf::BlockQ2_K>(row);
    for (int64_t i = 0; i < n / 256; ++i) {
      unpack_q2_k(b[i], q + 256 * i);
      r.d[i] = half(b[i].d);
      r.dm[i] = half(b[i].dmin);
      for (int j = 0; j < 16; ++j) {
        r.sc[16 * i + j] = static_cast<int32_t>(b[i].scales[j] & 0xF);
        r.mn[16 * i + j] = static_cast<int32_t>(b[i].scales[j] >> 4);
      }
    }
  }
};

struct Q3_K {
  static constexpr bool kSuper = true;
  static void unpack(const uint8_t* row, int64_t n, int8_t* q, const RowScales& r) {
    const auto* b = blocks_of<gguf::BlockQ3_K>(row);
    for (int64_t i = 0; i < n / 256; ++i) {
      unpack_q3_k(b[i], q + 256 * i);
      int scales[16];
      q3_k_scales(b[i].scales, scales);
      r.d[i] = half(b[i].d);
      r.dm[i] = 0.f;
      for (int j = 0; j < 16; ++j) {
        r.sc[16 * i + j] = static_cast<int32_t>(scales[j]);
        r.mn[16 * i + j] = 0;
      }
    }
  }
};

// Q4_K/Q5_K: eight sub-blocks of 32, each scale and min serving two groups of 16.
template <class Block, void (*kUnpack)(const Block&, int8_t*)>
void unpack_k4(const uint8_t* row, int64_t n, int8_t* q, const RowScales& r) {
  const auto* b = blocks_of<Block>(row);
  for (int64_t i = 0; i < n / 256; ++i) {
    kUnpack(b[i], q + 256 * i);
    int sc[8], mn[8];
    k4_scales_mins(b[i].scales, sc, mn);
    r.d[i] = half(b[i].d);
    r.dm[i] = half(b[i].dmin);
    for (int j = 0; j < 16; ++j) {
      r.sc[16 * i + j] = static_cast<int32_t>(sc[j / 2]);
      r.mn[16 * i + j] = static_cast<int32_t>(mn[j / 2]);
    }
  }
}

struct Q4_K {
  static constexpr bool kSuper = true;
  static void unpack(const uint8_t* row, int64_t n, int8_t* q, const RowScales& r) {
    unpack_k4<gguf::BlockQ4_K, unpack_q4_k>(row, n, q, r);
  }
};

struct Q5_K {
  static constexpr bool kSuper = true;
  static void unpack(const uint8_t* row, int64_t n, int8_t* q, const RowScales& r) {
    unpack_k4<gguf::BlockQ5_K, unpack_q5_k>(row, n, q, r);
  }
};

struct Q6_K {
  static constexpr bool kSuper = true;
  static void unpack(const uint8_t* row, int64_t n, int8_t* q, const RowScales& r) {
    const auto* b = blocks_of<gguf::BlockQ6_K>(row);
    for (int64_t i = 0; i < n / 256; ++i) {
      unpack_q6_k(b[i], q + 256 * i);
      r.d[i] = half(b[i].d);
      r.dm[i] = 0.f;
      for (int j = 0; j < 16; ++j) {
        r.sc[16 * i + j] = b[i].scales[j];
        r.mn[16 * i + j] = 0;
      }
    }
  }
};

struct Iq4Xs {
  static constexpr bool kSuper = true;
  static void unpack(const uint8_t* row, int64_t n, int8_t* q, const RowScales& r) {
    const auto* b = blocks_of<gguf::BlockIq4Xs>(row);
    for (int64_t i = 0; i < n / 256; ++i) {
      unpack_iq4_xs(b[i], q + 256 * i);
      r.d[i] = half(b[i].d);
      r.dm[i] = 0.f;
      for (int j = 0; j < 16; ++j) {
        const int ib = j / 2;
        const int ls = ((b[i].scales_l[ib / 2] >> 4 * (ib % 2)) & 0xF) |
                       (((b[i].scales_h >> 2 * ib) & 3) << 4);
        r.sc[16 * i + j] = static_cast<int32_t>(ls - 32);
        r.mn[16 * i + j] = 0;
      }
    }
  }
};

// ---- Finishing a dot from its group sums ----------------------------------------------
// g holds the 16-value integer sums of a weight row with activation row m. The float steps
// are those of ggml's reference vec_dot, per block, accumulated in block order.

// Blocks of 32 against Q8_0 (no min: + 0) or Q8_1 (+ min * the activations' d * sum).
inline float finish_legacy(const RowScales& r, const int32_t* g, const ActRows& x, int64_t m) {
  const int64_t nb = x.n_in / 32;
  const float* xd = x.d + m * nb;
  float sum = 0.f;
  if (x.s == nullptr) {
    for (int64_t i = 0; i < nb; ++i) {
      sum += r.d[i] * xd[i] * static_cast<float>(g[2 * i] + g[2 * i + 1]);
    }
    return sum;
  }
  const float* xs = x.s + m * nb;
  for (int64_t i = 0; i < nb; ++i) {
    sum += r.d[i] * xd[i] * static_cast<float>(g[2 * i] + g[2 * i + 1]) + r.dm[i] * xs[i];
  }
  return sum;
}

// Super-blocks of 256 against Q8_K: d * sum(sc * group) - dmin * sum(mn * activation sums),
// both sums exact integers.
inline float finish_super(const RowScales& r, const int32_t* g, const ActRows& x, int64_t m) {
  const int64_t nb = x.n_in / 256;
  float sum = 0.f;
  for (int64_t i = 0; i < nb; ++i) {
    const int32_t* gi = g + 16 * i;
    const int32_t* bsums = x.bsums + (m * nb + i) * 16;
    const int32_t* sc = r.sc + 16 * i;
    const int32_t* mn = r.mn + 16 * i;
    int32_t isum = 0, summs = 0;  // two loops of 16 int32 products: each one vector reduction
    for (int j = 0; j < 16; ++j) isum += sc[j] * gi[j];
    for (int j = 0; j < 16; ++j) summs += mn[j] * bsums[j];
    const float xd = x.d[m * nb + i];
    sum += r.d[i] * xd * static_cast<float>(isum) - r.dm[i] * xd * static_cast<float>(summs);
  }
  return sum;
}

// ---- The loop -------------------------------------------------------------------------

// Weight rows unpacked together and then used for every activation row.
constexpr int64_t kQuantChunk = 4;

// One unpacked row in the scratch: quants, then d, dm (floats), then sc, mn (int32).
struct UnpackedRows {
  int8_t* q;
  RowScales scales[kQuantChunk];
};

inline size_t round64(size_t bytes) { return (bytes + 63) / 64 * 64; }

template <class S, class T>
void quant_rows(const QuantMatmulArgs& a, int64_t out_begin, int64_t out_end) {
  const int64_t n = a.n_in;
  const size_t q_bytes = round64(static_cast<size_t>(kQuantChunk * n));
  const size_t f_bytes = round64(static_cast<size_t>(n / 32) * 4);  // per float array
  const size_t s_bytes = round64(static_cast<size_t>(n / 16) * 4);  // per int32 array
  const size_t per_row = 2 * f_bytes + 2 * s_bytes;
  const size_t g_bytes = s_bytes;  // the group sums: one int32 per 16 values
  auto* scratch = static_cast<uint8_t*>(
      quant_scratch(q_bytes + kQuantChunk * per_row + g_bytes + round64(a.row_bytes)));
  UnpackedRows u;
  u.q = reinterpret_cast<int8_t*>(scratch);
  for (int64_t i = 0; i < kQuantChunk; ++i) {
    uint8_t* base = scratch + q_bytes + i * per_row;
    u.scales[i] = {reinterpret_cast<float*>(base), reinterpret_cast<float*>(base + f_bytes),
                   reinterpret_cast<int32_t*>(base + 2 * f_bytes),
                   reinterpret_cast<int32_t*>(base + 2 * f_bytes + s_bytes)};
  }
  auto* g = reinterpret_cast<int32_t*>(scratch + q_bytes + kQuantChunk * per_row);
  // Interleaved rows are first put back as stored (quant_interleave.h), here.
  uint8_t* row_copy = scratch + q_bytes + kQuantChunk * per_row + g_bytes;
  for (int64_t o0 = out_begin; o0 < out_end; o0 += kQuantChunk) {
    const int64_t count = out_end - o0 < kQuantChunk ? out_end - o0 : kQuantChunk;
    for (int64_t i = 0; i < count; ++i) {
      const uint8_t* row = a.w + (o0 + i) * a.row_bytes;
      if (a.interleaved) {
        deinterleave_row(a.kind, a.w, n, o0 + i, row_copy);
        row = row_copy;
      }
      T::unpack(row, n, u.q + i * n, u.scales[i]);
    }
    for (int64_t m = 0; m < a.n_rows; ++m) {
      const int8_t* xq = a.x.q + m * n;
      for (int64_t i = 0; i < count; ++i) {
        S::group_sums(u.q + i * n, xq, n, g);
        a.y[m * a.row_stride() + o0 + i] = T::kSuper ? finish_super(u.scales[i], g, a.x, m)
                                                     : finish_legacy(u.scales[i], g, a.x, m);
      }
    }
  }
}

template <class S>
void quant_loop(const QuantMatmulArgs& a, int64_t out_begin, int64_t out_end) {
  switch (a.kind) {
    case QuantKind::kQ4_0:
      return quant_rows<S, Q4_0>(a, out_begin, out_end);
    case QuantKind::kQ4_1:
      return quant_rows<S, Q4_1>(a, out_begin, out_end);
    case QuantKind::kQ5_0:
      return quant_rows<S, Q5_0>(a, out_begin, out_end);
    case QuantKind::kQ5_1:
      return quant_rows<S, Q5_1>(a, out_begin, out_end);
    case QuantKind::kQ2_K:
      return quant_rows<S, Q2_K>(a, out_begin, out_end);
    case QuantKind::kQ3_K:
      return quant_rows<S, Q3_K>(a, out_begin, out_end);
    case QuantKind::kQ4_K:
      return quant_rows<S, Q4_K>(a, out_begin, out_end);
    case QuantKind::kQ5_K:
      return quant_rows<S, Q5_K>(a, out_begin, out_end);
    case QuantKind::kQ6_K:
      return quant_rows<S, Q6_K>(a, out_begin, out_end);
    case QuantKind::kIq4Nl:
      return quant_rows<S, Iq4Nl>(a, out_begin, out_end);
    case QuantKind::kIq4Xs:
      return quant_rows<S, Iq4Xs>(a, out_begin, out_end);
    case QuantKind::kQ8_0:
      return quant_rows<S, Q8_0>(a, out_begin, out_end);
  }
}

// The 16-value sums one at a time: the portable form.
inline void group_sums_scalar(const int8_t* w, const int8_t* x, int64_t n, int32_t* out) {
  for (int64_t g = 0; g < n / 16; ++g) {
    int32_t sum = 0;
    for (int i = 0; i < 16; ++i) sum += w[16 * g + i] * x[16 * g + i];
    out[g] = sum;
  }
}

}  // namespace
}  // namespace tandem::kernels::detail
