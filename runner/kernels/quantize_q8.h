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
  const int8_t* q = nullptr;
  const float* d = nullptr;        // per block: the scale (value = d * q)
  const float* s = nullptr;        // Q8_1: per block of 32, d * sum(q) rounded to F16
  const int32_t* bsums = nullptr;  // Q8_K: per 16 values, sum(q)
  const int32_t* qsum = nullptr;   // Q8_0/Q8_1: per block of 32, sum(q) (exact)
};

// Owns the storage of quantized rows (reused between calls: no allocation once grown).
struct QuantizedActivations {
  std::vector<int8_t> q;
  std::vector<float> d, s;
  std::vector<int32_t> bsums, qsum;
  ActRows view;
};

// Quantizes n_rows rows of n_in floats (n_in a whole number of act_block(format)).
void quantize_rows(ActFormat format, const float* x, int64_t n_rows, int64_t n_in,
                   QuantizedActivations& out);
// The same in two parts, so that threads can share the work: prepare_rows sizes the
// storage and sets the view; quantize_blocks then quantizes blocks [begin, end) of the
// n_rows * n_in / act_block(format) blocks of x, each independent of the others.
void prepare_rows(ActFormat format, int64_t n_rows, int64_t n_in, QuantizedActivations& out);
void quantize_blocks(ActFormat format, const float* x, int64_t begin, int64_t end,
                     QuantizedActivations& out);

}  // namespace tandem::kernels::detail
