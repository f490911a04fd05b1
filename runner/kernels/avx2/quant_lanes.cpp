// AVX2's lane form of the quantized matmul (runner/kernels/quant_lanes.h): a batch's
// activation rows across the lanes of 256-bit vectors, eight rows each, and four weight
// quants broadcast to every lane. Without VNNI the four-product step is vpmaddubsw then
// vpmaddwd. vpmaddubsw's first operand is unsigned: the weights, each type's decoded quants
// (at most 63, Q6_K's), against the activations as the signed one (at most 127 in
// magnitude); two steps' int16 pairs are added before the vpmaddwd (2 * 2 * 63 * 127 =
// 32004 cannot saturate). IQ4's table values are signed: |w| against x with w's sign
// (vpsignb), one vpmaddwd per step (a pair reaches 2 * 127 * 127 = 32258).
//
// Against the row form (quant_vector.h), which sums every block's eight int32 lanes per
// pair of rows before scaling, this takes no horizontal step at all: a 32-row Q5_0 matmul
// is mostly vpmaddubsw, vpaddw, vpmaddwd and vpaddd.
#include <immintrin.h>

#include "runner/kernels/avx2/quant_steps.h"
#include "runner/kernels/isa.h"
#include "runner/kernels/quant_lanes.h"
#include "runner/kernels/quant_vector.h"

namespace tandem::kernels::detail {
namespace {

inline __m256i broadcast4(const int8_t* p) {
  int32_t v;
  __builtin_memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

// Eight rows' activations k..k+3, signed bytes.
inline __m256i signed_acts(const uint8_t* p) { return load32(p); }

// g += the four-product sums of weights w0 against activations x0, and w1 against x1,
// each pair of products times `mult` (int16 pairs: ones, or a group's scale twice).
template <class T>
inline __m256i two_steps(__m256i g, __m256i w0, __m256i x0, __m256i w1, __m256i x1, __m256i mult) {
  if constexpr (T::kSigned) {
    const __m256i p0 = _mm256_maddubs_epi16(_mm256_abs_epi8(w0), _mm256_sign_epi8(x0, w0));
    const __m256i p1 = _mm256_maddubs_epi16(_mm256_abs_epi8(w1), _mm256_sign_epi8(x1, w1));
    return _mm256_add_epi32(
        g, _mm256_add_epi32(_mm256_madd_epi16(p0, mult), _mm256_madd_epi16(p1, mult)));
  } else {
    const __m256i pairs =
        _mm256_add_epi16(_mm256_maddubs_epi16(w0, x0), _mm256_maddubs_epi16(w1, x1));
    return _mm256_add_epi32(g, _mm256_madd_epi16(pairs, mult));
  }
}

// acc[r * lanes + lane0 ...] (X vectors of 8 rows) += this span's `kCount` legacy blocks of
// weight row r: per block the exact integer dot in each lane, then finish_legacy's steps.
template <class T, int X, int kCount>
TANDEM_QUANT_INLINE void legacy_tile(const LaneSpan& w, const ActRows& x, int64_t span,
                                     int64_t lane0, float* acc) {
  const int64_t lanes = x.lanes;
  for (int c = 0; c < kCount; ++c) {
    const int64_t block = 8 * span + c, at = block * lanes + lane0;
    __m256i g[kLaneRows][X];
    for (int i = 0; i < X; ++i) {
      __m256i start = _mm256_setzero_si256();
      if constexpr (T::kOffset != 0) {
        start =
            _mm256_mullo_epi32(load32(x.lane_qsum + at + 8 * i), _mm256_set1_epi32(-T::kOffset));
      }
      for (int r = 0; r < kLaneRows; ++r) g[r][i] = start;
    }
    const uint8_t* xq = x.lane_q + (block * 8 * lanes + lane0) * 4;
    for (int s = 0; s < 8; s += 2) {
      __m256i x0[X], x1[X];
      for (int i = 0; i < X; ++i) {
        x0[i] = signed_acts(xq + (s * lanes + 8 * i) * 4);
        x1[i] = signed_acts(xq + ((s + 1) * lanes + 8 * i) * 4);
      }
      for (int r = 0; r < kLaneRows; ++r) {
        const __m256i w0 = broadcast4(w.q[r] + 32 * c + 4 * s);
        const __m256i w1 = broadcast4(w.q[r] + 32 * c + 4 * s + 4);
        for (int i = 0; i < X; ++i)
          g[r][i] = two_steps<T>(g[r][i], w0, x0[i], w1, x1[i], _mm256_set1_epi16(1));
      }
    }
    for (int i = 0; i < X; ++i) {
      const __m256 xd = _mm256_loadu_ps(x.lane_d + at + 8 * i);
      __m256 xs = _mm256_setzero_ps();
      if constexpr (T::kHasMin) xs = _mm256_loadu_ps(x.lane_s + at + 8 * i);
      for (int r = 0; r < kLaneRows; ++r) {
        __m256 t = _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(w.d[r][c]), xd),
                                 _mm256_cvtepi32_ps(g[r][i]));
        if constexpr (T::kHasMin)
          t = _mm256_add_ps(t, _mm256_mul_ps(_mm256_set1_ps(w.dm[r][c]), xs));
        float* a = acc + r * lanes + lane0 + 8 * i;
        _mm256_storeu_ps(a, _mm256_add_ps(_mm256_loadu_ps(a), t));
      }
    }
  }
}

// The same for a super-block: each group's exact dot times the group's scale, summed into
// one int32 per lane as it goes (vpmaddwd against the scale as an int16 pair, (sc, sc),
// instead of against ones: sc * (p + q) is the same integer); the activation sums' terms by
// vpmaddwd; then finish_super's steps.
template <class T, int X>
TANDEM_QUANT_INLINE void super_tile(const LaneSpan& w, const ActRows& x, int64_t span,
                                    int64_t lane0, float* acc) {
  constexpr int kValues = ScaleGroup<T>::kValues;
  const int64_t lanes = x.lanes;
  __m256i isum[kLaneRows][X];
  for (int r = 0; r < kLaneRows; ++r)
    for (int i = 0; i < X; ++i) isum[r][i] = _mm256_setzero_si256();
  const uint8_t* xq = x.lane_q + (span * (kSpan / 4) * lanes + lane0) * 4;
  for (int s = 0; s < kSpan / 4; s += 2) {
    __m256i x0[X], x1[X];
    for (int i = 0; i < X; ++i) {
      x0[i] = signed_acts(xq + (s * lanes + 8 * i) * 4);
      x1[i] = signed_acts(xq + ((s + 1) * lanes + 8 * i) * 4);
    }
    for (int r = 0; r < kLaneRows; ++r) {
      const __m256i w0 = broadcast4(w.q[r] + 4 * s), w1 = broadcast4(w.q[r] + 4 * s + 4);
      const __m256i scale = _mm256_set1_epi32(w.sc_pairs[r][s * 4 / kValues * kValues / 16]);
      for (int i = 0; i < X; ++i)
        isum[r][i] = two_steps<T>(isum[r][i], w0, x0[i], w1, x1[i], scale);
    }
  }
  __m256i summs[kLaneRows][X];  // the mins' terms (zero for types without mins)
  for (int r = 0; r < kLaneRows; ++r)
    for (int i = 0; i < X; ++i) summs[r][i] = _mm256_setzero_si256();
  if constexpr (T::kBias) {
    for (int t = 0; t < 8; ++t) {
      __m256i pairs[X];
      for (int i = 0; i < X; ++i)
        pairs[i] = load32(x.lane_bsum_pairs + ((span * 8 + t) * lanes + lane0 + 8 * i) * 2);
      for (int r = 0; r < kLaneRows; ++r) {
        const __m256i b = _mm256_set1_epi32(w.bias_pairs[r][t]);
        for (int i = 0; i < X; ++i) {
          const __m256i products = _mm256_madd_epi16(pairs[i], b);
          if constexpr (T::kMins) {
            summs[r][i] = _mm256_add_epi32(summs[r][i], products);
          } else {
            isum[r][i] = _mm256_add_epi32(isum[r][i], products);
          }
        }
      }
    }
  }
  for (int i = 0; i < X; ++i) {
    const __m256 xd = _mm256_loadu_ps(x.lane_d + span * lanes + lane0 + 8 * i);
    for (int r = 0; r < kLaneRows; ++r) {
      const __m256 dot = _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(w.d[r][0]), xd),
                                       _mm256_cvtepi32_ps(isum[r][i]));
      const __m256 mins = _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(w.dm[r][0]), xd),
                                        _mm256_cvtepi32_ps(summs[r][i]));
      float* a = acc + r * lanes + lane0 + 8 * i;
      _mm256_storeu_ps(a, _mm256_add_ps(_mm256_loadu_ps(a), _mm256_sub_ps(dot, mins)));
    }
  }
}

