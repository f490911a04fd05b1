// AVX-512 steps of the quantized matmul's vector form (runner/kernels/quant_vector.h), on
// 256-bit vectors: the dot of 32 unsigned quants with 32 activations by one VNNI vpdpbusd,
// and bits spread to bytes by a masked broadcast; batches laid out across rows take the
// 512-bit lane form (quant_lanes.h). Compiled with -mavx512vnni and called only
// where the CPU has it (kernels.cpp).
#include <immintrin.h>

#include "runner/kernels/quant_lanes.h"
#include "runner/kernels/quant_vector.h"

namespace tandem::kernels::detail {
namespace {

struct VnniSteps {
  static constexpr bool kWide = true;  // quant_vector.h may take 512-bit steps
  static __m256i dot4(__m256i u, __m256i x) {
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, x);
  }
  static __m256i madd_add(__m256i acc, __m256i pairs, __m256i scales) {
    return _mm256_dpwssd_epi32(acc, pairs, scales);
  }
  static __m256i bits_to_bytes(uint32_t bits, char value) {
    return _mm256_maskz_set1_epi8(bits, value);
  }
};

// ---- The lane form's 512-bit tiles (quant_lanes.h) -----------------------------------------

inline __m512i broadcast4(const int8_t* p) {
  int32_t v;
  __builtin_memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

// Sixteen rows' activations k..k+3 (the lane layout's signed bytes), as dot4<T> takes them:
// for signed weights (IQ4) vpdpbusd's unsigned operand, q + 128.
template <class T>
inline __m512i acts(const uint8_t* p) {
  const __m512i x = _mm512_loadu_si512(p);
  return T::kSigned ? _mm512_xor_si512(x, _mm512_set1_epi8(static_cast<char>(0x80))) : x;
}

// acc + the four-product sums of the weights w (broadcast) with the activations x in each
// lane. Unsigned weights (every type's decoded quants, at most 63) are vpdpbusd's unsigned
// operand against the signed activations, exactly; IQ4's signed values are the signed one
// against q + 128, which the tiles correct by the row's wbias (-128 times the quants' sum).
template <class T>
inline __m512i dot4(__m512i acc, __m512i w, __m512i x) {
  return T::kSigned ? _mm512_dpbusd_epi32(acc, x, w) : _mm512_dpbusd_epi32(acc, w, x);
}

// acc[r * lanes + lane0 ...] (X vectors of 16 rows) += this span's `kCount` legacy blocks of
// weight row r: per block the exact integer dot in each lane, then finish_legacy's steps.
template <class T, int X, int kCount>
TANDEM_QUANT_INLINE void legacy_lane_tile(const LaneSpan& w, const ActRows& x, int64_t span,
                                          int64_t lane0, float* acc) {
  const int64_t lanes = x.lanes;
  __m512 f[kLaneRows][X];
  for (int r = 0; r < kLaneRows; ++r)
    for (int i = 0; i < X; ++i) f[r][i] = _mm512_loadu_ps(acc + r * lanes + lane0 + 16 * i);
  for (int c = 0; c < kCount; ++c) {
    const int64_t block = 8 * span + c, at = block * lanes + lane0;
    __m512i g[kLaneRows][X];
    for (int i = 0; i < X; ++i) {
      __m512i start = _mm512_setzero_si512();
      if constexpr (T::kOffset != 0) {
        start = _mm512_mullo_epi32(_mm512_loadu_si512(x.lane_qsum + at + 16 * i),
                                   _mm512_set1_epi32(-T::kOffset));
      }
      for (int r = 0; r < kLaneRows; ++r) {
        g[r][i] = T::kSigned ? _mm512_add_epi32(start, _mm512_set1_epi32(w.wbias[r][c])) : start;
      }
    }
    const uint8_t* xq = x.lane_q + (block * 8 * lanes + lane0) * 4;
    for (int s = 0; s < 8; ++s) {
      __m512i xv[X];
      for (int i = 0; i < X; ++i) xv[i] = acts<T>(xq + (s * lanes + 16 * i) * 4);
      for (int r = 0; r < kLaneRows; ++r) {
        const __m512i wv = broadcast4(w.q[r] + 32 * c + 4 * s);
        for (int i = 0; i < X; ++i) g[r][i] = dot4<T>(g[r][i], wv, xv[i]);
      }
    }
    for (int i = 0; i < X; ++i) {
      const __m512 xd = _mm512_loadu_ps(x.lane_d + at + 16 * i);
      __m512 xs = _mm512_setzero_ps();
      if constexpr (T::kHasMin) xs = _mm512_loadu_ps(x.lane_s + at + 16 * i);
      for (int r = 0; r < kLaneRows; ++r) {
        __m512 t = _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(w.d[r][c]), xd),
                                 _mm512_cvtepi32_ps(g[r][i]));
        if constexpr (T::kHasMin)
          t = _mm512_add_ps(t, _mm512_mul_ps(_mm512_set1_ps(w.dm[r][c]), xs));
        f[r][i] = _mm512_add_ps(f[r][i], t);
      }
    }
  }
  for (int r = 0; r < kLaneRows; ++r)
    for (int i = 0; i < X; ++i) _mm512_storeu_ps(acc + r * lanes + lane0 + 16 * i, f[r][i]);
}

