// AVX-512 kernels: this file's micro-kernel for the shared loops (runner/kernels/
// tile_loop.h, vector_loops.h), plus what only AVX-512 has here: the AVX512-BF16 k loop
// for BF16 weights and a four-rows-at-once dot_rows. Compiled with AVX-512 flags and only
// called after the run-time check in kernels.cpp, so this file uses no standard-library
// templates: an inline instantiation emitted here could be picked by the linker for
// baseline code and fault on an older CPU.
#include <immintrin.h>

#include "runner/kernels/key_dots.h"
#include "runner/kernels/tile_loop.h"
#include "runner/kernels/vector_loops.h"

namespace tandem::kernels::detail {
namespace {

// The micro-kernel: the members tile_loop.h and vector_loops.h list, in this ISA.
struct Avx512 {
  using Vec = __m512;
  static constexpr int kWidth = 16;
  static constexpr int kVecs = kPanel / 16;  // a matmul tile is a whole panel, four zmm
  static constexpr int kPrefetchAhead = 2048;
  // Into L2 (the Sapphire Rapids class Xeon), a one-row pass's 2048 bytes came too late:
  // `bench_forward` `BM_DecodeStep/f16/batch:1` 8.13-8.22 -> 6.90-7.18 ms with 8192 (3
  // alternating rounds of two binaries), `tandem generate` on an F16 smollm2 0.84-0.85 ->
  // 1.08-1.23 of the memory floor (4096: 0.98-1.11; 16384 level with 8192).
  static constexpr int kPrefetchAheadL2 = 8192;
  // A 6-row BF16 tile's pass spends about 12 cycles of vdpbf16ps on each 256 bytes of its
  // panel, so 2048 bytes ahead asked for a line only ~100 cycles before its use, under
  // memory's latency (perf: most of an 8-row step's matmul samples on the weight loads).
  // 4096 (Zen 5, alternating rounds): `bench_forward` `BM_DecodeStep/bf16/batch:8` median
  // 6.20 -> 5.89 ms over 5 rounds (its matmuls 5.20 -> 4.89), batch 32 level (13.4, 13.1);
  // `bench_choices --only n` 0.806 -> 0.778 s (3 rounds); `bench_matmul` M:16 7.87 -> 7.39.
  static constexpr int kTilePrefetchAhead = 4096;
  // A tile here is a whole panel, streamed in order: no k-chunks (tile_loop.h).
  static constexpr int64_t kChunkBytes = 0;
  // k per chunk where a batch's F16 weights are widened once for all its row tiles
  // (tile_loop.h, widened_panels): 128 x 64 F32 weights, 32 KiB of L1. 64 was 4% slower at
  // 32 rows (`BM_DecodeStep<kF16>` 33.5 against 32.1 ms, 4 alternating rounds).
  static constexpr int64_t kWidenChunk = 128;

  static Vec broadcast(const float* x) { return _mm512_set1_ps(*x); }
  static Vec fma(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }
  static Vec load(const float* w) { return _mm512_loadu_ps(w); }
  static void store(float* y, Vec v) { _mm512_storeu_ps(y, v); }
  static __mmask16 first(int64_t n) { return static_cast<__mmask16>((1u << n) - 1); }
  static Vec load_first(const float* x, int64_t n) { return _mm512_maskz_loadu_ps(first(n), x); }
  static void store_first(float* y, Vec v, int64_t n) { _mm512_mask_storeu_ps(y, first(n), v); }

