// Activations quantized per row as ggml quantizes them before its integer dot products:
// Q8_0 (legacy types, IQ4_NL), Q8_1 (Q4_1, Q5_1) and Q8_K (K-quants, IQ4_XS), with the
// arithmetic of ggml's reference quantizers (quantize_row_q8_0_ref, _q8_1_ref, _q8_K_ref),
// so the integers and scales are the ones llama.cpp multiplies. Internal to runner/kernels/
// and its tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tandem::kernels::detail {

enum class ActFormat : uint8_t { kQ8_0, kQ8_1, kQ8_K };

inline constexpr int act_block(ActFormat f) { return f == ActFormat::kQ8_K ? 256 : 32; }

// A view of quantized rows; row m's values are q + m * n_in, its block scales
// d + m * (n_in / block), and so on. Q8_0/Q8_1 scales are F16-rounded, as ggml stores them.
struct ActRows {
  ActFormat format = ActFormat::kQ8_0;
  int64_t n_in = 0;
  int64_t n_rows = 0;
  const int8_t* q = nullptr;
  const float* d = nullptr;        // per block: the scale (value = d * q)
  const float* s = nullptr;        // Q8_1: per block of 32, d * sum(q) rounded to F16
  const int32_t* bsums = nullptr;  // Q8_K: per 16 values, sum(q)
  const int32_t* qsum = nullptr;   // Q8_0/Q8_1: per block of 32, sum(q) (exact)
  // The same rows laid out across rows for the batch kernels (quant_lanes.h) instead,
  // where `lanes` is non-zero (the pointers above are then null): the rows padded to `lanes`
  // (a multiple of 16), one row per 32-bit lane. Row m's values k..k+3 (k a multiple of 4) are the
  // bytes lane_q[(k / 4 * lanes + m) * 4 ...] (int8 q's bytes); a block's per-row values are at
  // [block * lanes + m]: lane_d (d), lane_qsum (Q8_0/Q8_1), lane_s (Q8_1); Q8_K's sums of groups 2t
  // and 2t + 1 are the int16 pair lane_bsum_pairs[((block * 8 + t) * lanes + m) * 2]. Padding rows
  // hold zeros. lane_q is 64-byte aligned: 16 rows' values k..k+3 are one cache line.
  int64_t lanes = 0;
  const uint8_t* lane_q = nullptr;
  const float* lane_d = nullptr;
  const int32_t* lane_qsum = nullptr;
  const float* lane_s = nullptr;
  const int16_t* lane_bsum_pairs = nullptr;
};

// Rows [first, first + count) of a row-major view (one without the lane layout), as a view
// of their own.
inline ActRows row_range(const ActRows& x, int64_t first, int64_t count) {
  const int64_t nb = x.n_in / act_block(x.format);
  ActRows v = x;
  v.n_rows = count;
  v.q = x.q + first * x.n_in;
  v.d = x.d + first * nb;
  if (x.s != nullptr) v.s = x.s + first * nb;
  if (x.qsum != nullptr) v.qsum = x.qsum + first * nb;
  if (x.bsums != nullptr) v.bsums = x.bsums + first * (x.n_in / 16);
  return v;
}

// Owns the storage of quantized rows (reused between calls: no allocation once grown).
struct QuantizedActivations {
  std::vector<int8_t> q;
  std::vector<float> d, s;
  std::vector<int32_t> bsums, qsum;
  std::vector<uint8_t> lane_q_bytes;  // the lane layout (ActRows::lanes), where asked for:
  uint8_t* lane_q = nullptr;          // its values, 64 bytes into lane_q_bytes at most
  std::vector<float> lane_d, lane_s;
  std::vector<int32_t> lane_qsum;
  std::vector<int16_t> lane_bsum_pairs;
  ActRows view;
};

// Quantizes n_rows rows of n_in floats (n_in a whole number of act_block(format)), into
// the row-major arrays, or, where `lanes` is set, into the lane layout: the batch kernels read only
// that, so the row-major q, d, s, bsums and qsum are then neither sized nor written, and the view's
// pointers to them are null (a 32-row step's preparation cost 4x more with them,
// docs/performance.md 2026-11-29).
void quantize_rows(ActFormat format, const float* x, int64_t n_rows, int64_t n_in,
                   QuantizedActivations& out, bool lanes = false);
// The same in two parts, so that threads can share the work: prepare_rows sizes the
// storage and sets the view; quantize_blocks then quantizes units [begin, end) of the
// n_rows * n_in / act_block(format) blocks of x, each independent of the others. Unit u is
// block u in row order, or, where the lane layout is kept, block u / n_rows of row
// u % n_rows: units in order then fill the lane layout a cache line after another, so that
// threads sharing them out write different lines.
void prepare_rows(ActFormat format, int64_t n_rows, int64_t n_in, QuantizedActivations& out,
                  bool lanes = false);