// The same for a super-block: per scale group the exact dot, times the group's scale, into
// one int32 sum per lane; the activation sums' terms by vpdpwssd; then finish_super's steps.
template <class T, int X>
TANDEM_QUANT_INLINE void super_lane_tile(const LaneSpan& w, const ActRows& x, int64_t span,
                                         int64_t lane0, float* acc) {
  constexpr int kValues = ScaleGroup<T>::kValues;
  const int64_t lanes = x.lanes;
  __m512i isum[kLaneRows][X], part[kLaneRows][X];
  for (int r = 0; r < kLaneRows; ++r)
    for (int i = 0; i < X; ++i) isum[r][i] = _mm512_set1_epi32(T::kSigned ? w.wbias[r][0] : 0);
  const uint8_t* xq = x.lane_q + (span * (kSpan / 4) * lanes + lane0) * 4;
  for (int j = 0; j < kSpan / kValues; ++j) {
    for (int r = 0; r < kLaneRows; ++r)
      for (int i = 0; i < X; ++i) part[r][i] = _mm512_setzero_si512();
    for (int s = j * kValues / 4; s < (j + 1) * kValues / 4; ++s) {
      __m512i xv[X];
      for (int i = 0; i < X; ++i) xv[i] = acts<T>(xq + (s * lanes + 16 * i) * 4);
      for (int r = 0; r < kLaneRows; ++r) {
        const __m512i wv = broadcast4(w.q[r] + 4 * s);
        for (int i = 0; i < X; ++i) part[r][i] = dot4<T>(part[r][i], wv, xv[i]);
      }
    }
    for (int r = 0; r < kLaneRows; ++r) {
      const __m512i scale = _mm512_set1_epi32(w.sc[r][j * kValues / 16]);
      for (int i = 0; i < X; ++i)
        isum[r][i] = _mm512_add_epi32(isum[r][i], _mm512_mullo_epi32(part[r][i], scale));
    }
  }
  // part now holds summs (the mins' terms; zero for types without mins).
  for (int r = 0; r < kLaneRows; ++r)
    for (int i = 0; i < X; ++i) part[r][i] = _mm512_setzero_si512();
  if constexpr (T::kBias) {
    for (int t = 0; t < 8; ++t) {
      __m512i pairs[X];
      for (int i = 0; i < X; ++i) {
        pairs[i] =
            _mm512_loadu_si512(x.lane_bsum_pairs + ((span * 8 + t) * lanes + lane0 + 16 * i) * 2);
      }
      for (int r = 0; r < kLaneRows; ++r) {
        const __m512i b = _mm512_set1_epi32(w.bias_pairs[r][t]);
        for (int i = 0; i < X; ++i) {
          if constexpr (T::kMins) {
            part[r][i] = _mm512_dpwssd_epi32(part[r][i], pairs[i], b);
          } else {
            isum[r][i] = _mm512_dpwssd_epi32(isum[r][i], pairs[i], b);
          }
        }
      }
    }
  }
  for (int i = 0; i < X; ++i) {
    const __m512 xd = _mm512_loadu_ps(x.lane_d + span * lanes + lane0 + 16 * i);
    for (int r = 0; r < kLaneRows; ++r) {
      const __m512 dot = _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(w.d[r][0]), xd),
                                       _mm512_cvtepi32_ps(isum[r][i]));
      const __m512 mins = _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(w.dm[r][0]), xd),
                                        _mm512_cvtepi32_ps(part[r][i]));
      float* a = acc + r * lanes + lane0 + 16 * i;
      _mm512_storeu_ps(a, _mm512_add_ps(_mm512_loadu_ps(a), _mm512_sub_ps(dot, mins)));
    }
  }
}

