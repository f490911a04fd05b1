// AVX2+FMA+F16C kernels: the floor every supported CPU has. Same packed layout and
// the same per-output accumulation order as the AVX-512 kernels (one FMA per k, in
// order), over a quarter panel (16 outputs, two ymm) at a time to fit 16 registers.
// No standard-library templates here, for the reason given in kernels_avx512.cpp.
#include <immintrin.h>

#include "runner/kernels/isa.h"

namespace tandem::kernels::detail {
namespace {

constexpr int kVecs = 2;              // ymm vectors per tile column (16 outputs)
constexpr int kQuarter = kVecs * 8;   // outputs per tile
constexpr int kPrefetchAhead = 1024;  // bytes ahead in the quarter's strided stream

inline void prefetch(const void* p) { _mm_prefetch(static_cast<const char*>(p), _MM_HINT_T0); }

inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

template <int R>
inline void zero(__m256 (&acc)[R][kVecs]) {
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm256_setzero_ps();
}

template <int R>
inline void fma_rows(__m256 (&acc)[R][kVecs], const __m256 (&w)[kVecs], const float* x,
                     int64_t ldx) {
  for (int r = 0; r < R; ++r) {
    const __m256 xr = _mm256_broadcast_ss(x + r * ldx);
    for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm256_fmadd_ps(xr, w[v], acc[r][v]);
  }
}

template <int R>
inline void store(const __m256 (&acc)[R][kVecs], float* y, int64_t ldy, int64_t n_valid) {
  for (int r = 0; r < R; ++r) {
    if (n_valid >= kQuarter) {
      for (int v = 0; v < kVecs; ++v) _mm256_storeu_ps(y + r * ldy + v * 8, acc[r][v]);
    } else {
      alignas(32) float tmp[kQuarter];
      for (int v = 0; v < kVecs; ++v) _mm256_store_ps(tmp + v * 8, acc[r][v]);
      for (int64_t i = 0; i < n_valid; ++i) y[r * ldy + i] = tmp[i];
    }
  }
}

// Each tile type computes R rows x one panel, a quarter panel at a time.
struct F32Tile {
  static constexpr int kMaxRows = 6;
  template <int R>
  static void run(const MatmulArgs& a, const uint8_t* panel, int64_t row0, int64_t col0) {
    const float* x = a.x + row0 * a.n_in;
    for (int quarter = 0; quarter < kPanel / kQuarter && col0 + quarter * kQuarter < a.n_out;
         ++quarter) {
      const float* p = reinterpret_cast<const float*>(panel) + quarter * kQuarter;
      __m256 acc[R][kVecs];
      zero<R>(acc);
      for (int64_t k = 0; k < a.n_in; ++k) {
        const float* wk = p + k * kPanel;
        prefetch(reinterpret_cast<const char*>(wk) + kPrefetchAhead);
        const __m256 w[kVecs] = {_mm256_loadu_ps(wk), _mm256_loadu_ps(wk + 8)};
        fma_rows<R>(acc, w, x + k, a.n_in);
      }
      const int64_t c = col0 + quarter * kQuarter;
      store<R>(acc, a.y + row0 * a.n_out + c, a.n_out, min64(kQuarter, a.n_out - c));
    }
  }
};

struct F16Tile {
  static constexpr int kMaxRows = 6;
  template <int R>
  static void run(const MatmulArgs& a, const uint8_t* panel, int64_t row0, int64_t col0) {
    const float* x = a.x + row0 * a.n_in;
    for (int quarter = 0; quarter < kPanel / kQuarter && col0 + quarter * kQuarter < a.n_out;
         ++quarter) {
      const uint16_t* p = reinterpret_cast<const uint16_t*>(panel) + quarter * kQuarter;
      __m256 acc[R][kVecs];
      zero<R>(acc);
      for (int64_t k = 0; k < a.n_in; ++k) {
        const uint16_t* wk = p + k * kPanel;
        prefetch(reinterpret_cast<const char*>(wk) + kPrefetchAhead);
        const __m256 w[kVecs] = {
            _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wk))),
            _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wk + 8)))};
        fma_rows<R>(acc, w, x + k, a.n_in);
      }
      const int64_t c = col0 + quarter * kQuarter;
      store<R>(acc, a.y + row0 * a.n_out + c, a.n_out, min64(kQuarter, a.n_out - c));
    }
  }
};