// One span of the decoded rows against the activation rows, 16 rows per tile (eight int32
// sums in registers), then 8; the lane layout's padding past the last 8 rows is skipped.
struct Avx2LaneTiles {
  template <class T>
  static constexpr bool kWbias = false;  // the activations are the signed operand
  static constexpr bool kScalePairs = true;
  template <class T, int kCount>
  TANDEM_QUANT_INLINE static void run(const LaneSpan& w, const ActRows& x, int64_t span,
                                      float* acc) {
    const int64_t rows = (x.n_rows + 7) / 8 * 8;
    int64_t lane0 = 0;
    if constexpr (T::kSuper) {
      for (; lane0 + 16 <= rows; lane0 += 16) super_tile<T, 2>(w, x, span, lane0, acc);
      if (lane0 < rows) super_tile<T, 1>(w, x, span, lane0, acc);
    } else {
      for (; lane0 + 16 <= rows; lane0 += 16) legacy_tile<T, 2, kCount>(w, x, span, lane0, acc);
      if (lane0 < rows) legacy_tile<T, 1, kCount>(w, x, span, lane0, acc);
    }
  }
};

void avx2_lanes_loop(const QuantMatmulArgs& a, int64_t out_begin, int64_t out_end) {
  with_vector_type(a.kind, [&]<class T>() {
    quant_lanes_rows<Avx2Steps, T, Avx2LaneTiles>(a, out_begin, out_end);
  });
}

}  // namespace

QuantLoop avx2_lanes_quant_loop() { return &avx2_lanes_loop; }

}  // namespace tandem::kernels::detail
