// How the vector form of the quantized matmul (quant_vector.h) decodes each type: 32 quants
// of a block per 256-bit vector, as the integers the portable form's unpacking gives
// (quant_matmul.h) or those plus a fixed offset (kept unsigned for vpmaddubsw/vpdpbusd), and
// a super-block's scales as vectors. Included by quant_vector.h only; AVX2 intrinsics, each
// ISA file compiling them with its own -m flags. S is the ISA file's struct (quant_vector.h).
// Everything sits in an anonymous namespace and uses no standard-library template, for the
// reason tile_loop.h gives.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "runner/gguf/quant.h"
#include "runner/kernels/quant_matmul.h"

namespace tandem::kernels::detail {
namespace {

inline __m256i load32(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
inline void store32(void* p, __m256i v) { _mm256_storeu_si256(static_cast<__m256i*>(p), v); }
inline __m256i bytes_of(int v) { return _mm256_set1_epi8(static_cast<char>(v)); }

// (v >> shift) & mask per byte (16-bit shifts; the mask drops what crossed from the next byte).
inline __m256i bits_at(__m256i v, int shift, int mask) {
  return _mm256_and_si256(_mm256_srl_epi16(v, _mm_cvtsi32_si128(shift)), bytes_of(mask));
}

// Legacy nibbles: 16 bytes to 32 values, the low nibbles (elements 0-15) then the high ones.
// The 16 bytes are broadcast to both halves (a load), the upper half shifted right by 4
// in its 32-bit lanes (each byte's mask then keeps its own high nibble).
inline __m256i legacy_nibbles(const uint8_t* qs) {
  const __m256i v =
      _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qs)));
  return _mm256_and_si256(_mm256_srlv_epi32(v, _mm256_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4)),
                          bytes_of(0x0F));
}

inline __m256i iq4_values(__m256i nibbles) {
  const __m128i table = _mm_loadu_si128(reinterpret_cast<const __m128i*>(gguf::kIq4NlValues));
  return _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(table), nibbles);
}

inline uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  __builtin_memcpy(&v, p, 4);
  return v;
}

// ---- Per type: the quants of a chunk and the scales of a block -----------------------------
// Legacy types (blocks of 32): quants<S>(block) gives the block's 32 quants, and the block's
// d (and m for Q4_1/Q5_1, kHasMin) are read by the loop. Super-block types: chunk<S>(block, c)
// gives values 32c..32c+31, and scales(block) the block's scales:
//   sc16: group j's integer scale in int16 lane j;
//   bias: per group (int32, groups 0-7 then 8-15) what its activation sum is multiplied by,
//         the min (kMins) or the offset times the scale (kOffset, the unsigned correction);
//   d, dm: the block's float d and dmin (0 where there is none).
// kSigned: the quants are signed (IQ4); kOffset: what the unsigned quants exceed the real ones
// by; kBias: a super-block type with a bias.

struct SuperScales {
  __m256i sc16, bias_lo, bias_hi;
  float d, dm;
};

// A super-block's sixteen int16 group scales, groups 0-7 in both 128-bit halves of `low`
// and 8-15 in both of `high`: each chunk's scales are then one in-lane byte shuffle away.
struct GroupScales {
  __m256i low, high;
};
inline GroupScales group_scales(__m256i sc16) {
  return {_mm256_permute2x128_si256(sc16, sc16, 0x00), _mm256_permute2x128_si256(sc16, sc16, 0x11)};
}

// The byte shuffle that takes chunk c's scales out of GroupScales: int16 lanes 0-7 the scale
// of group 2c, 8-15 that of group 2c + 1.
inline __m256i chunk_spread(int c) {
  const char k = static_cast<char>(4 * (c % 4));
  return _mm256_setr_epi8(k, k + 1, k, k + 1, k, k + 1, k, k + 1, k, k + 1, k, k + 1, k, k + 1, k,
                          k + 1, k + 2, k + 3, k + 2, k + 3, k + 2, k + 3, k + 2, k + 3, k + 2,
                          k + 3, k + 2, k + 3, k + 2, k + 3, k + 2, k + 3);
}

// Chunk c's scales, for vpmaddwd. c is a literal in the unrolled chunk loops, so this is one
// vpshufb.
inline __m256i chunk_scale(const GroupScales& g, int c) {
  return _mm256_shuffle_epi8(c < 4 ? g.low : g.high, chunk_spread(c));
}

