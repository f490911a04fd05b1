// The vector kernels every instruction set shares (dot, axpy, silu_mul, axpy_rows and the
// exp behind silu), written once over the ISA's micro-kernel (the struct V of
// runner/kernels/tile_loop.h), which adds for them:
//   load_first(const float*, n)   the first n lanes, the rest zero
//   store_first(float*, v, n)     the first n lanes
//   clamp(v, lo, hi)              min(max(v, lo), hi) as vmaxps, vminps do it
//   fnma(a, b, c)                 c - a * b, rounded once
//   scale_pow2(v, n)              v * 2^n for integral n
//   round(v)                      to the nearest integer, ties to even
//   finish_dot(acc0, acc1, a, b, n)  adds the last n < kWidth products and reduces
//   reduce_max(v)                 the largest lane
//   row_sums16(x, stride, rows, n, sums) (optional) sums[h] = row h's n <= 16 lanes added
//                                 in index order, for rows <= 16 rows at once
//   load_bf16(const uint16_t*)    kWidth BF16 values widened to F32 (the KV cache's)
//   store_half(uint16_t*, v)      kWidth lanes narrowed to F16, ties to even
//   store_bfloat(uint16_t*, v)    kWidth lanes narrowed to BF16, ties to even
// + - * / are GCC's vector operators, which is how both compilers define the intrinsics
// (_mm256_add_ps is a + b): the same instructions, each rounded on its own.
// Internal to runner/kernels/, in an anonymous namespace for the reason in tile_loop.h.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "runner/kernels/isa.h"
#include "runner/kernels/tile_loop.h"

