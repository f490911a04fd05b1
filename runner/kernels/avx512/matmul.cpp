// AVX-512 kernels (and the AVX512-BF16 dot-product path for BF16 weights). Compiled
// with AVX-512 flags and only called after the run-time check in kernels.cpp, so
// this file uses no standard-library templates: an inline instantiation emitted here
// could be picked by the linker for baseline code and fault on an older CPU.
// GCC 12's avx512fintrin.h builds "undefined" vectors as `__m512 __Y = __Y;`, which
// -Wuninitialized flags inside the intrinsics themselves (a known GCC bug).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include "runner/kernels/isa.h"

namespace tandem::kernels::detail {
namespace {

constexpr int kVecs = kPanel / 16;    // zmm vectors per panel row (64 outputs)
constexpr int kPrefetchAhead = 2048;  // bytes ahead of the weight stream

inline void prefetch(const void* p) { _mm_prefetch(static_cast<const char*>(p), _MM_HINT_T0); }

inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

template <int R>
inline void zero(__m512 (&acc)[R][kVecs]) {
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm512_setzero_ps();
}

// acc[r] += x[r * ldx] * w for each of the R rows: one FMA per output lane.
template <int R>
inline void fma_rows(__m512 (&acc)[R][kVecs], const __m512 (&w)[kVecs], const float* x,
                     int64_t ldx) {
  for (int r = 0; r < R; ++r) {
    const __m512 xr = _mm512_set1_ps(x[r * ldx]);
    for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm512_fmadd_ps(xr, w[v], acc[r][v]);
  }
}

template <int R>
inline void store(const __m512 (&acc)[R][kVecs], float* y, int64_t ldy, int64_t n_valid) {
  for (int r = 0; r < R; ++r) {
    for (int v = 0; v < kVecs; ++v) {
      const int64_t left = n_valid - v * 16;
      if (left >= 16) {
        _mm512_storeu_ps(y + r * ldy + v * 16, acc[r][v]);
      } else if (left > 0) {
        _mm512_mask_storeu_ps(y + r * ldy + v * 16, static_cast<__mmask16>((1u << left) - 1),
                              acc[r][v]);
      }
    }
  }
}

// Each tile type computes R rows x one panel. `row0`/`col0` locate the tile.
struct F32Tile {
  static constexpr int kMaxRows = 6;
  template <int R>
  static void run(const MatmulArgs& a, const uint8_t* panel, int64_t row0, int64_t col0) {
    const float* p = reinterpret_cast<const float*>(panel);
    const float* x = a.x + row0 * a.n_in;
    __m512 acc[R][kVecs];
    zero<R>(acc);
    for (int64_t k = 0; k < a.n_in; ++k) {
      const float* wk = p + k * kPanel;
      for (int v = 0; v < kVecs; ++v)
        prefetch(reinterpret_cast<const char*>(wk + v * 16) + kPrefetchAhead);
      __m512 w[kVecs];
      for (int v = 0; v < kVecs; ++v) w[v] = _mm512_loadu_ps(wk + v * 16);
      fma_rows<R>(acc, w, x + k, a.n_in);
    }
    store<R>(acc, a.y + row0 * a.n_out + col0, a.n_out, min64(kPanel, a.n_out - col0));
  }
};

struct F16Tile {
  static constexpr int kMaxRows = 6;
  template <int R>
  static void run(const MatmulArgs& a, const uint8_t* panel, int64_t row0, int64_t col0) {
    const uint16_t* p = reinterpret_cast<const uint16_t*>(panel);
    const float* x = a.x + row0 * a.n_in;
    __m512 acc[R][kVecs];
    zero<R>(acc);
    for (int64_t k = 0; k < a.n_in; ++k) {
      const uint16_t* wk = p + k * kPanel;
      prefetch(reinterpret_cast<const char*>(wk) + kPrefetchAhead);
      prefetch(reinterpret_cast<const char*>(wk) + kPrefetchAhead + 64);
      __m512 w[kVecs];
      for (int v = 0; v < kVecs; ++v) {
        w[v] = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(wk + v * 16)));
      }
      fma_rows<R>(acc, w, x + k, a.n_in);
    }
    store<R>(acc, a.y + row0 * a.n_out + col0, a.n_out, min64(kPanel, a.n_out - col0));
  }
};