  static Vec load(const uint16_t* w) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w)));
  }
  static Vec load_bf16(const uint16_t* x) {
    const __m512i wide =
        _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(wide, 16));
  }
  static Vec load_q8(const int8_t* q, Vec scale) {
    const __m128i q8 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
    return _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q8)), scale);
  }
  // kWidth floats narrowed to F16 (vcvtps2ph, ties to even) or BF16 (ties to even in
  // integer steps, a NaN kept quiet), as runner/util/float16.h rounds them.
  static void store_half(uint16_t* out, Vec v) {
    const __m256i h = _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), h);
  }
  static void store_bfloat(uint16_t* out, Vec v) {
    const __m512i bits = _mm512_castps_si512(v), high = _mm512_srli_epi32(bits, 16);
    const __m512i odd = _mm512_and_si512(high, _mm512_set1_epi32(1));
    const __m512i bias = _mm512_add_epi32(odd, _mm512_set1_epi32(0x7fff));
    __m512i r = _mm512_srli_epi32(_mm512_add_epi32(bits, bias), 16);
    const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    r = _mm512_mask_mov_epi32(r, nan, _mm512_or_si512(high, _mm512_set1_epi32(0x40)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), _mm512_cvtepi32_epi16(r));
  }

  static Vec scale_pow2(Vec v, Vec n) { return _mm512_scalef_ps(v, n); }
  static Vec clamp(Vec v, Vec lo, Vec hi) { return _mm512_min_ps(_mm512_max_ps(v, lo), hi); }
  static Vec fnma(Vec a, Vec b, Vec c) { return _mm512_fnmadd_ps(a, b, c); }
  static Vec round(Vec v) {
    return _mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  }
  // The last products into acc1 under a mask, then one reduction of both.
  static float finish_dot(Vec acc0, Vec acc1, const float* a, const float* b, int64_t n) {
    if (n > 0) acc1 = fma(load_first(a, n), load_first(b, n), acc1);
    return _mm512_reduce_add_ps(acc0 + acc1);
  }
  static float reduce_max(Vec v) { return _mm512_reduce_max_ps(v); }
  // Up to sixteen rows' sums of their first n <= 16 lanes, each in index order: the rows
  // transposed in registers (rows past `rows` as zeros, never read), so that lane h of
  // column j is row h's element j, and the columns added in order. Each lane runs the
  // scalar chain ((x0 + x1) + x2) + ..., and the zeros past n add nothing to a sum of e^x
  // (never -0), so the bits are the row-by-row sums'; a shared fold's rows, and a decode
  // task's nine, spent more on those scalar chains than on their e^x.
  static void row_sums16(const float* x, int64_t stride, int rows, int64_t n, float* sums) {
    Vec r[16];
    for (int h = 0; h < 16; ++h) r[h] = h < rows ? load_first(x + h * stride, n) : Vec{};
    transpose16(r);
    Vec s = r[0];
    for (int j = 1; j < 16; ++j) s = s + r[j];
    store_first(sums, s, rows);
  }
  // r[i] lane j = M[i][j] in; r[j] lane i = M[i][j] out.
  static void transpose16(Vec r[16]) {
    auto lo64 = [](Vec a, Vec b) {
      return _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(a), _mm512_castps_pd(b)));
    };
    auto hi64 = [](Vec a, Vec b) {
      return _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(a), _mm512_castps_pd(b)));
    };
    Vec t[16];
    for (int i = 0; i < 8; ++i) {
      t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
      t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 4; ++i) {  // r[4i + m]: rows 4i .. 4i + 3 at column 4L + m, lane L
      r[4 * i] = lo64(t[4 * i], t[4 * i + 2]);
      r[4 * i + 1] = hi64(t[4 * i], t[4 * i + 2]);
      r[4 * i + 2] = lo64(t[4 * i + 1], t[4 * i + 3]);
      r[4 * i + 3] = hi64(t[4 * i + 1], t[4 * i + 3]);
    }
    for (int i = 0; i < 2; ++i) {
      for (int m = 0; m < 4; ++m) {
        t[8 * i + m] = _mm512_shuffle_f32x4(r[8 * i + m], r[8 * i + 4 + m], 0x88);
        t[8 * i + 4 + m] = _mm512_shuffle_f32x4(r[8 * i + m], r[8 * i + 4 + m], 0xdd);
      }
    }
    for (int m = 0; m < 8; ++m) {
      r[m] = _mm512_shuffle_f32x4(t[m], t[8 + m], 0x88);
      r[8 + m] = _mm512_shuffle_f32x4(t[m], t[8 + m], 0xdd);
    }
  }
};