void quantize_blocks(ActFormat format, const float* x, int64_t begin, int64_t end,
                     QuantizedActivations& out);

// One quantized block's scale and sums, as the row-major arrays hold them.
struct BlockScales {
  float d = 0.f;
  float s = 0.f;        // Q8_1
  int32_t qsum = 0;     // Q8_0, Q8_1
  int32_t bsums[16]{};  // Q8_K
};

// Block b of row m's scale and sums into the lane layout (lane m): everything of the block
// there but its values, which each quantizer writes its own way. Inline: the quantizers
// call it once a block.
inline void lane_block_values(ActFormat format, int64_t m, int64_t b, const BlockScales& sc,
                              QuantizedActivations& out) {
  const int64_t lanes = out.view.lanes;
  out.lane_d[b * lanes + m] = sc.d;
  if (format == ActFormat::kQ8_K) {
    for (int t = 0; t < 8; ++t) {
      // |sum of 16 quants| <= 16 * 127: an int16 holds it.
      int16_t* pair = out.lane_bsum_pairs.data() + ((b * 8 + t) * lanes + m) * 2;
      pair[0] = static_cast<int16_t>(sc.bsums[2 * t]);
      pair[1] = static_cast<int16_t>(sc.bsums[2 * t + 1]);
    }
    return;
  }
  out.lane_qsum[b * lanes + m] = sc.qsum;
  if (format == ActFormat::kQ8_1) out.lane_s[b * lanes + m] = sc.s;
}
// Block b of row m, its values q and its scales sc, into the lane layout by scalar code:
// the portable and AVX2 quantizers' copy (the lane forms read it).
void block_to_lanes(ActFormat format, int64_t m, int64_t b, const int8_t* q, const BlockScales& sc,
                    QuantizedActivations& out);

// quantize_blocks' loop, shared by its portable and vector forms, which supply their own
// block quantizers: legacy(x, q, d, s, qsum) as Q8_0/Q8_1 (s null for Q8_0) and k(x, q, d,
// bsums) as Q8_K, and spread(m, b, q, sc), which puts row m's block b (values q, scales
// sc) into the lane layout. With the lane layout each block goes through a scratch block
// and spread alone (quantize_rows); otherwise straight into the row-major arrays. Each
// caller passes functions and a lambda of its own translation unit (internal linkage), so
// every instantiation is that unit's, compiled with its ISA's flags, as tile_loop.h
// requires of shared templates.
template <auto legacy, auto k, class Spread>
inline void quantize_units(ActFormat format, const float* x, int64_t begin, int64_t end,
                           QuantizedActivations& out, Spread&& spread) {
  const ActRows& v = out.view;
  const int block = act_block(format);
  const int64_t n_blocks = v.n_in / block;
  if (v.lanes != 0) {
    alignas(64) int8_t q[256];
    for (int64_t u = begin; u < end; ++u) {
      const int64_t m = u % v.n_rows, b = u / v.n_rows;  // row m's block b (prepare_rows)
      const float* xb = x + (m * n_blocks + b) * block;
      BlockScales sc;
      if (format == ActFormat::kQ8_K) {
        k(xb, q, &sc.d, sc.bsums);
      } else {
        legacy(xb, q, &sc.d, format == ActFormat::kQ8_1 ? &sc.s : nullptr, &sc.qsum);
      }
      spread(m, b, q, sc);
    }
    return;
  }
  for (int64_t b = begin; b < end; ++b) {
    int8_t* q = out.q.data() + b * block;
    if (format == ActFormat::kQ8_K) {
      k(x + b * block, q, &out.d[b], &out.bsums[b * 16]);
    } else {
      legacy(x + b * block, q, &out.d[b], format == ActFormat::kQ8_1 ? &out.s[b] : nullptr,
             &out.qsum[b]);
    }
  }
}

// quantize_blocks' portable form, whatever the ISA: the reference the vector quantizers are
// tested against.
void quantize_blocks_portable(ActFormat format, const float* x, int64_t begin, int64_t end,
                              QuantizedActivations& out);
// quantize_blocks by AVX-512 (avx512/quantize_q8.cpp) and by AVX2 (avx2/quantize_q8.cpp),
// each bit for bit the portable form; quantize_blocks calls the one of the ISA the kernels
// run.
void avx512_quantize_blocks(ActFormat format, const float* x, int64_t begin, int64_t end,
                            QuantizedActivations& out);
void avx2_quantize_blocks(ActFormat format, const float* x, int64_t begin, int64_t end,
                          QuantizedActivations& out);

}  // namespace tandem::kernels::detail