// ---- Folded tiles: 16 / F activation rows against F weight rows per vector ------------------
// A batch of at most 16 / F rows laid out with ActRows::fold == F (each row in F adjacent
// lanes) multiplies F weight rows per vector: lane j takes weight row j % F against
// activation row j / F. One vector then does F times the useful work of the plain tiles
// (whose lanes past the batch are padding), by broadcasting F rows' four bytes (F * 4
// bytes) instead of one row's. Each lane still takes the same integer and float steps, so
// the bits are the plain tiles'.

// kLaneRows decoded rows transposed for those broadcasts: step s's four bytes of rows 0-3
// side by side at q[s], and each per-block (or per-group) number the same way.
struct FoldedSpan {
  alignas(64) int32_t q[kSpan / 4][kLaneRows];
  float d[8][kLaneRows], dm[8][kLaneRows];
  int32_t wbias[8][kLaneRows];
  int32_t sc[16][kLaneRows];
  int32_t bias_pairs[8][kLaneRows];
};

// dst[k][r] = row r's k-th 32-bit value, for 4 rows of 8 values (dst: 8 x 4 values).
inline void transpose_4x8(const void* r0, const void* r1, const void* r2, const void* r3,
                          void* dst) {
  auto load = [](const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); };
  const __m256i a = load(r0), b = load(r1), c = load(r2), d = load(r3);
  const __m256i ab_lo = _mm256_unpacklo_epi32(a, b), ab_hi = _mm256_unpackhi_epi32(a, b);
  const __m256i cd_lo = _mm256_unpacklo_epi32(c, d), cd_hi = _mm256_unpackhi_epi32(c, d);
  const __m256i k04 = _mm256_unpacklo_epi64(ab_lo, cd_lo),
                k15 = _mm256_unpackhi_epi64(ab_lo, cd_lo);
  const __m256i k26 = _mm256_unpacklo_epi64(ab_hi, cd_hi),
                k37 = _mm256_unpackhi_epi64(ab_hi, cd_hi);
  auto* out = static_cast<__m256i*>(dst);
  _mm256_storeu_si256(out, _mm256_permute2x128_si256(k04, k15, 0x20));
  _mm256_storeu_si256(out + 1, _mm256_permute2x128_si256(k26, k37, 0x20));
  _mm256_storeu_si256(out + 2, _mm256_permute2x128_si256(k04, k15, 0x31));
  _mm256_storeu_si256(out + 3, _mm256_permute2x128_si256(k26, k37, 0x31));
}

template <class A>
inline void transpose_rows(const A (&src)[kLaneRows][8], A (&dst)[8][kLaneRows]) {
  transpose_4x8(src[0], src[1], src[2], src[3], dst);
}

// What the folded tiles read of a span's kCount blocks (8 for a super-block).
template <class T, int kCount>
TANDEM_QUANT_INLINE void fold_span(const LaneSpan& w, FoldedSpan& f) {
  for (int c = 0; c < kCount; ++c) {
    transpose_4x8(w.q[0] + 32 * c, w.q[1] + 32 * c, w.q[2] + 32 * c, w.q[3] + 32 * c, f.q[8 * c]);
  }
  if constexpr (T::kSuper) {
    for (int r = 0; r < kLaneRows; ++r) {
      f.d[0][r] = w.d[r][0];
      f.dm[0][r] = w.dm[r][0];
      f.wbias[0][r] = w.wbias[r][0];
    }
    transpose_4x8(w.sc[0], w.sc[1], w.sc[2], w.sc[3], f.sc[0]);
    transpose_4x8(w.sc[0] + 8, w.sc[1] + 8, w.sc[2] + 8, w.sc[3] + 8, f.sc[8]);
    if constexpr (T::kBias) transpose_rows(w.bias_pairs, f.bias_pairs);
  } else {
    transpose_rows(w.d, f.d);
    if constexpr (T::kHasMin) transpose_rows(w.dm, f.dm);
    if constexpr (T::kSigned) transpose_rows(w.wbias, f.wbias);
  }
}

