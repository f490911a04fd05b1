// The vector kernel for weights in blocks of 32 interleaved by sixteen rows
// (quant_interleave.h): Q4_0 and Q5_0 in avx512/quant_matmul.cpp (512-bit vpdpbusd, one
// group of sixteen rows per vector) and avx2/quant_matmul.cpp (256-bit vpmaddubsw, the group
// in two halves of eight); Q4_1, Q5_1, IQ4_NL and Q8_0 in the 512-bit form alone. Each lane holds
// one weight row, so a step of four quants adds four products to every row's block sum at
// once, with the four activations broadcast; the block's sums come out one row per lane, and
// its float steps run lane-wide:
//   sum - offset * the activations' block sum (exact), then (d * xd) * float(sum), plus
//   m * the activations' s where the type has a min (Q4_1, Q5_1, against Q8_1), added to
//   the row's running float in block order,
// finish_legacy's operations in its order (quant_matmul.h), so every row gets the portable
// form's bits whatever the ISA and the batch. Activation rows go in groups of up to
// S::kStreamRows over each group of weight rows, which stays in L1 from one to the next: one
// form serves a decode step, small batches and prefill alike.
// Everything sits in an anonymous namespace and uses no standard-library template, for the
// reason tile_loop.h gives.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "runner/gguf/quant.h"
#include "runner/kernels/quant_interleave.h"
#include "runner/kernels/quant_vector_steps.h"