// BF16 pairs widened to F32: even k = low half shifted up, odd k = high half in place.
struct Bf16WidenTile {
  static constexpr int kMaxRows = 5;
  template <int R>
  static void run(const MatmulArgs& a, const uint8_t* panel, int64_t row0, int64_t col0) {
    const float* x = a.x + row0 * a.n_in;
    const __m256i high_half = _mm256_set1_epi32(static_cast<int>(0xffff0000u));
    const int64_t n_pairs = (a.n_in + 1) / 2;
    for (int quarter = 0; quarter < kPanel / kQuarter && col0 + quarter * kQuarter < a.n_out;
         ++quarter) {
      const uint32_t* p = reinterpret_cast<const uint32_t*>(panel) + quarter * kQuarter;
      __m256 acc[R][kVecs];
      zero<R>(acc);
      for (int64_t kp = 0; kp < n_pairs; ++kp) {
        const uint32_t* wk = p + kp * kPanel;
        prefetch(reinterpret_cast<const char*>(wk) + kPrefetchAhead);
        const __m256i raw[kVecs] = {_mm256_loadu_si256(reinterpret_cast<const __m256i*>(wk)),
                                    _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wk + 8))};
        const __m256 even[kVecs] = {_mm256_castsi256_ps(_mm256_slli_epi32(raw[0], 16)),
                                    _mm256_castsi256_ps(_mm256_slli_epi32(raw[1], 16))};
        fma_rows<R>(acc, even, x + 2 * kp, a.n_in);
        if (2 * kp + 1 == a.n_in) break;
        const __m256 odd[kVecs] = {_mm256_castsi256_ps(_mm256_and_si256(raw[0], high_half)),
                                   _mm256_castsi256_ps(_mm256_and_si256(raw[1], high_half))};
        fma_rows<R>(acc, odd, x + 2 * kp + 1, a.n_in);
      }
      const int64_t c = col0 + quarter * kQuarter;
      store<R>(acc, a.y + row0 * a.n_out + c, a.n_out, min64(kQuarter, a.n_out - c));
    }
  }
};

struct Q8_0Tile {
  static constexpr int kMaxRows = 5;
  static constexpr int kBlockBytes = kPanel * 4 + 32 * kPanel;
  template <int R>
  static void run(const MatmulArgs& a, const uint8_t* panel, int64_t row0, int64_t col0) {
    const float* x = a.x + row0 * a.n_in;
    const int64_t n_blocks = a.n_in / 32;
    for (int quarter = 0; quarter < kPanel / kQuarter && col0 + quarter * kQuarter < a.n_out;
         ++quarter) {
      __m256 acc[R][kVecs];
      zero<R>(acc);
      for (int64_t b = 0; b < n_blocks; ++b) {
        const uint8_t* block = panel + b * kBlockBytes;
        const float* scales = reinterpret_cast<const float*>(block) + quarter * kQuarter;
        const int8_t* q = reinterpret_cast<const int8_t*>(block + kPanel * 4) + quarter * kQuarter;
        const __m256 s[kVecs] = {_mm256_loadu_ps(scales), _mm256_loadu_ps(scales + 8)};
        for (int j = 0; j < 32; ++j) {
          const int8_t* qj = q + j * kPanel;
          prefetch(qj + kPrefetchAhead);
          __m256 w[kVecs];
          for (int v = 0; v < kVecs; ++v) {
            const __m128i q8 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(qj + v * 8));
            w[v] = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q8)), s[v]);
          }
          fma_rows<R>(acc, w, x + b * 32 + j, a.n_in);
        }
      }
      const int64_t c = col0 + quarter * kQuarter;
      store<R>(acc, a.y + row0 * a.n_out + c, a.n_out, min64(kQuarter, a.n_out - c));
    }
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