// BF16 pairs widened to F32 (a BF16 value is the top half of an F32): the even k of
// each pair is the low 16 bits shifted up, the odd k is the high 16 bits in place.
struct Bf16WidenTile {
  static constexpr int kMaxRows = 5;
  template <int R>
  static void run(const MatmulArgs& a, const uint8_t* panel, int64_t row0, int64_t col0) {
    const uint32_t* p = reinterpret_cast<const uint32_t*>(panel);
    const float* x = a.x + row0 * a.n_in;
    const __m512i high_half = _mm512_set1_epi32(static_cast<int>(0xffff0000u));
    __m512 acc[R][kVecs];
    zero<R>(acc);
    const int64_t n_pairs = (a.n_in + 1) / 2;
    for (int64_t kp = 0; kp < n_pairs; ++kp) {
      const uint32_t* wk = p + kp * kPanel;
      for (int v = 0; v < kVecs; ++v)
        prefetch(reinterpret_cast<const char*>(wk + v * 16) + kPrefetchAhead);
      __m512 w[kVecs];
      for (int v = 0; v < kVecs; ++v) {
        w[v] = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_loadu_si512(wk + v * 16), 16));
      }
      fma_rows<R>(acc, w, x + 2 * kp, a.n_in);
      if (2 * kp + 1 == a.n_in) break;
      for (int v = 0; v < kVecs; ++v) {
        w[v] = _mm512_castsi512_ps(_mm512_and_si512(_mm512_loadu_si512(wk + v * 16), high_half));
      }
      fma_rows<R>(acc, w, x + 2 * kp + 1, a.n_in);
    }
    store<R>(acc, a.y + row0 * a.n_out + col0, a.n_out, min64(kPanel, a.n_out - col0));
  }
};

// Q8_0: each weight is widened to exactly the F32 value dequantize_row gives
// (scale * q, one rounding) and then used like an F32 weight.
struct Q8_0Tile {
  static constexpr int kMaxRows = 5;
  static constexpr int kBlockBytes = kPanel * 4 + 32 * kPanel;
  template <int R>
  static void run(const MatmulArgs& a, const uint8_t* panel, int64_t row0, int64_t col0) {
    const float* x = a.x + row0 * a.n_in;
    __m512 acc[R][kVecs];
    zero<R>(acc);
    const int64_t n_blocks = a.n_in / 32;
    for (int64_t b = 0; b < n_blocks; ++b) {
      const uint8_t* block = panel + b * kBlockBytes;
      const float* scales = reinterpret_cast<const float*>(block);
      const int8_t* q = reinterpret_cast<const int8_t*>(block + kPanel * 4);
      __m512 s[kVecs];
      for (int v = 0; v < kVecs; ++v) s[v] = _mm512_loadu_ps(scales + v * 16);
      for (int j = 0; j < 32; ++j) {
        const int8_t* qj = q + j * kPanel;
        prefetch(qj + kPrefetchAhead);
        __m512 w[kVecs];
        for (int v = 0; v < kVecs; ++v) {
          const __m128i q8 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qj + v * 16));
          w[v] = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q8)), s[v]);
        }
        fma_rows<R>(acc, w, x + b * 32 + j, a.n_in);
      }
    }
    store<R>(acc, a.y + row0 * a.n_out + col0, a.n_out, min64(kPanel, a.n_out - col0));
  }
};