namespace tandem::kernels::detail {
namespace {

// Where a legacy record's fields start (quant_interleave.h: d's sixteen halves, m's where
// the type has a min, the fifth bits, the qs' four words, or Q8_0's eight), and how its
// quants become vpdpbusd's unsigned operand: the nibbles (with the fifth bit), IQ4_NL's
// table values plus 128 looked up by them, or Q8_0's bytes plus 128 (`bytes_q`: each word is
// four quants, not eight nibbles) exceed the real quants by `offset`, which the kernel takes
// back exactly as offset * the activations' block sum.
struct InterleavedRecord {
  size_t bytes, m, qh, qs;
  int offset;
  bool min, fifth_bit, table, bytes_q;
};
constexpr InterleavedRecord interleaved_record(QuantKind kind) {
  constexpr size_t n = kInterleaveRows;
  switch (kind) {
    case QuantKind::kQ4_1:
      return {n * sizeof(gguf::BlockQ4_1), 32, 0, 64, 0, true, false, false, false};
    case QuantKind::kQ5_0:
      return {n * sizeof(gguf::BlockQ5_0), 0, 32, 96, 16, false, true, false, false};
    case QuantKind::kQ5_1:
      return {n * sizeof(gguf::BlockQ5_1), 32, 64, 128, 0, true, true, false, false};
    case QuantKind::kIq4Nl:
      return {n * sizeof(gguf::BlockIq4Nl), 0, 0, 32, 128, false, false, true, false};
    case QuantKind::kQ8_0:
      return {n * sizeof(gguf::BlockQ8_0), 0, 0, 32, 128, false, false, false, true};
    default:  // Q4_0
      return {n * sizeof(gguf::BlockQ4_0), 0, 0, 32, 8, false, false, false, false};
  }
}
static_assert(interleaved_record(QuantKind::kQ5_1).qs + 4 * 64 ==
              interleaved_record(QuantKind::kQ5_1).bytes);
static_assert(interleaved_record(QuantKind::kIq4Nl).qs + 4 * 64 ==
              interleaved_record(QuantKind::kIq4Nl).bytes);
static_assert(interleaved_record(QuantKind::kQ8_0).qs + 8 * 64 ==
              interleaved_record(QuantKind::kQ8_0).bytes);

// The sixteen IQ4_NL values plus 128 (so unsigned), in every 128-bit lane, for vpshufb. A
// template only so that the 256-bit translation units, which include this header, never
// compile a 512-bit return.
template <class V = __m512i>
TANDEM_QUANT_INLINE V iq4_unsigned_table() {
  alignas(16) uint8_t t[16];
  for (int i = 0; i < 16; ++i) t[i] = static_cast<uint8_t>(gguf::kIq4NlValues[i] + 128);
  return _mm512_broadcast_i32x4(_mm_load_si128(reinterpret_cast<const __m128i*>(t)));
}

// Bytes ahead that a group's records are prefetched (a decode step streams the weights).
constexpr int64_t kInterleavedPrefetch = 4096;

// Four activation bytes as one int32, for a broadcast.
inline int32_t four_bytes(const int8_t* p) {
  return static_cast<int32_t>(load_u32(reinterpret_cast<const uint8_t*>(p)));
}

// acc + the dot of four unsigned quants per row lane (q) with the four activation bytes at
// x4 (every lane's): vpdpbusd, the bytes read by the instruction's own broadcast
// ({1to16}). Written as _mm512_set1_epi32 of them, GCC emits a vpbroadcastd of its own for
// each (it has no broadcast form of vpdpbusd): in an 8-row block that was 64 of its
// 300-odd instructions. The same operation, so the same bits. The 512-bit kernels here and
// in quant_interleaved_k.h use it; a template for iq4_unsigned_table's reason.
template <class V = __m512i>
TANDEM_QUANT_INLINE V dot4_lanes(V acc, V u, const int8_t* x4) {
  using Word [[gnu::may_alias]] = int32_t;
  asm("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(u), "m"(*reinterpret_cast<const Word*>(x4)));
  return acc;
}

// Activation row m's quants, scales and block sums, and Q8_1's s (null for Q8_0) (row-major
// ActRows).
struct ActRow {
  const int8_t* q;
  const float* d;
  const int32_t* qsum;
  const float* s;
};
inline ActRow act_row(const ActRows& x, int64_t m) {
  const int64_t nb = x.n_in / 32;
  return {x.q + m * x.n_in, x.d + m * nb, x.qsum + m * nb, x.s ? x.s + m * nb : nullptr};
}

// Prefetches one record's lines kInterleavedPrefetch bytes ahead: into L2 where kIntoL2,
// else as read once (isa.h, TANDEM_PREFETCH_READ_ONCE). A decode step reads each weight
// once, and weights fetched into every cache level would push out what the step reads again
// (the activations, and a long context's KV blocks, which fit in L3 where the weights do
// not): non-temporal on a Zen 5, BM_DecodeStep batch 1 (Q4_K_M) 2.41 -> 2.32 ms, context
// 1024 4.12 -> 3.90 ms (medians of 6-8 alternating rounds). But on AMD a non-temporal
// prefetch fills L1 alone, so each line holds one of L1's few miss buffers for the whole trip
// from memory, and a walk that runs near the memory rate is capped by them. Two walks do:
// one against several activation rows (R > 1), which does R rows of work per record, and
// Q8_0's one-row walk, which decodes least per byte. Both prefetch into L2 on every CPU
// (prefetch_into_l2). On the Zen 4, `bench_forward` BM_DecodeStep batch 8: Q8_0 5.67 ->
// 4.51 ms, Q4_K_M 5.30 -> 4.55; a Q8_0 file's batch 1 3.20-3.57 -> 2.97-3.09 ms
// (docs/performance.md 2026-12-04 evening). A group walked again (rows past
// kVnniStreamRows) then finds its lines in L2, too.
template <size_t kBytes, bool kIntoL2>
TANDEM_QUANT_INLINE void prefetch_record(const uint8_t* rec) {
  for (size_t b = 0; b < kBytes; b += 64) {
    if constexpr (kIntoL2) {
      __builtin_prefetch(rec + kInterleavedPrefetch + b, 0, 2);
    } else {
      TANDEM_PREFETCH_READ_ONCE(rec + kInterleavedPrefetch + b);
    }
  }
}

// Whether a walk of type K's records against R rows prefetches into L2 (prefetch_record).
constexpr bool prefetch_into_l2(QuantKind k, int rows) { return rows > 1 || k == QuantKind::kQ8_0; }

// A record's quants as vpdpbusd's unsigned operand, q[v] holding step v (quants 4v .. 4v + 3
// of every row): the nibbles with the fifth bit, IQ4_NL's table values plus 128 (`table`:
// iq4_unsigned_table(), else unused), or Q8_0's bytes plus 128; each I.offset above the real
// quant (interleaved_record). The AMX form (amx/quant_matmul.cpp) takes them back to signed.
template <QuantKind K>
TANDEM_QUANT_INLINE void unsigned_quants(const uint8_t* rec, __m512i table, __m512i (&q)[8]) {
  constexpr InterleavedRecord I = interleaved_record(K);
  if constexpr (I.bytes_q) {
    for (int v = 0; v < 8; ++v)
      q[v] = _mm512_xor_si512(_mm512_loadu_si512(rec + I.qs + 64 * v), _mm512_set1_epi8(-128));
  } else {
    const __m512i low = _mm512_set1_epi8(0x0F);
    for (int u = 0; u < 4; ++u) {
      const __m512i v = _mm512_loadu_si512(rec + I.qs + 64 * u);
      q[u] = _mm512_and_si512(v, low);
      q[u + 4] = _mm512_and_si512(_mm512_srli_epi16(v, 4), low);
    }
  }
  if constexpr (I.fifth_bit) {
    for (int v = 0; v < 8; ++v) {
      uint64_t bits;
      __builtin_memcpy(&bits, rec + I.qh + 8 * v, 8);
      q[v] = _mm512_mask_add_epi8(q[v], _cvtu64_mask64(bits), q[v], _mm512_set1_epi8(0x10));
    }
  }
  if constexpr (I.table) {
    for (int v = 0; v < 8; ++v) q[v] = _mm512_shuffle_epi8(table, q[v]);
  }
}

// 512-bit (S::kWide): out[m][r] = weight row r of the group (at `group`) dotted with
// activation row m0 + m, every m < R.
template <class S, QuantKind K, int R>
void interleaved_group(const uint8_t* group, const ActRows& x, int64_t m0, float (*out)[16]) {
  constexpr InterleavedRecord I = interleaved_record(K);
  const int64_t nb = x.n_in / 32;
  ActRow act[R];
  for (int m = 0; m < R; ++m) act[m] = act_row(x, m0 + m);
  __m512 acc[R];
  for (int m = 0; m < R; ++m) acc[m] = _mm512_setzero_ps();
  __m512i table = _mm512_setzero_si512();
  if constexpr (I.table) table = iq4_unsigned_table();
  for (int64_t j = 0; j < nb; ++j) {
    const uint8_t* rec = group + j * I.bytes;
    prefetch_record<I.bytes, prefetch_into_l2(K, R)>(rec);
    __m512i q[8];  // step v: quants 4v .. 4v + 3 of every row
    unsigned_quants<K>(rec, table, q);
    const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(rec)));
    __m512 dm = _mm512_setzero_ps();
    if constexpr (I.min)
      dm = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(rec + I.m)));
    for (int m = 0; m < R; ++m) {
      const int8_t* xq = act[m].q + 32 * j;
      // The offset's correction is where the second chain starts, not a subtraction after
      // the chains: each block's float steps wait on the sum, and a step fewer there made
      // an 8-row Q5_0 step 5-10% faster (BM_DecodeStep<kQ5_0> M:8, docs/performance.md).
      // Integer sums, so the bits are the same.
      __m512i s0 = _mm512_setzero_si512(), s1 = _mm512_setzero_si512();
      if constexpr (I.offset != 0) s1 = _mm512_set1_epi32(-act[m].qsum[j] * I.offset);
      for (int v = 0; v < 4; ++v) {
        s0 = dot4_lanes(s0, q[v], xq + 4 * v);
        s1 = dot4_lanes(s1, q[v + 4], xq + 16 + 4 * v);
      }
      const __m512i sum = _mm512_add_epi32(s0, s1);
      __m512 t =
          _mm512_mul_ps(_mm512_mul_ps(d, _mm512_set1_ps(act[m].d[j])), _mm512_cvtepi32_ps(sum));
      if constexpr (I.min) t = _mm512_add_ps(t, _mm512_mul_ps(dm, _mm512_set1_ps(act[m].s[j])));
      acc[m] = _mm512_add_ps(acc[m], t);
    }
  }
  for (int m = 0; m < R; ++m) _mm512_storeu_ps(out[m], acc[m]);
}