template <class Tile>
void panel_loop(const MatmulArgs& a, int64_t panel_begin, int64_t panel_end) {
  for (int64_t p = panel_begin; p < panel_end; ++p) {
    const uint8_t* panel = a.panels + p * a.panel_bytes;
    for (int64_t row0 = 0; row0 < a.n_rows; row0 += Tile::kMaxRows) {
      run_rows<Tile>(min64(Tile::kMaxRows, a.n_rows - row0), a, panel, row0, p * kPanel);
    }
  }
}

float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

float dot(const float* a, const float* b, int64_t n) {
  __m256 acc0 = _mm256_setzero_ps();
  __m256 acc1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), acc1);
  }
  if (i + 8 <= n) {
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
    i += 8;
  }
  float sum = hsum(_mm256_add_ps(acc0, acc1));
  for (; i < n; ++i) sum = __builtin_fmaf(a[i], b[i], sum);
  return sum;
}

void axpy(float alpha, const float* x, float* y, int64_t n) {
  const __m256 va = _mm256_set1_ps(alpha);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
  }
  for (; i < n; ++i) y[i] = __builtin_fmaf(alpha, x[i], y[i]);
}

// e^x for x in about [-87, 88] (inputs are clamped there): Cephes' expf, a degree-5
// polynomial on x - n ln2, scaled by 2^n built in the exponent bits.
__m256 exp_ps(__m256 x) {
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.0f)), _mm256_set1_ps(88.0f));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  const __m256i scale =
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(scale));
}

// out = silu(gate) * up. The tail is copied through a padded buffer so every element
// takes the same vector path.
void silu_mul(const float* gate, const float* up, float* out, int64_t n) {
  const __m256 one = _mm256_set1_ps(1.0f);
  auto block = [&](__m256 g, __m256 u) {
    const __m256 sig =
        _mm256_div_ps(one, _mm256_add_ps(one, exp_ps(_mm256_sub_ps(_mm256_setzero_ps(), g))));
    return _mm256_mul_ps(_mm256_mul_ps(g, sig), u);
  };
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i, block(_mm256_loadu_ps(gate + i), _mm256_loadu_ps(up + i)));
  if (i < n) {
    alignas(32) float g[8] = {}, u[8] = {}, o[8];
    for (int64_t j = i; j < n; ++j) g[j - i] = gate[j], u[j - i] = up[j];
    _mm256_store_ps(o, block(_mm256_load_ps(g), _mm256_load_ps(u)));
    for (int64_t j = i; j < n; ++j) out[j] = o[j - i];
  }
}

// out[j] = dot(q, k + j * stride) for j < count: one call per KV block in attention.
void dot_rows(const float* q, const float* k, int64_t stride, int64_t count, int64_t n,
              float* out) {
  for (int64_t j = 0; j < count; ++j) out[j] = dot(q, k + j * stride, n);
}

// y += sum_j w[j] * v[j * stride], accumulated in j order, 8 outputs at a time in a register.
void axpy_rows(const float* w, const float* v, int64_t stride, int64_t count, int64_t n, float* y) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 acc = _mm256_loadu_ps(y + i);
    for (int64_t j = 0; j < count; ++j)
      acc = _mm256_fmadd_ps(_mm256_set1_ps(w[j]), _mm256_loadu_ps(v + j * stride + i), acc);
    _mm256_storeu_ps(y + i, acc);
  }
  for (; i < n; ++i)
    for (int64_t j = 0; j < count; ++j) y[i] = __builtin_fmaf(w[j], v[j * stride + i], y[i]);
}

constexpr IsaKernels kAvx2 = {
    {&panel_loop<F32Tile>, &panel_loop<F16Tile>, &panel_loop<Bf16WidenTile>, &panel_loop<Q8_0Tile>},
    nullptr,
    &dot,
    &axpy,
    &silu_mul,
    &dot_rows,
    &axpy_rows,
};

}  // namespace

const IsaKernels& avx2_kernels() { return kAvx2; }

}  // namespace tandem::kernels::detail