// BF16 weights times BF16-rounded activations with vdpbf16ps: each lane adds
// x[2k]*w[2k] + x[2k+1]*w[2k+1] to its F32 accumulator, pair after pair. Only this ISA
// has it, so its k loop lives here; the tiling around it is the shared one.
struct Bf16DotTile : TileShape<Avx512, 6> {
  static int64_t units(const MatmulArgs& a) { return (a.n_in + 1) / 2; }
  static constexpr int64_t kUnitBytes = kPanel * 4;
  static constexpr int64_t kStepsPerUnit = 1;
  template <int R>
  [[gnu::always_inline]] static void k_loop(Acc<Avx512, R>& acc, const MatmulArgs& a,
                                            const uint8_t* panel, int64_t row0, int col, int64_t u0,
                                            int64_t u1, const FarPrefetch& far) {
    const int64_t n_pairs = padded_pairs(a.n_in);
    const uint32_t* x = a.x_pairs + row0 * n_pairs + u0;
    auto pair = [&](int64_t kp, const uint32_t* wk) TANDEM_STEP_INLINE {
      constexpr int kVecs = kTileVecs<Avx512, R>;
      __m512bh w[kVecs];
      for (int v = 0; v < kVecs; ++v) w[v] = (__m512bh)_mm512_loadu_si512(wk + v * 16);
      for (int r = 0; r < R; ++r) {
        const __m512bh xr = (__m512bh)_mm512_set1_epi32(static_cast<int>(x[r * n_pairs + kp]));
        for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], xr, w[v]);
      }
    };
    stream<Avx512, uint32_t, R>(panel + u0 * kUnitBytes, col, u1 - u0, far, pair);
  }
};

void to_bf16_pairs(const float* x, int64_t n_rows, int64_t n_in, uint32_t* out) {
  const int64_t stride = padded_pairs(n_in);
  for (int64_t m = 0; m < n_rows; ++m) {
    const float* xr = x + m * n_in;
    uint32_t* o = out + m * stride;
    for (int64_t p = (n_in + 1) / 2; p < stride; ++p) o[p] = 0;
    int64_t i = 0;
    for (; i + 32 <= n_in; i += 32) {
      const __m512bh h = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(xr + i + 16), _mm512_loadu_ps(xr + i));
      _mm512_storeu_si512(o + i / 2, (__m512i)h);
    }
    if (i < n_in) {
      const int64_t left = n_in - i;
      const int64_t lo_n = left < 16 ? left : 16;
      const int64_t hi_n = left - lo_n;
      const __m512 lo = Avx512::load_first(xr + i, lo_n);
      const __m512 hi = Avx512::load_first(xr + i + 16, hi_n);
      const __m512bh h = _mm512_cvtne2ps_pbh(hi, lo);
      _mm512_mask_storeu_epi32(o + i / 2, Avx512::first((left + 1) / 2), (__m512i)h);
    }
  }
}

// The four keys' sums of products, each accumulated in its own 16 lanes, reduced together
// by a transpose: pairs of keys interleaved and added (a0+a2, b0+b2, a1+a3, b1+b3 in each
// 128-bit lane), the two halves of that added, then the four 128-bit lanes folded. Half
// the shuffles of four separate reductions, and every key's sum takes the same additions
// whichever of the four places it has, so a key's score does not depend on its group.
[[gnu::always_inline]] inline __m128 reduce4(__m512 a, __m512 b, __m512 c, __m512 d) {
  const __m512 ab = _mm512_add_ps(_mm512_unpacklo_ps(a, b), _mm512_unpackhi_ps(a, b));
  const __m512 cd = _mm512_add_ps(_mm512_unpacklo_ps(c, d), _mm512_unpackhi_ps(c, d));
  const __m512 s = _mm512_add_ps(_mm512_shuffle_ps(ab, cd, _MM_SHUFFLE(1, 0, 1, 0)),
                                 _mm512_shuffle_ps(ab, cd, _MM_SHUFFLE(3, 2, 3, 2)));
  const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(s), _mm512_extractf32x8_ps(s, 1));
  return _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
}

