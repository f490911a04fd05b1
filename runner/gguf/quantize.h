// tandem's own quantizer: F32 rows to every block type of runner/gguf/quant.h, so tests and
// `tandem quantize` / `make-model --dtype` can write quantized models. It follows the ideas
// of ggml's reference quantizers (the ones llama-quantize runs without an importance
// matrix), so its error is no worse than theirs; the bytes need not match. Pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "runner/gguf/gguf.h"

namespace tandem::gguf {

// How the block scales are chosen.
enum class ScaleSearch {
  // The default: for the K-quants an iterative least-squares search per sub-block (and its
  // min), for IQ4_NL/IQ4_XS a search over candidate scales. Legacy types are always
  // round-to-nearest with ggml's max-magnitude (or min/max) scale.
  kSearch,
  // Plain round-to-nearest from each sub-block's extreme values: the baseline the tests
  // hold the search against.
  kRoundToNearest,
};

// Writes n values of x as `type` into out (tensor_bytes(type, n) bytes; any alignment).
// Every TensorType is accepted (F32/F16/BF16 are plain conversions). Throws
// std::invalid_argument when n is not a whole number of blocks, x holds a NaN or an Inf, or
// (block types, whose scales are F16) a magnitude above 65504.
void quantize_row(TensorType type, const float* x, int64_t n, void* out,
                  ScaleSearch search = ScaleSearch::kSearch);

// The same into a new buffer.
std::vector<uint8_t> quantize(TensorType type, std::span<const float> x,
                              ScaleSearch search = ScaleSearch::kSearch);

}  // namespace tandem::gguf