// Sixteen int8 scales (as a vector's low 16 bytes) to sc16 and, times kMul, to the bias.
template <int kMul>
inline void signed_scales(__m128i bytes, SuperScales& s) {
  s.sc16 = _mm256_cvtepi8_epi16(bytes);
  s.bias_lo = _mm256_mullo_epi32(_mm256_cvtepi8_epi32(bytes), _mm256_set1_epi32(kMul));
  s.bias_hi =
      _mm256_mullo_epi32(_mm256_cvtepi8_epi32(_mm_srli_si128(bytes, 8)), _mm256_set1_epi32(kMul));
}

template <class Block, int kOff, bool kMin, bool kFifthBit, bool kTable>
struct Legacy {
  static constexpr bool kSuper = false, kSigned = kTable, kHasMin = kMin, kBias = false;
  static constexpr int kOffset = kOff;
  using B = Block;
  template <class S>
  static __m256i quants(const Block& b) {
    __m256i q = legacy_nibbles(b.qs);
    if constexpr (kFifthBit) q = _mm256_or_si256(q, S::bits_to_bytes(load_u32(b.qh), 0x10));
    if constexpr (kTable) q = iq4_values(q);
    return q;
  }
  // Blocks b0 and b1's quants in one 512-bit vector, b0's in the low half (AVX-512 only:
  // quant_vector.h's wide steps): each half as quants() lays it out, the fifth bits added
  // under a mask of both blocks' qh.
  template <class S>
  static __m512i quant_pair(const Block& b0, const Block& b1) {
    const __m512i both = _mm512_mask_broadcast_i32x4(
        _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b0.qs))), 0xFF00,
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(b1.qs)));
    __m512i q = _mm512_and_si512(_mm512_srlv_epi64(both, _mm512_setr_epi64(0, 0, 4, 4, 0, 0, 4, 4)),
                                 _mm512_set1_epi8(0x0F));
    if constexpr (kFifthBit) {
      const uint64_t bits = load_u32(b0.qh) | uint64_t{load_u32(b1.qh)} << 32;
      q = _mm512_mask_add_epi8(q, _cvtu64_mask64(bits), q, _mm512_set1_epi8(0x10));
    }
    if constexpr (kTable) {
      const __m128i table = _mm_loadu_si128(reinterpret_cast<const __m128i*>(gguf::kIq4NlValues));
      q = _mm512_shuffle_epi8(_mm512_broadcast_i32x4(table), q);
    }
    return q;
  }
};
using VQ4_0 = Legacy<gguf::BlockQ4_0, 8, false, false, false>;
using VQ4_1 = Legacy<gguf::BlockQ4_1, 0, true, false, false>;
using VQ5_0 = Legacy<gguf::BlockQ5_0, 16, false, true, false>;
using VQ5_1 = Legacy<gguf::BlockQ5_1, 0, true, true, false>;
using VIq4Nl = Legacy<gguf::BlockIq4Nl, 0, false, false, true>;

// Q8_0: the block's 32 signed bytes are its quants, in order.
struct VQ8_0 {
  static constexpr bool kSuper = false, kSigned = true, kHasMin = false, kBias = false;
  static constexpr int kOffset = 0;
  using B = gguf::BlockQ8_0;
  template <class S>
  static __m256i quants(const B& b) {
    return load32(b.qs);
  }
  template <class S>
  static __m512i quant_pair(const B& b0, const B& b1) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(load32(b0.qs)), load32(b1.qs), 1);
  }
};

// Q2_K: value 32 * s + l of each 128 is bits 2s..2s+1 of qs[l]; scale and min per 16.
struct VQ2_K {
  static constexpr bool kSuper = true, kSigned = false, kMins = true, kBias = true;
  static constexpr int kOffset = 0;
  using B = gguf::BlockQ2_K;
  template <class S>
  static __m256i chunk(const B& b, int c) {
    return bits_at(load32(b.qs + 32 * (c / 4)), 2 * (c % 4), 3);
  }
  static SuperScales scales(const B& b) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales));
    const __m128i mins = _mm_and_si128(_mm_srli_epi16(v, 4), _mm_set1_epi8(0x0F));
    return {_mm256_cvtepu8_epi16(_mm_and_si128(v, _mm_set1_epi8(0x0F))), _mm256_cvtepu8_epi32(mins),
            _mm256_cvtepu8_epi32(_mm_srli_si128(mins, 8)), half(b.d), half(b.dmin)};
  }
};