// The F side-by-side 32-bit values at p in every F lanes.
template <int F>
inline __m512i pattern(const int32_t* p) {
  static_assert(F == 2, "the fold kernels.cpp makes");
  int64_t v;
  __builtin_memcpy(&v, p, 8);
  return _mm512_set1_epi64(v);
}
template <int F>
inline __m512 pattern(const float* p) {
  return _mm512_castsi512_ps(pattern<F>(reinterpret_cast<const int32_t*>(p)));
}

// legacy_lane_tile's steps for one folded vector per F weight rows (16 lanes: the batch is
// at most 16 / F rows). acc + 16 * v: vector v's sums.
template <class T, int F, int kCount>
TANDEM_QUANT_INLINE void legacy_folded_tile(const FoldedSpan& w, const ActRows& x, int64_t span,
                                            float* acc) {
  constexpr int kVectors = kLaneRows / F;
  __m512 f[kVectors];
  for (int v = 0; v < kVectors; ++v) f[v] = _mm512_loadu_ps(acc + 16 * v);
  for (int c = 0; c < kCount; ++c) {
    const int64_t block = 8 * span + c, at = block * 16;
    __m512i start = _mm512_setzero_si512();
    if constexpr (T::kOffset != 0) {
      start =
          _mm512_mullo_epi32(_mm512_loadu_si512(x.lane_qsum + at), _mm512_set1_epi32(-T::kOffset));
    }
    // Two sums a vector (even and odd steps; integer adds, so any order gives the same
    // sum): a folded tile has only 1 or 2 vectors, too few chains to hide vpdpbusd's latency.
    __m512i g[kVectors], h[kVectors];
    for (int v = 0; v < kVectors; ++v) {
      g[v] = T::kSigned ? _mm512_add_epi32(start, pattern<F>(w.wbias[c] + v * F)) : start;
      h[v] = _mm512_setzero_si512();
    }
    const uint8_t* xq = x.lane_q + block * 8 * 16 * 4;
    for (int s = 0; s < 8; s += 2) {
      const __m512i x0 = acts<T>(xq + s * 64), x1 = acts<T>(xq + (s + 1) * 64);
      for (int v = 0; v < kVectors; ++v) {
        g[v] = dot4<T>(g[v], pattern<F>(w.q[8 * c + s] + v * F), x0);
        h[v] = dot4<T>(h[v], pattern<F>(w.q[8 * c + s + 1] + v * F), x1);
      }
    }
    for (int v = 0; v < kVectors; ++v) g[v] = _mm512_add_epi32(g[v], h[v]);
    const __m512 xd = _mm512_loadu_ps(x.lane_d + at);
    __m512 xs = _mm512_setzero_ps();
    if constexpr (T::kHasMin) xs = _mm512_loadu_ps(x.lane_s + at);
    for (int v = 0; v < kVectors; ++v) {
      __m512 t =
          _mm512_mul_ps(_mm512_mul_ps(pattern<F>(w.d[c] + v * F), xd), _mm512_cvtepi32_ps(g[v]));
      if constexpr (T::kHasMin)
        t = _mm512_add_ps(t, _mm512_mul_ps(pattern<F>(w.dm[c] + v * F), xs));
      f[v] = _mm512_add_ps(f[v], t);
    }
  }
  for (int v = 0; v < kVectors; ++v) _mm512_storeu_ps(acc + 16 * v, f[v]);
}