// 256-bit (AVX2): the same, the group's sixteen rows as two halves of eight lanes, S::dot4
// (vpmaddubsw, then vpmaddwd against ones) for vpdpbusd and S::bits_to_bytes for the mask.
// Sixteen registers hold one block's decoded quants and little more, so each block is
// decoded once for every activation row, whose running sums wait in `out` (n_rows rows of
// 16; decoding again per few rows made a 32-row Q5_0 step 1.5x slower).
template <class S, QuantKind K>
void interleaved_half(const uint8_t* group, const ActRows& x, int64_t n_rows, int h, float* out) {
  constexpr InterleavedRecord I = interleaved_record(K);
  static_assert(K == QuantKind::kQ4_0 || K == QuantKind::kQ5_0, "the 256-bit form's types");
  const int64_t nb = x.n_in / 32;
  for (int64_t m = 0; m < n_rows; ++m) _mm256_storeu_ps(out + 16 * m + 8 * h, _mm256_setzero_ps());
  const __m256i low = _mm256_set1_epi8(0x0F);
  for (int64_t j = 0; j < nb; ++j) {
    const uint8_t* rec = group + j * I.bytes;
    // One walk serves every row; read once, as measured on the Zen 3.
    if (h == 0) prefetch_record<I.bytes, false>(rec);
    __m256i q[8];
    for (int u = 0; u < 4; ++u) {
      const __m256i v =
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rec + I.qs + 64 * u + 32 * h));
      q[u] = _mm256_and_si256(v, low);
      q[u + 4] = _mm256_and_si256(_mm256_srli_epi16(v, 4), low);
    }
    if constexpr (I.fifth_bit) {
      for (int v = 0; v < 8; ++v) {
        uint32_t bits;
        __builtin_memcpy(&bits, rec + I.qh + 8 * v + 4 * h, 4);
        q[v] = _mm256_or_si256(q[v], S::bits_to_bytes(bits, 0x10));
      }
    }
    const __m256 d =
        _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(rec + 16 * h)));
    for (int64_t m = 0; m < n_rows; ++m) {
      const ActRow act = act_row(x, m);
      const int8_t* xq = act.q + 32 * j;
      // The offset's correction first, as in interleaved_group.
      __m256i s = _mm256_set1_epi32(-act.qsum[j] * I.offset);
      for (int v = 0; v < 8; ++v) {
        const int at = v < 4 ? 4 * v : 16 + 4 * (v - 4);
        s = _mm256_add_epi32(s, S::dot4(q[v], _mm256_set1_epi32(four_bytes(xq + at))));
      }
      const __m256 t =
          _mm256_mul_ps(_mm256_mul_ps(d, _mm256_set1_ps(act.d[j])), _mm256_cvtepi32_ps(s));
      float* acc = out + 16 * m + 8 * h;
      _mm256_storeu_ps(acc, _mm256_add_ps(_mm256_loadu_ps(acc), t));
    }
  }
}