// Q3_K: the two low bits as Q2_K plus 4 where the hmask bit is set, 4 over the real quant.
struct VQ3_K {
  static constexpr bool kSuper = true, kSigned = false, kMins = false, kBias = true;
  static constexpr int kOffset = 4;
  using B = gguf::BlockQ3_K;
  template <class S>
  static __m256i chunk(const B& b, int c) {
    const __m256i low = bits_at(load32(b.qs + 32 * (c / 4)), 2 * (c % 4), 3);
    return _mm256_or_si256(low, _mm256_slli_epi16(bits_at(load32(b.hmask), c, 1), 2));
  }
  static SuperScales scales(const B& b) {
    // q3_k_scales' unpacking, the sixteen 6-bit scales kept in a vector's bytes, then - 32.
    constexpr uint32_t kmask1 = 0x03030303, kmask2 = 0x0f0f0f0f;
    uint32_t aux[3];
    __builtin_memcpy(aux, b.scales, 12);
    const __m128i six_bits = _mm_setr_epi32(
        static_cast<int>((aux[0] & kmask2) | (((aux[2] >> 0) & kmask1) << 4)),
        static_cast<int>((aux[1] & kmask2) | (((aux[2] >> 2) & kmask1) << 4)),
        static_cast<int>(((aux[0] >> 4) & kmask2) | (((aux[2] >> 4) & kmask1) << 4)),
        static_cast<int>(((aux[1] >> 4) & kmask2) | (((aux[2] >> 6) & kmask1) << 4)));
    SuperScales s;
    signed_scales<kOffset>(_mm_sub_epi8(six_bits, _mm_set1_epi8(32)), s);
    s.d = half(b.d);
    s.dm = 0.f;
    return s;
  }
};

// Q4_K/Q5_K: 64 values per 32 bytes, the low nibbles then the high ones; Q5_K's fifth bit
// of chunk c is bit c of qh[l]. Scales and mins unpacked as ggml's AVX2 form does (utmp).
template <class Block, bool kFifthBit>
struct VK4 {
  static constexpr bool kSuper = true, kSigned = false, kMins = true, kBias = true;
  static constexpr int kOffset = 0;
  using B = Block;
  template <class S>
  static __m256i chunk(const B& b, int c) {
    __m256i q = bits_at(load32(b.qs + 32 * (c / 2)), 4 * (c % 2), 0x0F);
    if constexpr (kFifthBit) {
      q = _mm256_or_si256(q, _mm256_slli_epi16(bits_at(load32(b.qh), c, 1), 4));
    }
    return q;
  }
  // Chunks 2p and 2p + 1 in one 512-bit vector (quant_vector.h's wide steps, AVX-512 only):
  // Q4_K's are the low and high nibbles of the same 32 bytes.
  template <class S>
  requires(!kFifthBit) static __m512i chunk_pair(const B& b, int p) {
    const __m512i v = _mm512_broadcast_i64x4(load32(b.qs + 32 * p));
    return _mm512_and_si512(_mm512_srlv_epi64(v, _mm512_setr_epi64(0, 0, 0, 0, 4, 4, 4, 4)),
                            _mm512_set1_epi8(0x0F));
  }
  static SuperScales scales(const B& b) {
    // ggml's get_scale_min_k4 for all sixteen 6-bit fields at once, in byte lanes. With s
    // the 12 bytes: scale j < 4 is s[j] & 63 and min j is s[j + 4] & 63; scale j >= 4 is
    // s[j + 4] & 15 and min j is s[j + 4] >> 4, each with (s[j - 4] >> 6) << 4 (scale) or
    // (s[j] >> 6) << 4 (min) on top. (The 16-byte load ends inside qs.)
    const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales));
    const __m128i low =
        _mm_shuffle_epi8(raw, _mm_setr_epi8(0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 8, 9, 10, 11));
    const __m128i top = _mm_shuffle_epi8(
        raw, _mm_setr_epi8(-1, -1, -1, -1, 0, 1, 2, 3, -1, -1, -1, -1, 4, 5, 6, 7));
    const __m128i six = _mm_setr_epi8(63, 63, 63, 63, 15, 15, 15, 15, 63, 63, 63, 63, 0, 0, 0, 0);
    const __m128i high_nibble = _mm_and_si128(
        _mm_srli_epi16(low, 4), _mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 15, 15, 15, 15));
    // Bytes 0-7: the eight scales, 8-15: the eight mins; each serves two groups.
    const __m128i v = _mm_or_si128(_mm_or_si128(_mm_and_si128(low, six), high_nibble),
                                   _mm_and_si128(_mm_srli_epi16(top, 2), _mm_set1_epi8(0x30)));
    const __m128i mins = _mm_unpackhi_epi8(v, v);
    return {_mm256_cvtepu8_epi16(_mm_unpacklo_epi8(v, v)), _mm256_cvtepu8_epi32(mins),
            _mm256_cvtepu8_epi32(_mm_srli_si128(mins, 8)), half(b.d), half(b.dmin)};
  }
};
using VQ4_K = VK4<gguf::BlockQ4_K, false>;
using VQ5_K = VK4<gguf::BlockQ5_K, true>;

