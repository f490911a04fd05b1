// Attention's scores against a block of keys stored transposed (runner/device/kv_cache.h,
// KvCache::k_transposed): element i of key j at row i, place j, the rows row_bytes apart.
// Each key's score is one vector lane, so the keys need no horizontal sums (the vector
// form of dot_rows spent a third of its operations reducing lanes), and a row's keys are
// loaded and widened once for all the queries of a call (a prefill tile's queries and the
// heads that share a KV head under GQA).
//
// The order of a score's arithmetic is fixed and lane-local: four chains c_p, each the
// FMAs c_p = q[i] * k[i] + c_p over i = p, p + 4, p + 8, ... in increasing i, then
// (c_0 + c_1) + (c_2 + c_3). So a key gets the same bits whatever lane, chunk of keys,
// group of queries or ISA it is computed in (four chains keep the FMA units busy when a
// call has only a decode row's few heads). Internal to runner/kernels/, in an anonymous
// namespace for the reason in tile_loop.h.
#pragma once

#include <cstdint>

#include "runner/kernels/isa.h"
#include "runner/kernels/vector_loops.h"

namespace tandem::kernels::detail {
namespace {

template <class V>
constexpr int element_bytes(F32Elements<V>*) {
  return 4;
}
template <class V>
constexpr int element_bytes(F16Elements<V>*) {
  return 2;
}
template <class V>
constexpr int element_bytes(Bf16Elements<V>*) {
  return 2;
}
template <class E>
constexpr int kElementBytes = element_bytes(static_cast<E*>(nullptr));

// kWidth keys' element i from a row (at c: the chunk's first key): a whole vector, or
// (Full false: the block ends inside the chunk) the `left` keys there, the rest zero.
template <class V, class E, bool Full>
TANDEM_STEP_INLINE inline typename V::Vec load_keys(const uint8_t* row, int64_t left) {
  if constexpr (Full) {
    return E::load(row, 0);
  } else {
    alignas(64) uint8_t padded[V::kWidth * kElementBytes<E>] = {};
    __builtin_memcpy(padded, row, static_cast<size_t>(left) * kElementBytes<E>);
    return E::load(padded, 0);
  }
}

// The scores of G queries against the kWidth keys of a chunk (keys at `base`): `valid` of
// them stored at out[a] (the chunk's first key at out[a][0]).
template <class V, class E, int G, bool Full>
void key_chunk(const float* const* q, const uint8_t* base, int64_t row_bytes, int64_t left,
               int64_t n, float* const* out, int64_t valid) {
  using Vec = typename V::Vec;
  Vec c[G][4];
  for (int a = 0; a < G; ++a)
    for (int p = 0; p < 4; ++p) c[a][p] = Vec{};
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    for (int p = 0; p < 4; ++p) {
      const Vec k = load_keys<V, E, Full>(base + (i + p) * row_bytes, left);
      for (int a = 0; a < G; ++a) c[a][p] = V::fma(V::broadcast(q[a] + i + p), k, c[a][p]);
    }
  }
  for (int p = 0; i < n; ++i, ++p) {
    const Vec k = load_keys<V, E, Full>(base + i * row_bytes, left);
    for (int a = 0; a < G; ++a) c[a][p] = V::fma(V::broadcast(q[a] + i), k, c[a][p]);
  }
  for (int a = 0; a < G; ++a) {
    const Vec s = (c[a][0] + c[a][1]) + (c[a][2] + c[a][3]);
    if (valid == V::kWidth) {
      V::store(out[a], s);
    } else {
      V::store_first(out[a], s, valid);
    }
  }
}

// The last n_q % G queries, G - 1 down to 1 at a time.
template <class V, class E, int G, bool Full>
void key_chunk_rest(const float* const* q, int rest, const uint8_t* base, int64_t row_bytes,
                    int64_t left, int64_t n, float* const* out, int64_t valid) {
  if constexpr (G > 0) {
    if (rest == G) return key_chunk<V, E, G, Full>(q, base, row_bytes, left, n, out, valid);
    key_chunk_rest<V, E, G - 1, Full>(q, rest, base, row_bytes, left, n, out, valid);
  }
}

// kernels.h's dot_keys for element type E: keys [0, keys) of a block of `block` slots.
// Queries go G at a time (G chains of four in registers, and the row vector), the keys a
// vector's width at a time.
template <class V, class E>
void dot_keys(const float* const* q, int n_q, const uint8_t* kt, int64_t block, int64_t keys,
              int64_t n, float* const* out) {
  constexpr int kW = V::kWidth, G = kW == 16 ? 6 : 3;
  const int64_t row_bytes = block * kElementBytes<E>;
  float* chunk_out[G];
  for (int64_t c = 0; c < keys; c += kW) {
    const int64_t left = block - c < kW ? block - c : kW;  // keys the row holds from c on
    const int64_t valid = keys - c < kW ? keys - c : kW;
    const uint8_t* base = kt + c * kElementBytes<E>;
    for (int a = 0; a < n_q; a += G) {
      const int count = n_q - a < G ? n_q - a : G;
      for (int g = 0; g < count; ++g) chunk_out[g] = out[a + g] + c;
      if (left == kW) {
        if (count == G) {
          key_chunk<V, E, G, true>(q + a, base, row_bytes, left, n, chunk_out, valid);
        } else {
          key_chunk_rest<V, E, G - 1, true>(q + a, count, base, row_bytes, left, n, chunk_out,
                                            valid);
        }
      } else {
        key_chunk_rest<V, E, G, false>(q + a, count, base, row_bytes, left, n, chunk_out, valid);
      }
    }
  }
}

// A key vector's scores from its four chains, (c0 + c1) + (c2 + c3): the first `valid` of
// them (all kWidth, some, or none) stored at out. Both pair kernels end with it.
template <class V>
TANDEM_STEP_INLINE inline void store_chain_sums(float* out, const typename V::Vec (&chains)[4],
                                                int64_t valid) {
  const typename V::Vec s = (chains[0] + chains[1]) + (chains[2] + chains[3]);
  if (valid == V::kWidth) {
    V::store(out, s);
  } else if (valid > 0) {
    V::store_first(out, s, valid);
  }
}

// The scores of G queries against the kWidth keys at the same place c of two blocks (keys
// at base0 and base1, whole vectors): each query element is broadcast once for both blocks'
// FMAs. One block's keys took a broadcast load for every FMA and a widening load for every
// G, more loads than the two load ports retire: a standalone loop of a decode row's three
// heads over F16 keys in L1 and in L2 ran 1.4x faster two blocks at a time (Zen 5). The
// same four chains per key as key_chunk, so the same bits. valid0, valid1: keys to store.
template <class V, class E, int G>
void key_pair_chunk(const float* const* q, const uint8_t* base0, const uint8_t* base1,
                    int64_t row_bytes, int64_t n, float* const* out0, float* const* out1,
                    int64_t valid0, int64_t valid1) {
  using Vec = typename V::Vec;
  Vec c[G][4], d[G][4];
  for (int a = 0; a < G; ++a)
    for (int p = 0; p < 4; ++p) c[a][p] = d[a][p] = Vec{};
  auto step = [&](int64_t i, int p) TANDEM_STEP_INLINE {
    const Vec k0 = load_keys<V, E, true>(base0 + i * row_bytes, V::kWidth);
    const Vec k1 = load_keys<V, E, true>(base1 + i * row_bytes, V::kWidth);
    for (int a = 0; a < G; ++a) {
      const Vec x = V::broadcast(q[a] + i);
      c[a][p] = V::fma(x, k0, c[a][p]);
      d[a][p] = V::fma(x, k1, d[a][p]);
    }
  };
  int64_t i = 0;
  for (; i + 4 <= n; i += 4)
    for (int p = 0; p < 4; ++p) step(i + p, p);
  for (int p = 0; i < n; ++i, ++p) step(i, p);
  for (int a = 0; a < G; ++a) {
    store_chain_sums<V>(out0[a], c[a], valid0);
    store_chain_sums<V>(out1[a], d[a], valid1);
  }
}

// key_pair_chunk for many queries (a prefill tile's, or rows sharing a prefix): the four
// chains one after another instead of side by side, so the registers hold both blocks' sums
// for G queries, not three, and each key vector loaded and widened serves 2 * G FMAs (with
// three queries, five loads for six FMAs kept the load ports busier than the FMA units).
// Each chain is still the FMAs over i = p, p + 4, ... in increasing i, and the chains are
// added as (c0 + c1) + (c2 + c3): the bits key_pair_chunk gives. A prefill tile's 48 query
// heads of a KV head (16 tokens, 3 heads each on the smollm2 shape), F16 keys in L1, on the
// Zen 5: 1239-1634 ns a call pair by three, 1042-1186 by six, 1150-1167 by eight, 1254-1329
// by twelve (the best of 5 runs, 3 alternating rounds; docs/performance.md).
constexpr int kSeqQueries = 6;
template <class V, class E, int G>
void key_pair_seq(const float* const* q, const uint8_t* base0, const uint8_t* base1,
                  int64_t row_bytes, int64_t n, float* const* out0, float* const* out1,
                  int64_t valid0, int64_t valid1) {
  using Vec = typename V::Vec;
  Vec chains[2][G][4];  // [block][query][chain]
  for (int p = 0; p < 4; ++p) {
    Vec c[G], d[G];
    for (int a = 0; a < G; ++a) c[a] = d[a] = Vec{};
    for (int64_t i = p; i < n; i += 4) {
      const Vec k0 = load_keys<V, E, true>(base0 + i * row_bytes, V::kWidth);
      const Vec k1 = load_keys<V, E, true>(base1 + i * row_bytes, V::kWidth);
      for (int a = 0; a < G; ++a) {
        const Vec x = V::broadcast(q[a] + i);
        c[a] = V::fma(x, k0, c[a]);
        d[a] = V::fma(x, k1, d[a]);
      }
    }
    for (int a = 0; a < G; ++a) {
      chains[0][a][p] = c[a];
      chains[1][a][p] = d[a];
    }
  }
  for (int a = 0; a < G; ++a) {
    store_chain_sums<V>(out0[a], chains[0][a], valid0);
    store_chain_sums<V>(out1[a], chains[1][a], valid1);
  }
}

template <class V, class E, int G>
void key_pair_rest(const float* const* q, int rest, const uint8_t* base0, const uint8_t* base1,
                   int64_t row_bytes, int64_t n, float* const* out0, float* const* out1,
                   int64_t valid0, int64_t valid1) {
  if constexpr (G > 0) {
    if (rest == G)
      return key_pair_chunk<V, E, G>(q, base0, base1, row_bytes, n, out0, out1, valid0, valid1);
    key_pair_rest<V, E, G - 1>(q, rest, base0, base1, row_bytes, n, out0, out1, valid0, valid1);
  }
}

// kernels.h's dot_keys_pair for element type E, where the registers hold two blocks' chains
// for three queries (AVX-512): queries six at a time while six are left (key_pair_seq), the
// rest three at a time, both blocks' keys a vector's width at a time. Blocks whose size is
// not a whole number of vectors go one at a time (dot_keys).
template <class V, class E>
void dot_keys_pair(const float* const* q, int n_q, const uint8_t* kt0, const uint8_t* kt1,
                   int64_t block, int64_t keys0, int64_t keys1, int64_t n, float* const* out0,
                   float* const* out1) {
  constexpr int kW = V::kWidth, G = 3;
  if (block % kW != 0) {
    dot_keys<V, E>(q, n_q, kt0, block, keys0, n, out0);
    return dot_keys<V, E>(q, n_q, kt1, block, keys1, n, out1);
  }
  const int64_t row_bytes = block * kElementBytes<E>;
  static_assert(kSeqQueries >= G);
  float* chunk0[kSeqQueries];  // the outputs of the queries a call takes, at this chunk
  float* chunk1[kSeqQueries];
  for (int64_t c = 0; c < block && (c < keys0 || c < keys1); c += kW) {
    const int64_t valid0 = keys0 - c < kW ? keys0 - c : kW;
    const int64_t valid1 = keys1 - c < kW ? keys1 - c : kW;
    const uint8_t* base0 = kt0 + c * kElementBytes<E>;
    const uint8_t* base1 = kt1 + c * kElementBytes<E>;
    auto aim = [&](int a, int count) {
      for (int g = 0; g < count; ++g) {
        chunk0[g] = out0[a + g] + c;
        chunk1[g] = out1[a + g] + c;
      }
    };
    int a = 0;
    for (; n_q - a >= kSeqQueries; a += kSeqQueries) {
      aim(a, kSeqQueries);
      key_pair_seq<V, E, kSeqQueries>(q + a, base0, base1, row_bytes, n, chunk0, chunk1, valid0,
                                      valid1);
    }
    for (; a < n_q; a += G) {
      const int count = n_q - a < G ? n_q - a : G;
      aim(a, count);
      key_pair_rest<V, E, G>(q + a, count, base0, base1, row_bytes, n, chunk0, chunk1, valid0,
                             valid1);
    }
  }
}

// kernels.h's widen_rows for element type E: each element widened exactly, a vector at a
// time, the tail one by one.
template <class V, class E>
void widen_rows(const uint8_t* v, int64_t stride, int64_t count, int64_t n, float* out,
                int64_t out_stride) {
  for (int64_t j = 0; j < count; ++j) {
    const uint8_t* row = v + j * stride;
    float* o = out + j * out_stride;
    int64_t i = 0;
    for (; i + V::kWidth <= n; i += V::kWidth) V::store(o + i, E::load(row, i));
    for (; i < n; ++i) o[i] = E::at(row, i);
  }
}

// The kernels with the ISA's dot_keys, dot_keys_pair and widen_rows added (indexed by
// KvElements; Q8_0's K is never transposed, so it has no dot_keys).
template <class V>
constexpr IsaKernels with_key_dots(IsaKernels k) {
  k.kv_dot_keys[static_cast<int>(KvElements::kF32)] = &dot_keys<V, F32Elements<V>>;
  k.kv_dot_keys[static_cast<int>(KvElements::kF16)] = &dot_keys<V, F16Elements<V>>;
  k.kv_dot_keys[static_cast<int>(KvElements::kBf16)] = &dot_keys<V, Bf16Elements<V>>;
  if constexpr (V::kWidth == 16) {  // 24 chains and two keys' vectors: AVX-512's registers
    k.kv_dot_keys_pair[static_cast<int>(KvElements::kF32)] = &dot_keys_pair<V, F32Elements<V>>;
    k.kv_dot_keys_pair[static_cast<int>(KvElements::kF16)] = &dot_keys_pair<V, F16Elements<V>>;
    k.kv_dot_keys_pair[static_cast<int>(KvElements::kBf16)] = &dot_keys_pair<V, Bf16Elements<V>>;
  }
  k.kv_widen_rows[static_cast<int>(KvElements::kF32)] = &widen_rows<V, F32Elements<V>>;
  k.kv_widen_rows[static_cast<int>(KvElements::kF16)] = &widen_rows<V, F16Elements<V>>;
  k.kv_widen_rows[static_cast<int>(KvElements::kBf16)] = &widen_rows<V, Bf16Elements<V>>;
  k.kv_widen_rows[static_cast<int>(KvElements::kQ8_0)] = &widen_rows<V, Q8Elements<V>>;
  return k;
}

}  // namespace
}  // namespace tandem::kernels::detail