// BF16 weights times BF16-rounded activations with vdpbf16ps: each lane adds
// x[2k]*w[2k] + x[2k+1]*w[2k+1] to its F32 accumulator, pair after pair.
struct Bf16DotTile {
  static constexpr int kMaxRows = 6;
  template <int R>
  static void run(const MatmulArgs& a, const uint8_t* panel, int64_t row0, int64_t col0) {
    const uint32_t* p = reinterpret_cast<const uint32_t*>(panel);
    const int64_t n_pairs = (a.n_in + 1) / 2;
    const uint32_t* x = a.x_pairs + row0 * n_pairs;
    __m512 acc[R][kVecs];
    zero<R>(acc);
    for (int64_t kp = 0; kp < n_pairs; ++kp) {
      const uint32_t* wk = p + kp * kPanel;
      for (int v = 0; v < kVecs; ++v)
        prefetch(reinterpret_cast<const char*>(wk + v * 16) + kPrefetchAhead);
      __m512bh w[kVecs];
      for (int v = 0; v < kVecs; ++v) w[v] = (__m512bh)_mm512_loadu_si512(wk + v * 16);
      for (int r = 0; r < R; ++r) {
        const __m512bh xr = (__m512bh)_mm512_set1_epi32(static_cast<int>(x[r * n_pairs + kp]));
        for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], xr, w[v]);
      }
    }
    store<R>(acc, a.y + row0 * a.n_out + col0, a.n_out, min64(kPanel, a.n_out - col0));
  }
};

template <class Tile, int R = Tile::kMaxRows>
inline void run_rows(int64_t rows, const MatmulArgs& a, const uint8_t* panel, int64_t row0,
                     int64_t col0) {
  if constexpr (R >= 1) {
    if (rows == R) {
      Tile::template run<R>(a, panel, row0, col0);
    } else {
      run_rows<Tile, R - 1>(rows, a, panel, row0, col0);
    }
  }
}

// Panel by panel; within a panel, rows in tiles of kMaxRows, so the panel is read
// from memory once and then served from cache to the remaining row tiles.
template <class Tile>
void panel_loop(const MatmulArgs& a, int64_t panel_begin, int64_t panel_end) {
  for (int64_t p = panel_begin; p < panel_end; ++p) {
    const uint8_t* panel = a.panels + p * a.panel_bytes;
    for (int64_t row0 = 0; row0 < a.n_rows; row0 += Tile::kMaxRows) {
      run_rows<Tile>(min64(Tile::kMaxRows, a.n_rows - row0), a, panel, row0, p * kPanel);
    }
  }
}

void to_bf16_pairs(const float* x, int64_t n_rows, int64_t n_in, uint32_t* out) {
  const int64_t n_pairs = (n_in + 1) / 2;
  for (int64_t m = 0; m < n_rows; ++m) {
    const float* xr = x + m * n_in;
    uint32_t* o = out + m * n_pairs;
    int64_t i = 0;
    for (; i + 32 <= n_in; i += 32) {
      const __m512bh h = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(xr + i + 16), _mm512_loadu_ps(xr + i));
      _mm512_storeu_si512(o + i / 2, (__m512i)h);
    }
    if (i < n_in) {
      const int64_t left = n_in - i;
      const int64_t lo_n = min64(left, 16);
      const int64_t hi_n = left - lo_n;
      const __m512 lo = _mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << lo_n) - 1), xr + i);
      const __m512 hi =
          _mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << hi_n) - 1), xr + i + 16);
      const __m512bh h = _mm512_cvtne2ps_pbh(hi, lo);
      const int64_t pairs = (left + 1) / 2;
      _mm512_mask_storeu_epi32(o + i / 2, static_cast<__mmask16>((1u << pairs) - 1), (__m512i)h);
    }
  }
}

float dot(const float* a, const float* b, int64_t n) {
  __m512 acc0 = _mm512_setzero_ps();
  __m512 acc1 = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    acc0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), acc0);
    acc1 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 16), _mm512_loadu_ps(b + i + 16), acc1);
  }
  if (i + 16 <= n) {
    acc0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), acc0);
    i += 16;
  }
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    acc1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i), acc1);
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
}

void axpy(float alpha, const float* x, float* y, int64_t n) {
  const __m512 va = _mm512_set1_ps(alpha);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    _mm512_storeu_ps(y + i, _mm512_fmadd_ps(va, _mm512_loadu_ps(x + i), _mm512_loadu_ps(y + i)));
  }
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    const __m512 r =
        _mm512_fmadd_ps(va, _mm512_maskz_loadu_ps(m, x + i), _mm512_maskz_loadu_ps(m, y + i));
    _mm512_mask_storeu_ps(y + i, m, r);
  }
}

