// AVX-512 steps of the quantized matmul's vector form (runner/kernels/quant_vector.h), on
// 256-bit vectors: the dot of 32 unsigned quants with 32 activations by one VNNI vpdpbusd,
// and bits spread to bytes by a masked broadcast; batches laid out across rows take the
// 512-bit lane form (quant_lanes.h). Compiled with -mavx512vnni and called only
// where the CPU has it (kernels.cpp).
#include <immintrin.h>

#include "runner/kernels/quant_interleaved_k.h"
#include "runner/kernels/quant_lanes.h"
#include "runner/kernels/quant_vector.h"

namespace tandem::kernels::detail {
namespace {

struct VnniSteps {
  static constexpr bool kWide = true;  // quant_vector.h may take 512-bit steps
  static constexpr int64_t kStreamRows = kVnniStreamRows;
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

// One span of the decoded rows against every activation row: 32 rows per tile, then 16.
struct VnniLaneTiles {
  // Only IQ4's signed weights need the wbias (dot4's q + 128 correction).
  template <class T>
  static constexpr bool kWbias = T::kSigned;
  static constexpr bool kScalePairs = false;
  template <class T, int kCount>
  TANDEM_QUANT_INLINE static void run(const LaneSpan& w, const ActRows& x, int64_t span,
                                      float* acc) {
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
  if (a.interleaved) return interleaved_wide_loop<VnniSteps>(a, out_begin, out_end);
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