// super_lane_tile's steps, folded the same way.
template <class T, int F>
TANDEM_QUANT_INLINE void super_folded_tile(const FoldedSpan& w, const ActRows& x, int64_t span,
                                           float* acc) {
  constexpr int kValues = ScaleGroup<T>::kValues, kVectors = kLaneRows / F;
  __m512i isum[kVectors], part[kVectors];
  for (int v = 0; v < kVectors; ++v)
    isum[v] = T::kSigned ? pattern<F>(w.wbias[0] + v * F) : _mm512_setzero_si512();
  const uint8_t* xq = x.lane_q + span * (kSpan / 4) * 16 * 4;
  for (int j = 0; j < kSpan / kValues; ++j) {
    __m512i odd[kVectors];  // two sums a vector, as in legacy_folded_tile
    for (int v = 0; v < kVectors; ++v) part[v] = odd[v] = _mm512_setzero_si512();
    for (int s = j * kValues / 4; s < (j + 1) * kValues / 4; s += 2) {
      const __m512i x0 = acts<T>(xq + s * 64), x1 = acts<T>(xq + (s + 1) * 64);
      for (int v = 0; v < kVectors; ++v) {
        part[v] = dot4<T>(part[v], pattern<F>(w.q[s] + v * F), x0);
        odd[v] = dot4<T>(odd[v], pattern<F>(w.q[s + 1] + v * F), x1);
      }
    }
    for (int v = 0; v < kVectors; ++v) part[v] = _mm512_add_epi32(part[v], odd[v]);
    for (int v = 0; v < kVectors; ++v) {
      const __m512i scale = pattern<F>(w.sc[j * kValues / 16] + v * F);
      isum[v] = _mm512_add_epi32(isum[v], _mm512_mullo_epi32(part[v], scale));
    }
  }
  for (int v = 0; v < kVectors; ++v) part[v] = _mm512_setzero_si512();  // now the mins' terms
  if constexpr (T::kBias) {
    for (int t = 0; t < 8; ++t) {
      const __m512i pairs = _mm512_loadu_si512(x.lane_bsum_pairs + (span * 8 + t) * 16 * 2);
      for (int v = 0; v < kVectors; ++v) {
        const __m512i b = pattern<F>(w.bias_pairs[t] + v * F);
        if constexpr (T::kMins) {
          part[v] = _mm512_dpwssd_epi32(part[v], pairs, b);
        } else {
          isum[v] = _mm512_dpwssd_epi32(isum[v], pairs, b);
        }
      }
    }
  }
  const __m512 xd = _mm512_loadu_ps(x.lane_d + span * 16);
  for (int v = 0; v < kVectors; ++v) {
    const __m512 dot =
        _mm512_mul_ps(_mm512_mul_ps(pattern<F>(w.d[0] + v * F), xd), _mm512_cvtepi32_ps(isum[v]));
    const __m512 mins =
        _mm512_mul_ps(_mm512_mul_ps(pattern<F>(w.dm[0] + v * F), xd), _mm512_cvtepi32_ps(part[v]));
    float* a = acc + 16 * v;
    _mm512_storeu_ps(a, _mm512_add_ps(_mm512_loadu_ps(a), _mm512_sub_ps(dot, mins)));
  }
}

template <class T, int kCount>
TANDEM_QUANT_INLINE void folded_tiles(const LaneSpan& w, const ActRows& x, int64_t span,
                                      float* acc) {
  FoldedSpan f;
  fold_span<T, kCount>(w, f);
  if constexpr (T::kSuper) {
    super_folded_tile<T, 2>(f, x, span, acc);
  } else {
    legacy_folded_tile<T, 2, kCount>(f, x, span, acc);
  }
}

// One span of the decoded rows against every activation row: 32 rows per tile, then 16;
// folded batches (ActRows::fold 2) by the folded tiles.
struct VnniLaneTiles {
  // Only IQ4's signed weights need the wbias (dot4's q + 128 correction).
  template <class T>
  static constexpr bool kWbias = T::kSigned;
  static constexpr bool kScalePairs = false;
  template <class T, int kCount>
  TANDEM_QUANT_INLINE static void run(const LaneSpan& w, const ActRows& x, int64_t span,
                                      float* acc) {
    if (x.fold > 1) return folded_tiles<T, kCount>(w, x, span, acc);
    int64_t lane0 = 0;
    for (; lane0 + 32 <= x.lanes; lane0 += 32) {
      if constexpr (T::kSuper) {
        super_lane_tile<T, 2>(w, x, span, lane0, acc);
      } else {
        legacy_lane_tile<T, 2, kCount>(w, x, span, lane0, acc);
      }
    }
    if (lane0 < x.lanes) {
      if constexpr (T::kSuper) {
        super_lane_tile<T, 1>(w, x, span, lane0, acc);
      } else {
        legacy_lane_tile<T, 1, kCount>(w, x, span, lane0, acc);
      }
    }
  }
};

// Batches whose activations come laid out across rows take the lane form (quant_lanes.h).
void vnni_loop(const QuantMatmulArgs& a, int64_t out_begin, int64_t out_end) {
  if (a.x.lanes != 0) {
    return with_vector_type(a.kind, [&]<class T>() {
      quant_lanes_rows<VnniSteps, T, VnniLaneTiles>(a, out_begin, out_end);
    });
  }
  quant_vector_loop<VnniSteps>(a, out_begin, out_end);
}

}  // namespace

QuantLoop avx512vnni_quant_loop() { return &vnni_loop; }

}  // namespace tandem::kernels::detail