// e^x for x in about [-87, 88] (inputs are clamped there): Cephes' expf, a degree-5
// polynomial on x - n ln2, scaled by 2^n. Within 2 ulp of std::exp.
__m512 exp_ps(__m512 x) {
  x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-87.0f)), _mm512_set1_ps(88.0f));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  return _mm512_scalef_ps(p, n);
}

// out = silu(gate) * up = gate / (1 + e^-gate) * up. The tail goes through the same
// vector code under a mask, so every element takes the same path.
void silu_mul(const float* gate, const float* up, float* out, int64_t n) {
  const __m512 one = _mm512_set1_ps(1.0f);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m =
        n - i >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << (n - i)) - 1);
    const __m512 g = _mm512_maskz_loadu_ps(m, gate + i);
    const __m512 u = _mm512_maskz_loadu_ps(m, up + i);
    const __m512 sig =
        _mm512_div_ps(one, _mm512_add_ps(one, exp_ps(_mm512_sub_ps(_mm512_setzero_ps(), g))));
    _mm512_mask_storeu_ps(out + i, m, _mm512_mul_ps(_mm512_mul_ps(g, sig), u));
  }
}

// out[j] = dot(q, k + j * stride) for j < count: one call per KV block in attention.
// Rows go four at a time: each row's 16 lanes fold to 4 (two adds), then two rounds of
// hadd finish the four sums together, a third of the shuffles of four full reductions.
// A row's sum is the same whichever group of four it falls in.
void dot_rows(const float* q, const float* k, int64_t stride, int64_t count, int64_t n,
              float* out) {
  if (n % 16 != 0 || n > 256) {
    for (int64_t j = 0; j < count; ++j) out[j] = dot(q, k + j * stride, n);
    return;
  }
  auto fold = [&](int64_t j) {
    __m512 acc = _mm512_setzero_ps();
    if (j < count)
      for (int64_t i = 0; i < n; i += 16)
        acc = _mm512_fmadd_ps(_mm512_loadu_ps(q + i), _mm512_loadu_ps(k + j * stride + i), acc);
    const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(acc), _mm512_extractf32x8_ps(acc, 1));
    return _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  };
  for (int64_t j = 0; j < count; j += 4) {
    const __m128 a = fold(j), b = fold(j + 1), c = fold(j + 2), d = fold(j + 3);
    const __m128 sums = _mm_hadd_ps(_mm_hadd_ps(a, b), _mm_hadd_ps(c, d));
    const int64_t left = count - j;
    if (left >= 4) {
      _mm_storeu_ps(out + j, sums);
    } else {
      alignas(16) float tmp[4];
      _mm_store_ps(tmp, sums);
      for (int64_t r = 0; r < left; ++r) out[j + r] = tmp[r];
    }
  }
}

// y += sum_j w[j] * v[j * stride], accumulated in j order, 16 outputs at a time in a register.
void axpy_rows(const float* w, const float* v, int64_t stride, int64_t count, int64_t n, float* y) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m =
        n - i >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << (n - i)) - 1);
    __m512 acc = _mm512_maskz_loadu_ps(m, y + i);
    for (int64_t j = 0; j < count; ++j)
      acc =
          _mm512_fmadd_ps(_mm512_set1_ps(w[j]), _mm512_maskz_loadu_ps(m, v + j * stride + i), acc);
    _mm512_mask_storeu_ps(y + i, m, acc);
  }
}

constexpr IsaKernels kAvx512 = {
    {&panel_loop<F32Tile>, &panel_loop<F16Tile>, &panel_loop<Bf16WidenTile>, &panel_loop<Q8_0Tile>},
    nullptr,
    &dot,
    &axpy,
    &silu_mul,
    &dot_rows,
    &axpy_rows,
};

constexpr IsaKernels kAvx512Bf16 = {
    {&panel_loop<F32Tile>, &panel_loop<F16Tile>, &panel_loop<Bf16DotTile>, &panel_loop<Q8_0Tile>},
    &to_bf16_pairs,
    &dot,
    &axpy,
    &silu_mul,
    &dot_rows,
    &axpy_rows,
};

}  // namespace

const IsaKernels& avx512_kernels() { return kAvx512; }
const IsaKernels& avx512bf16_kernels() { return kAvx512Bf16; }

}  // namespace tandem::kernels::detail