// Q6_K: chunk c = 4n + k takes ql's low (k < 2) or high nibbles at 64n + 32 (k & 1), and
// bits 2k..2k+1 of qh[32n + l] on top; 32 over the real quant.
struct VQ6_K {
  static constexpr bool kSuper = true, kSigned = false, kMins = false, kBias = true;
  static constexpr int kOffset = 32;
  using B = gguf::BlockQ6_K;
  template <class S>
  static __m256i chunk(const B& b, int c) {
    const int n = c / 4, k = c % 4;
    const __m256i low = bits_at(load32(b.ql + 64 * n + 32 * (k & 1)), 4 * (k / 2), 0x0F);
    return _mm256_or_si256(low, _mm256_slli_epi16(bits_at(load32(b.qh + 32 * n), 2 * k, 3), 4));
  }
  // Chunks 2p and 2p + 1 in one 512-bit vector (AVX-512 only): the same nibble of ql's 64
  // bytes at 64n, with bits 2k..2k+1 and 2k+2..2k+3 of the same 32 bytes of qh on top.
  template <class S>
  static __m512i chunk_pair(const B& b, int p) {
    const int n = p / 2, k = 2 * (p % 2);
    const __m512i ql = _mm512_loadu_si512(b.ql + 64 * n);
    const __m512i low = _mm512_and_si512(_mm512_srli_epi16(ql, 2 * k), _mm512_set1_epi8(0x0F));
    const __m512i qh = _mm512_broadcast_i64x4(load32(b.qh + 32 * n));
    const __m512i shift =
        _mm512_setr_epi64(2 * k, 2 * k, 2 * k, 2 * k, 2 * k + 2, 2 * k + 2, 2 * k + 2, 2 * k + 2);
    const __m512i high = _mm512_and_si512(_mm512_srlv_epi64(qh, shift), _mm512_set1_epi8(3));
    return _mm512_or_si512(low, _mm512_slli_epi16(high, 4));
  }
  static SuperScales scales(const B& b) {
    SuperScales s;
    signed_scales<kOffset>(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales)), s);
    s.d = half(b.d);
    s.dm = 0.f;
    return s;
  }
};

struct VIq4Xs {
  static constexpr bool kSuper = true, kSigned = true, kMins = false, kBias = false;
  static constexpr int kOffset = 0;
  using B = gguf::BlockIq4Xs;
  template <class S>
  static __m256i chunk(const B& b, int c) {
    return iq4_values(legacy_nibbles(b.qs + 16 * c));
  }
  static SuperScales scales(const B& b) {
    // Sub-block ib's 6-bit scale: nibble ib of scales_l (low nibble first), and bits
    // 2ib..2ib+1 of scales_h (spread one pair per byte by pdep) on top; minus 32. Each
    // serves two groups.
    const __m128i l = _mm_cvtsi32_si128(static_cast<int>(load_u32(b.scales_l)));
    const __m128i low = _mm_unpacklo_epi8(_mm_and_si128(l, _mm_set1_epi8(0x0F)),
                                          _mm_and_si128(_mm_srli_epi16(l, 4), _mm_set1_epi8(0x0F)));
    const __m128i high = _mm_cvtsi64_si128(
        static_cast<long long>(_pdep_u64(b.scales_h, 0x0303030303030303ull) << 4));
    const __m128i ls = _mm_sub_epi8(_mm_or_si128(low, high), _mm_set1_epi8(32));
    const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(ls, ls));
    return {sc16, _mm256_setzero_si256(), _mm256_setzero_si256(), half(b.d), 0.f};
  }
};

}  // namespace
}  // namespace tandem::kernels::detail
