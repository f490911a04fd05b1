// AVX2+FMA+F16C kernels: the floor every supported CPU has. The loops are the shared ones
// (runner/kernels/tile_loop.h, vector_loops.h) over this file's micro-kernel; a matmul
// tile is a quarter panel (16 outputs, two ymm) so that R rows of accumulators fit the
// 16 registers. No standard-library templates here, for the reason given in tile_loop.h.
#include <immintrin.h>

#include "runner/kernels/key_dots.h"
#include "runner/kernels/tile_loop.h"
#include "runner/kernels/vector_loops.h"

namespace tandem::kernels::detail {
namespace {

// The micro-kernel: the members tile_loop.h and vector_loops.h list, in this ISA.
struct Avx2 {
  using Vec = __m256;
  static constexpr int kWidth = 8;
  static constexpr int kVecs = 2;
  // A quarter panel's stream takes one line in every four, 1024 bytes ahead only 4 steps of
  // k: too few to cover memory's latency at batch 1 (Zen 3, BM_DecodeStep BF16 M:1 34 -> 28
  // ms with 4096, 5 interleaved rounds; 8192 no better).
  static constexpr int kPrefetchAhead = 4096;
  static constexpr int kPrefetchAheadL2 = 4096;  // not measured apart on an AVX2-only Intel
  static constexpr int kTilePrefetchAhead = 4096;
  // Batches go over a panel in k-chunks of this many bytes (tile_loop.h, chunked_panels).
  static constexpr int64_t kChunkBytes = 16384;
  static constexpr int64_t kWidenChunk = 0;  // tiles widen their own weights (tile_loop.h)

  static Vec broadcast(const float* x) { return _mm256_broadcast_ss(x); }
  static Vec fma(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }
  static Vec load(const float* w) { return _mm256_loadu_ps(w); }
  static void store(float* y, Vec v) { _mm256_storeu_ps(y, v); }
  // Tails go through a padded buffer, so that they take the same vector instructions.
  static Vec load_first(const float* x, int64_t n) {
    alignas(32) float tmp[kWidth] = {};
    for (int64_t i = 0; i < n; ++i) tmp[i] = x[i];
    return _mm256_load_ps(tmp);
  }
  static void store_first(float* y, Vec v, int64_t n) {
    alignas(32) float tmp[kWidth];
    _mm256_store_ps(tmp, v);
    for (int64_t i = 0; i < n; ++i) y[i] = tmp[i];
  }

  static Vec load(const uint16_t* w) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w)));
  }
  static Vec load_bf16(const uint16_t* x) {
    const __m256i wide =
        _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
  }
  static Vec load_q8(const int8_t* q, Vec scale) {
    const __m128i q8 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(q));
    return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q8)), scale);
  }
  // kWidth floats narrowed to F16 (vcvtps2ph, ties to even) or BF16 (ties to even in
  // integer steps, a NaN kept quiet), as runner/util/float16.h rounds them.
  static void store_half(uint16_t* out, Vec v) {
    const __m128i h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out), h);
  }
  static void store_bfloat(uint16_t* out, Vec v) {
    const __m256i bits = _mm256_castps_si256(v), high = _mm256_srli_epi32(bits, 16);
    const __m256i odd = _mm256_and_si256(high, _mm256_set1_epi32(1));
    const __m256i bias = _mm256_add_epi32(odd, _mm256_set1_epi32(0x7fff));
    __m256i r = _mm256_srli_epi32(_mm256_add_epi32(bits, bias), 16);
    const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    r = _mm256_blendv_epi8(r, _mm256_or_si256(high, _mm256_set1_epi32(0x40)), nan);
    const __m128i packed =
        _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out), packed);
  }

  // 2^n built in the exponent bits (n stays in the normal range after exp_ps's clamp).
  static Vec scale_pow2(Vec v, Vec n) {
    const __m256i bits =
        _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(v, _mm256_castsi256_ps(bits));
  }
  static Vec clamp(Vec v, Vec lo, Vec hi) { return _mm256_min_ps(_mm256_max_ps(v, lo), hi); }
  static Vec fnma(Vec a, Vec b, Vec c) { return _mm256_fnmadd_ps(a, b, c); }
  static Vec round(Vec v) {
    return _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  }
  // The lanes summed pairwise down to one, then the last products one scalar FMA each.
  static float finish_dot(Vec acc0, Vec acc1, const float* a, const float* b, int64_t n) {
    const Vec v = acc0 + acc1;
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    float sum = _mm_cvtss_f32(s);
    for (int64_t i = 0; i < n; ++i) sum = __builtin_fmaf(a[i], b[i], sum);
    return sum;
  }
  static float reduce_max(Vec v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    return _mm_cvtss_f32(_mm_max_ss(m, _mm_movehdup_ps(m)));
  }
};

// out[j] = dot(q, k + j * stride) for j < count: one call per KV block in attention.
void dot_rows(const float* q, const float* k, int64_t stride, int64_t count, int64_t n,
              float* out) {
  for (int64_t j = 0; j < count; ++j) out[j] = dot<Avx2>(q, k + j * stride, n);
}

constexpr IsaKernels kAvx2 =
    with_key_dots<Avx2>(make_kernels<Avx2>(&dot_rows, generic_kv_dot<Avx2, &dot_rows>()));

}  // namespace

const IsaKernels& avx2_kernels() { return kAvx2; }

}  // namespace tandem::kernels::detail