namespace tandem::kernels::detail {
namespace {

template <class V>
typename V::Vec splat(float x) {
  return V::broadcast(&x);
}

// e^x for x in about [-87, 88] (inputs are clamped there): Cephes' expf, a degree-5
// polynomial on x - n ln2, scaled by 2^n. Within 2 ulp of std::exp.
template <class V>
typename V::Vec exp_ps(typename V::Vec x) {
  using Vec = typename V::Vec;
  x = V::clamp(x, splat<V>(-87.0f), splat<V>(88.0f));
  const Vec n = V::round(x * splat<V>(1.44269504088896341f));
  Vec r = V::fnma(n, splat<V>(0.693359375f), x);
  r = V::fnma(n, splat<V>(-2.12194440e-4f), r);
  Vec p = splat<V>(1.9875691500e-4f);
  p = V::fma(p, r, splat<V>(1.3981999507e-3f));
  p = V::fma(p, r, splat<V>(8.3334519073e-3f));
  p = V::fma(p, r, splat<V>(4.1665795894e-2f));
  p = V::fma(p, r, splat<V>(1.6666665459e-1f));
  p = V::fma(p, r, splat<V>(5.0000001201e-1f));
  p = V::fma(p, r * r, r + splat<V>(1.0f));
  return V::scale_pow2(p, n);
}

// silu(g) * u = g / (1 + e^-g) * u, lane by lane.
template <class V>
typename V::Vec silu_times(typename V::Vec g, typename V::Vec u) {
  const typename V::Vec one = splat<V>(1.0f);
  const typename V::Vec sig = one / (one + exp_ps<V>(typename V::Vec{} - g));
  return g * sig * u;
}

// Two accumulators over pairs of vectors, then one more vector; the ISA adds the rest.
template <class V>
float dot(const float* a, const float* b, int64_t n) {
  constexpr int kW = V::kWidth;
  typename V::Vec acc0{}, acc1{};
  int64_t i = 0;
  for (; i + 2 * kW <= n; i += 2 * kW) {
    acc0 = V::fma(V::load(a + i), V::load(b + i), acc0);
    acc1 = V::fma(V::load(a + i + kW), V::load(b + i + kW), acc1);
  }
  if (i + kW <= n) {
    acc0 = V::fma(V::load(a + i), V::load(b + i), acc0);
    i += kW;
  }
  return V::finish_dot(acc0, acc1, a + i, b + i, n - i);
}

// y += alpha * x. The tail takes the same vector path, so an element's result does not
// depend on n (one FMA, as the scalar fmaf would round it).
template <class V>
void axpy(float alpha, const float* x, float* y, int64_t n) {
  const typename V::Vec va = splat<V>(alpha);
  int64_t i = 0;
  for (; i + V::kWidth <= n; i += V::kWidth)
    V::store(y + i, V::fma(va, V::load(x + i), V::load(y + i)));
  if (i < n) {
    V::store_first(y + i, V::fma(va, V::load_first(x + i, n - i), V::load_first(y + i, n - i)),
                   n - i);
  }
}

// out = silu(gate) * up, the tail through the same vector code.
template <class V>
void silu_mul(const float* gate, const float* up, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + V::kWidth <= n; i += V::kWidth) {
    V::store(out + i, silu_times<V>(V::load(gate + i), V::load(up + i)));
  }
  if (i < n) {
    const int64_t left = n - i;
    V::store_first(out + i,
                   silu_times<V>(V::load_first(gate + i, left), V::load_first(up + i, left)), left);
  }
}

// Attention's online-softmax step over one block of scores, for n_rows rows (the query
// heads of a task) at once, row h's n scores at x + h * stride: each score multiplied by
// scale, max[h] raised to the row's largest, the scores replaced by e^(score - max[h]) and
// sums[h] set to their sum, added in index order. An element's result depends only on it,
// scale and max[h], never on n or the other rows; the rows' serial sums go sixteen at a
// time as one vector's lanes where V has row_sums16 (a prefill tile's shared fold has 144
// rows, a decode task 9; the last group may be short), else four at a time interleaved, so
// that their additions overlap.
template <class V>
void scaled_exp_sums(float* x, int64_t stride, int n_rows, int64_t n, float scale, float* max,
                     float* sums) {
  constexpr int kW = V::kWidth;
  if (n == kW) {
    // A whole block of one vector a row: every row's max first, then every row's e^x, so
    // that the rows' short dependent chains (a lane reduction, then an exp) overlap rather
    // than run one row after another. The same operations on each element as below.
    for (int h = 0; h < n_rows; ++h) {
      const typename V::Vec v = V::load(x + h * stride) * splat<V>(scale);
      V::store(x + h * stride, v);
      const float chunk_max = V::reduce_max(v);
      max[h] = chunk_max > max[h] ? chunk_max : max[h];
    }
    for (int h = 0; h < n_rows; ++h)
      V::store(x + h * stride, exp_ps<V>(V::load(x + h * stride) - splat<V>(max[h])));
  } else {
    for (int h = 0; h < n_rows; ++h) {
      float* row = x + h * stride;
      float m = max[h];
      int64_t i = 0;
      for (; i + kW <= n; i += kW) {
        const typename V::Vec v = V::load(row + i) * splat<V>(scale);
        V::store(row + i, v);
        const float chunk_max = V::reduce_max(v);
        m = chunk_max > m ? chunk_max : m;
      }
      for (; i < n; ++i) {
        row[i] *= scale;
        m = row[i] > m ? row[i] : m;
      }
      max[h] = m;
      const typename V::Vec shift = splat<V>(m);
      for (i = 0; i + kW <= n; i += kW) V::store(row + i, exp_ps<V>(V::load(row + i) - shift));
      if (i < n) V::store_first(row + i, exp_ps<V>(V::load_first(row + i, n - i) - shift), n - i);
    }
  }
  int h = 0;
  if constexpr (requires { V::row_sums16(x, stride, n_rows, n, sums); }) {
    // Sixteen rows at a time, and the last group too where it has rows enough to be worth
    // a transpose (a decode task's nine query heads; one to three go the scalar way).
    if (n <= 16)
      for (int rows; (rows = std::min(16, n_rows - h)) >= 4; h += rows)
        V::row_sums16(x + h * stride, stride, rows, n, sums + h);
  }
  for (; h + 4 <= n_rows; h += 4) {
    const float *r0 = x + h * stride, *r1 = r0 + stride, *r2 = r1 + stride, *r3 = r2 + stride;
    float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (int64_t j = 0; j < n; ++j) {
      s0 += r0[j];
      s1 += r1[j];
      s2 += r2[j];
      s3 += r3[j];
    }
    sums[h] = s0;
    sums[h + 1] = s1;
    sums[h + 2] = s2;
    sums[h + 3] = s3;
  }
  for (; h < n_rows; ++h) {
    const float* r = x + h * stride;
    float sum = 0;
    for (int64_t j = 0; j < n; ++j) sum += r[j];
    sums[h] = sum;
  }
}

// out = x narrowed to F16 (Bfloat false) or BF16 (true): the tail through a padded buffer
// and the same instructions, so each element's bits depend on it alone.
template <class V, bool Bfloat>
void narrow(const float* x, uint16_t* out, int64_t n) {
  constexpr int kW = V::kWidth;
  auto store = [](uint16_t* o, typename V::Vec v) {
    if constexpr (Bfloat) {
      V::store_bfloat(o, v);
    } else {
      V::store_half(o, v);
    }
  };
  int64_t i = 0;
  for (; i + kW <= n; i += kW) store(out + i, V::load(x + i));
  if (i < n) {
    uint16_t tail[kW];
    store(tail, V::load_first(x + i, n - i));
    for (int64_t j = 0; j < n - i; ++j) out[i + j] = tail[j];
  }
}

// y += sum_j w[j] * v[j * stride], accumulated in j order, kWidth outputs at a time in
// a register.
template <class V>
void axpy_rows(const float* w, const float* v, int64_t stride, int64_t count, int64_t n, float* y) {
  constexpr int kW = V::kWidth;
  int64_t i = 0;
  // Four vectors of outputs at a time: four independent FMA chains instead of one (each
  // element's sum is the same, in the same order).
  for (; i + 4 * kW <= n; i += 4 * kW) {
    typename V::Vec a0 = V::load(y + i), a1 = V::load(y + i + kW), a2 = V::load(y + i + 2 * kW),
                    a3 = V::load(y + i + 3 * kW);
    for (int64_t j = 0; j < count; ++j) {
      const typename V::Vec wj = V::broadcast(w + j);
      const float* vj = v + j * stride + i;
      a0 = V::fma(wj, V::load(vj), a0);
      a1 = V::fma(wj, V::load(vj + kW), a1);
      a2 = V::fma(wj, V::load(vj + 2 * kW), a2);
      a3 = V::fma(wj, V::load(vj + 3 * kW), a3);
    }
    V::store(y + i, a0);
    V::store(y + i + kW, a1);
    V::store(y + i + 2 * kW, a2);
    V::store(y + i + 3 * kW, a3);
  }
  for (; i + V::kWidth <= n; i += V::kWidth) {
    typename V::Vec acc = V::load(y + i);
    for (int64_t j = 0; j < count; ++j)
      acc = V::fma(V::broadcast(w + j), V::load(v + j * stride + i), acc);
    V::store(y + i, acc);
  }
  if (i < n) {
    const int64_t left = n - i;
    typename V::Vec acc = V::load_first(y + i, left);
    for (int64_t j = 0; j < count; ++j) {
      acc = V::fma(V::broadcast(w + j), V::load_first(v + j * stride + i, left), acc);
    }
    V::store_first(y + i, acc, left);
  }
}

using DotRows = void (*)(const float* q, const float* k, int64_t stride, int64_t count, int64_t n,
                         float* out);

// How the elements of a stored KV vector reach V's lanes, each widened exactly to F32:
// load(row, i) gives elements i .. i + kWidth - 1 (i a multiple of kWidth), at(row, i)
// element i alone (for tails). The scalar widenings are the instructions' own (vcvtph2ps,
// a shift for BF16, q * scale for Q8_0, exact in F32), so both agree bit for bit.
template <class V>
struct F32Elements {
  static typename V::Vec load(const uint8_t* row, int64_t i) {
    return V::load(reinterpret_cast<const float*>(row) + i);
  }
  static float at(const uint8_t* row, int64_t i) {
    float x;
    __builtin_memcpy(&x, row + 4 * i, 4);
    return x;
  }
};

template <class V>
struct F16Elements {
  static typename V::Vec load(const uint8_t* row, int64_t i) {
    return V::load(reinterpret_cast<const uint16_t*>(row) + i);
  }
  static float at(const uint8_t* row, int64_t i) {
    uint16_t h;
    __builtin_memcpy(&h, row + 2 * i, 2);
    return _cvtsh_ss(h);
  }
};

template <class V>
struct Bf16Elements {
  static typename V::Vec load(const uint8_t* row, int64_t i) {
    return V::load_bf16(reinterpret_cast<const uint16_t*>(row) + i);
  }
  static float at(const uint8_t* row, int64_t i) {
    uint16_t h;
    __builtin_memcpy(&h, row + 2 * i, 2);
    return __builtin_bit_cast(float, static_cast<uint32_t>(h) << 16);
  }
};

// ggml's Q8_0: blocks of 34 bytes, an F16 scale then 32 int8 values.
template <class V>
struct Q8Elements {
  static float scale(const uint8_t* block) {
    uint16_t h;
    __builtin_memcpy(&h, block, 2);
    return _cvtsh_ss(h);
  }
  static typename V::Vec load(const uint8_t* row, int64_t i) {
    const uint8_t* block = row + (i / 32) * 34;
    return V::load_q8(reinterpret_cast<const int8_t*>(block + 2 + i % 32), splat<V>(scale(block)));
  }
  static float at(const uint8_t* row, int64_t i) {
    const uint8_t* block = row + (i / 32) * 34;
    return static_cast<float>(static_cast<int8_t>(block[2 + i % 32])) * scale(block);
  }
};

// dot(q, row) over n elements, with dot's accumulators; the tail is widened into a
// buffer and goes through finish_dot like an F32 tail.
template <class V, class E>
float dot_elements(const float* q, const uint8_t* row, int64_t n) {
  constexpr int kW = V::kWidth;
  typename V::Vec acc0{}, acc1{};
  int64_t i = 0;
  for (; i + 2 * kW <= n; i += 2 * kW) {
    acc0 = V::fma(V::load(q + i), E::load(row, i), acc0);
    acc1 = V::fma(V::load(q + i + kW), E::load(row, i + kW), acc1);
  }
  if (i + kW <= n) {
    acc0 = V::fma(V::load(q + i), E::load(row, i), acc0);
    i += kW;
  }
  float tail[kW];
  for (int64_t r = 0; r < n - i; ++r) tail[r] = E::at(row, i + r);
  return V::finish_dot(acc0, acc1, q + i, tail, n - i);
}

template <class V, class E>
void kv_dot_rows(const float* q, const uint8_t* k, int64_t stride, int64_t count, int64_t n,
                 float* out) {
  for (int64_t j = 0; j < count; ++j) out[j] = dot_elements<V, E>(q, k + j * stride, n);
}

// axpy_rows over stored elements: y += sum_j w[j] * v_j, in increasing j, kWidth outputs
// at a time in a register; the tail widens into a buffer and takes the same vector path.
template <class V, class E>
void kv_axpy_rows(const float* w, const uint8_t* v, int64_t stride, int64_t count, int64_t n,
                  float* y) {
  constexpr int kW = V::kWidth;
  int64_t i = 0;
  // As axpy_rows: four vectors of outputs at a time, four independent FMA chains.
  for (; i + 4 * kW <= n; i += 4 * kW) {
    typename V::Vec a0 = V::load(y + i), a1 = V::load(y + i + kW), a2 = V::load(y + i + 2 * kW),
                    a3 = V::load(y + i + 3 * kW);
    for (int64_t j = 0; j < count; ++j) {
      const typename V::Vec wj = V::broadcast(w + j);
      const uint8_t* vj = v + j * stride;
      a0 = V::fma(wj, E::load(vj, i), a0);
      a1 = V::fma(wj, E::load(vj, i + kW), a1);
      a2 = V::fma(wj, E::load(vj, i + 2 * kW), a2);
      a3 = V::fma(wj, E::load(vj, i + 3 * kW), a3);
    }
    V::store(y + i, a0);
    V::store(y + i + kW, a1);
    V::store(y + i + 2 * kW, a2);
    V::store(y + i + 3 * kW, a3);
  }
  for (; i + V::kWidth <= n; i += V::kWidth) {
    typename V::Vec acc = V::load(y + i);
    for (int64_t j = 0; j < count; ++j)
      acc = V::fma(V::broadcast(w + j), E::load(v + j * stride, i), acc);
    V::store(y + i, acc);
  }
  if (i < n) {
    const int64_t left = n - i;
    typename V::Vec acc = V::load_first(y + i, left);
    float tail[V::kWidth];
    for (int64_t j = 0; j < count; ++j) {
      for (int64_t r = 0; r < left; ++r) tail[r] = E::at(v + j * stride, i + r);
      acc = V::fma(V::broadcast(w + j), V::load_first(tail, left), acc);
    }
    V::store_first(y + i, acc, left);
  }
}

// NQ rows' axpy_rows over the same stored value vectors at once, each row with its own
// weights and output: y[q] += sum_j w[q][j] * v_j, each stored vector loaded and widened
// once for all NQ. Every output element is its own FMA chain over j, in j order, so each
// row gets exactly kv_axpy_rows' bits whichever rows share the call. n is a multiple of
// 4 * kWidth. Serves both kv_axpy_rows_multi (rows a stride apart) and axpy_rows_gathered
// (rows anywhere).
template <class V, class E, int NQ>
void axpy_rows_group(const float* const* w, float* const* y, const uint8_t* v, int64_t stride,
                     int64_t count, int64_t n) {
  constexpr int kW = V::kWidth;
  for (int64_t i = 0; i < n; i += 4 * kW) {
    typename V::Vec acc[NQ][4];
    for (int q = 0; q < NQ; ++q)
      for (int c = 0; c < 4; ++c) acc[q][c] = V::load(y[q] + i + c * kW);
    for (int64_t j = 0; j < count; ++j) {
      typename V::Vec x[4];
      for (int c = 0; c < 4; ++c) x[c] = E::load(v + j * stride, i + c * kW);
      for (int q = 0; q < NQ; ++q) {
        const typename V::Vec wq = V::broadcast(w[q] + j);
        for (int c = 0; c < 4; ++c) acc[q][c] = V::fma(wq, x[c], acc[q][c]);
      }
    }
    for (int q = 0; q < NQ; ++q)
      for (int c = 0; c < 4; ++c) V::store(y[q] + i + c * kW, acc[q][c]);
  }
}

// axpy_rows_group for NQ queries whose weights and outputs lie w_stride and y_stride apart.
template <class V, class E, int NQ>
void kv_axpy_rows_group(const float* w, int64_t w_stride, const uint8_t* v, int64_t stride,
                        int64_t count, int64_t n, float* y, int64_t y_stride) {
  const float* ws[NQ];
  float* ys[NQ];
  for (int q = 0; q < NQ; ++q) {
    ws[q] = w + q * w_stride;
    ys[q] = y + q * y_stride;
  }
  axpy_rows_group<V, E, NQ>(ws, ys, v, stride, count, n);
}

// n_q queries: in groups whose accumulators and widened values fit the registers (3 with
// 32 zmm, 2 with 16 ymm); a length the groups do not cover goes query by query.
template <class V, class E, KvAxpyRows Single>
void kv_axpy_rows_multi(const float* w, int64_t w_stride, int n_q, const uint8_t* v, int64_t stride,
                        int64_t count, int64_t n, float* y, int64_t y_stride) {
  constexpr int kGroup = V::kWidth == 16 ? 3 : 2;
  if (n % (4 * V::kWidth) != 0) {
    for (int q = 0; q < n_q; ++q) Single(w + q * w_stride, v, stride, count, n, y + q * y_stride);
    return;
  }
  int q = 0;
  for (; q + kGroup <= n_q; q += kGroup)
    kv_axpy_rows_group<V, E, kGroup>(w + q * w_stride, w_stride, v, stride, count, n,
                                     y + q * y_stride, y_stride);
  if (n_q - q == 2)
    kv_axpy_rows_group<V, E, 2>(w + q * w_stride, w_stride, v, stride, count, n, y + q * y_stride,
                                y_stride);
  if (n_q - q == 1)
    kv_axpy_rows_group<V, E, 1>(w + q * w_stride, w_stride, v, stride, count, n, y + q * y_stride,
                                y_stride);
}

// kernels.h's axpy_rows_gathered: rows in groups whose accumulators and value vectors fit
// the registers (6 with 32 zmm: 24 sums and 4 values; 2 with 16 ymm), the rest fewer at a
// time; a length the groups do not cover goes row by row through axpy_rows.
template <class V, int NQ = V::kWidth == 16 ? 6 : 2>
void axpy_rows_gathered(const float* const* w, float* const* y, int n_rows, const float* v,
                        int64_t v_stride, int64_t count, int64_t n) {
  if (n % (4 * V::kWidth) != 0) {
    for (int q = 0; q < n_rows; ++q) axpy_rows<V>(w[q], v, v_stride, count, n, y[q]);
    return;
  }
  int q = 0;
  for (; q + NQ <= n_rows; q += NQ)
    axpy_rows_group<V, F32Elements<V>, NQ>(w + q, y + q, reinterpret_cast<const uint8_t*>(v),
                                           v_stride * 4, count, n);
  if constexpr (NQ > 1) {
    if (q < n_rows) axpy_rows_gathered<V, NQ - 1>(w + q, y + q, n_rows - q, v, v_stride, count, n);
  }
}

// The dot form where an ISA has no grouped kernel: query by query.
template <KvDotRows Single>
void kv_dot_rows_each(const float* q, int64_t q_stride, int n_q, const uint8_t* k, int64_t stride,
                      int64_t count, int64_t n, float* out, int64_t out_stride) {
  for (int i = 0; i < n_q; ++i) Single(q + i * q_stride, k, stride, count, n, out + i * out_stride);
}

// F32 KV goes through the float kernels, so F32 attention is what it always was.
template <class V, DotRows F32DotRows>
void kv_dot_rows_f32(const float* q, const uint8_t* k, int64_t stride, int64_t count, int64_t n,
                     float* out) {
  F32DotRows(q, reinterpret_cast<const float*>(k), stride / 4, count, n, out);
}
template <class V>
void kv_axpy_rows_f32(const float* w, const uint8_t* v, int64_t stride, int64_t count, int64_t n,
                      float* y) {
  axpy_rows<V>(w, reinterpret_cast<const float*>(v), stride / 4, count, n, y);
}

// The KV dot table: F32 through the ISA's dot_rows, the others through kv_dot_rows<E>
// unless the ISA gives its own (KvDot<E>).
struct KvDotTable {
  KvDotRows rows[kKvElementCount];
  KvDotRowsMulti multi[kKvElementCount];
};
template <class V, DotRows F32DotRows>
constexpr KvDotTable generic_kv_dot() {
  return {{&kv_dot_rows_f32<V, F32DotRows>, &kv_dot_rows<V, F16Elements<V>>,
           &kv_dot_rows<V, Bf16Elements<V>>, &kv_dot_rows<V, Q8Elements<V>>},
          {&kv_dot_rows_each<&kv_dot_rows_f32<V, F32DotRows>>,
           &kv_dot_rows_each<&kv_dot_rows<V, F16Elements<V>>>,
           &kv_dot_rows_each<&kv_dot_rows<V, Bf16Elements<V>>>,
           &kv_dot_rows_each<&kv_dot_rows<V, Q8Elements<V>>>}};
}

using ToBf16Pairs = void (*)(const float* x, int64_t n_rows, int64_t n_in, uint32_t* out);

// The table an ISA file exports: the shared loops over its micro-kernel, BF16 weights
// through Bf16Tile, and the kernels it writes itself.
template <class V, class Bf16Tile = Bf16WidenTile<V>>
constexpr IsaKernels make_kernels(DotRows dot_rows, KvDotTable kv_dot,
                                  ToBf16Pairs to_bf16_pairs = nullptr) {
  IsaKernels k{{&panel_loop<F32Tile<V>>, &panel_loop<F16Tile<V>>, &panel_loop<Bf16Tile>},
               to_bf16_pairs,
               &dot<V>,
               &axpy<V>,
               &silu_mul<V>,
               &scaled_exp_sums<V>,
               dot_rows,
               &axpy_rows<V>,
               {kv_dot.rows[0], kv_dot.rows[1], kv_dot.rows[2], kv_dot.rows[3]},
               {&kv_axpy_rows_f32<V>, &kv_axpy_rows<V, F16Elements<V>>,
                &kv_axpy_rows<V, Bf16Elements<V>>, &kv_axpy_rows<V, Q8Elements<V>>},
               {kv_dot.multi[0], kv_dot.multi[1], kv_dot.multi[2], kv_dot.multi[3]},
               {&kv_axpy_rows_multi<V, F32Elements<V>, &kv_axpy_rows_f32<V>>,
                &kv_axpy_rows_multi<V, F16Elements<V>, &kv_axpy_rows<V, F16Elements<V>>>,
                &kv_axpy_rows_multi<V, Bf16Elements<V>, &kv_axpy_rows<V, Bf16Elements<V>>>,
                &kv_axpy_rows_multi<V, Q8Elements<V>, &kv_axpy_rows<V, Q8Elements<V>>>},
               &narrow<V, false>,
               &narrow<V, true>};
  k.axpy_rows_gathered = &axpy_rows_gathered<V>;
  return k;
}

}  // namespace
}  // namespace tandem::kernels::detail