// out[a * out_stride + j] = dot(q_a, k_j) for NQ queries q_a = q + a * q_stride and keys
// j < count, k_j the stored vector j * stride bytes after k (any element type E,
// vector_loops.h); n a multiple of 16. Keys go four at a time, each loaded and widened
// once for all NQ queries; each (query, key) sum is its own FMA chain over i in order,
// then reduce4, so every query gets the same bits alone as in a group.
template <class E, int NQ>
void dot_rows_group(const float* q, int64_t q_stride, const uint8_t* k, int64_t stride,
                    int64_t count, int64_t n, float* out, int64_t out_stride) {
  for (int64_t j = 0; j < count; j += 4) {
    const int64_t keys = count - j < 4 ? count - j : 4;
    __m512 acc[NQ][4];
    for (int a = 0; a < NQ; ++a)
      for (int r = 0; r < 4; ++r) acc[a][r] = _mm512_setzero_ps();
    // A missing key (past count) reads as zero; its sums are never stored.
    auto add_products = [&](bool all_keys) TANDEM_STEP_INLINE {  // inlined: a constant
      for (int64_t i = 0; i < n; i += 16) {
        __m512 kr[4];
        for (int r = 0; r < 4; ++r)
          kr[r] = all_keys || r < keys ? E::load(k + (j + r) * stride, i) : _mm512_setzero_ps();
        for (int a = 0; a < NQ; ++a) {
          const __m512 qi = _mm512_loadu_ps(q + a * q_stride + i);
          for (int r = 0; r < 4; ++r) acc[a][r] = _mm512_fmadd_ps(qi, kr[r], acc[a][r]);
        }
      }
    };
    if (keys == 4) {
      add_products(true);
    } else {
      add_products(false);
    }
    for (int a = 0; a < NQ; ++a) {
      const __m128 sums = reduce4(acc[a][0], acc[a][1], acc[a][2], acc[a][3]);
      if (keys == 4) {
        _mm_storeu_ps(out + a * out_stride + j, sums);
      } else {
        alignas(16) float tmp[4];
        _mm_store_ps(tmp, sums);
        for (int64_t r = 0; r < keys; ++r) out[a * out_stride + j + r] = tmp[r];
      }
    }
  }
}

// One query: the grouped kernel's form where it applies (one call per KV block in
// attention), one dot per key otherwise.
template <class E>
void dot_rows_of(const float* q, const uint8_t* k, int64_t stride, int64_t count, int64_t n,
                 float* out) {
  if (n % 16 != 0 || n > 256) {
    for (int64_t j = 0; j < count; ++j) out[j] = dot_elements<Avx512, E>(q, k + j * stride, n);
    return;
  }
  dot_rows_group<E, 1>(q, 0, k, stride, count, n, out, 0);
}

template <class E>
void dot_rows_multi_of(const float* q, int64_t q_stride, int n_q, const uint8_t* k, int64_t stride,
                       int64_t count, int64_t n, float* out, int64_t out_stride) {
  if (n % 16 != 0 || n > 256) {
    return kv_dot_rows_each<&dot_rows_of<E>>(q, q_stride, n_q, k, stride, count, n, out,
                                             out_stride);
  }
  int a = 0;
  for (; a + 4 <= n_q; a += 4)
    dot_rows_group<E, 4>(q + a * q_stride, q_stride, k, stride, count, n, out + a * out_stride,
                         out_stride);
  switch (n_q - a) {
    case 3:
      return dot_rows_group<E, 3>(q + a * q_stride, q_stride, k, stride, count, n,
                                  out + a * out_stride, out_stride);
    case 2:
      return dot_rows_group<E, 2>(q + a * q_stride, q_stride, k, stride, count, n,
                                  out + a * out_stride, out_stride);
    case 1:
      return dot_rows_group<E, 1>(q + a * q_stride, q_stride, k, stride, count, n,
                                  out + a * out_stride, out_stride);
  }
}

void dot_rows(const float* q, const float* k, int64_t stride, int64_t count, int64_t n,
              float* out) {
  dot_rows_of<F32Elements<Avx512>>(q, reinterpret_cast<const uint8_t*>(k), stride * 4, count, n,
                                   out);
}

constexpr KvDotTable kKvDot = {
    {&dot_rows_of<F32Elements<Avx512>>, &dot_rows_of<F16Elements<Avx512>>,
     &dot_rows_of<Bf16Elements<Avx512>>, &dot_rows_of<Q8Elements<Avx512>>},
    {&dot_rows_multi_of<F32Elements<Avx512>>, &dot_rows_multi_of<F16Elements<Avx512>>,
     &dot_rows_multi_of<Bf16Elements<Avx512>>, &dot_rows_multi_of<Q8Elements<Avx512>>}};

constexpr IsaKernels kAvx512 = with_key_dots<Avx512>(make_kernels<Avx512>(&dot_rows, kKvDot));
constexpr IsaKernels kAvx512Bf16 =
    with_key_dots<Avx512>(make_kernels<Avx512, Bf16DotTile>(&dot_rows, kKvDot, &to_bf16_pairs));

}  // namespace

const IsaKernels& avx512_kernels() { return kAvx512; }
const IsaKernels& avx512bf16_kernels() { return kAvx512Bf16; }

}  // namespace tandem::kernels::detail