// A type in blocks of 32 as interleaved_rows' G: its kind (for the 256-bit form, which takes
// Q4_0 and Q5_0 alone), the values a record holds per row, its bytes, and its 512-bit kernel
// for R activation rows.
template <QuantKind K>
struct LegacyGroup {
  static constexpr QuantKind kKind = K;
  static constexpr int64_t kValues = 32;
  static constexpr size_t kRecordBytes = interleaved_record(K).bytes;
  template <class S, int R>
  static void run(const uint8_t* group, const ActRows& x, int64_t m0, float (*out)[16]) {
    interleaved_group<S, K, R>(group, x, m0, out);
  }
};

// G's kernel for `rows` activation rows (1 .. S::kStreamRows), R a literal.
template <class S, class G, int R = 1>
void run_group_rows(int64_t rows, const uint8_t* group, const ActRows& x, int64_t m0,
                    float (*out)[16]) {
  if constexpr (R < S::kStreamRows) {
    if (rows > R) return run_group_rows<S, G, R + 1>(rows, group, x, m0, out);
  }
  G::template run<S, R>(group, x, m0, out);
}

// Outputs [out_begin, out_end) of every activation row: each group of sixteen weight rows
// that the range touches, against the activation rows (512-bit: S::kStreamRows at a time,
// their sums in registers; 256-bit, the legacy types only: all at once, their sums in
// quant_scratch).
template <class S, class G>
void interleaved_rows(const QuantMatmulArgs& a, int64_t out_begin, int64_t out_end) {
  const size_t group_bytes = a.n_in / G::kValues * G::kRecordBytes;
  alignas(64) float chunk[WideSteps<S> ? S::kStreamRows : 1][16];
  float* all = nullptr;
  if constexpr (!WideSteps<S>)
    all = static_cast<float*>(quant_scratch(static_cast<size_t>(a.n_rows) * 16 * 4));
  auto store = [&](const float* sums, int64_t m, int64_t g0, int64_t from, int64_t to) {
    for (int64_t o = from; o < to; ++o) a.y[m * a.row_stride() + o] = sums[o - g0];
  };
  for (int64_t g0 = out_begin / kInterleaveRows * kInterleaveRows; g0 < out_end;
       g0 += kInterleaveRows) {
    const uint8_t* group = a.w + g0 / kInterleaveRows * group_bytes;
    const int64_t from = g0 > out_begin ? g0 : out_begin;
    const int64_t to = g0 + kInterleaveRows < out_end ? g0 + kInterleaveRows : out_end;
    if constexpr (WideSteps<S>) {
      for (int64_t m0 = 0; m0 < a.n_rows; m0 += S::kStreamRows) {
        const int64_t rows = a.n_rows - m0 < S::kStreamRows ? a.n_rows - m0 : S::kStreamRows;
        run_group_rows<S, G>(rows, group, a.x, m0, chunk);
        for (int64_t m = 0; m < rows; ++m) store(chunk[m], m0 + m, g0, from, to);
      }
    } else {
      for (int h = 0; h < 2; ++h) interleaved_half<S, G::kKind>(group, a.x, a.n_rows, h, all);
      for (int64_t m = 0; m < a.n_rows; ++m) store(all + 16 * m, m, g0, from, to);
    }
  }
}

// Q4_0's and Q5_0's interleaved loop, every vector form's (quant_interleaved_k.h adds the
// other types for VNNI).
template <class S>
void interleaved_loop(const QuantMatmulArgs& a, int64_t out_begin, int64_t out_end) {
  if (a.kind == QuantKind::kQ5_0)
    return interleaved_rows<S, LegacyGroup<QuantKind::kQ5_0>>(a, out_begin, out_end);
  interleaved_rows<S, LegacyGroup<QuantKind::kQ4_0>>(a, out_begin, out_end);
}

}  // namespace
}  // namespace tandem::kernels::detail
