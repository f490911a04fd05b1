// ggml's reference activation quantizers, operation for operation (compiled without FMA
// contraction, see runner/CMakeLists.txt): one portable code path for every ISA, so the
// quantized activations cannot differ between them.
#include "runner/kernels/quantize_q8.h"

#include <cmath>
#include <cstring>

#include "runner/util/float16.h"

namespace tandem::kernels::detail {
namespace {

float f16_round(float v) { return float_from_half(half_from_float(v)); }

// ggml's nearest_int: round half to even through the float mantissa (|v| < 2^22).
int nearest_int(float v) {
  const float shifted = v + 12582912.f;
  int32_t bits;
  std::memcpy(&bits, &shifted, sizeof(bits));
  return (bits & 0x007fffff) - 0x00400000;
}

// quantize_row_q8_0_ref / q8_1_ref for one block of 32: d = amax / 127, q = roundf(x / d).
void q8_legacy_block(const float* x, int8_t* q, float* d_out, float* s_out, int32_t* qsum) {
  float amax = 0.f;
  for (int j = 0; j < 32; ++j) amax = std::fmax(amax, std::fabs(x[j]));
  const float d = amax / 127.f;
  const float id = d != 0.f ? 1.f / d : 0.f;
  int sum = 0;
  for (int j = 0; j < 32; ++j) {
    q[j] = static_cast<int8_t>(std::roundf(x[j] * id));
    sum += q[j];
  }
  *d_out = f16_round(d);
  *qsum = sum;
  if (s_out != nullptr) *s_out = f16_round(static_cast<float>(sum) * d);
}

// quantize_row_q8_K_ref for one block of 256: the value of largest magnitude maps to -127.
void q8_k_block(const float* x, int8_t* q, float* d_out, int32_t* bsums) {
  float max = 0.f, amax = 0.f;
  for (int j = 0; j < 256; ++j) {
    const float ax = std::fabs(x[j]);
    if (ax > amax) {
      amax = ax;
      max = x[j];
    }
  }
  if (amax == 0.f) {
    std::memset(q, 0, 256);
    std::memset(bsums, 0, 16 * sizeof(int32_t));
    *d_out = 0.f;
    return;
  }
  const float iscale = -127.f / max;
  for (int j = 0; j < 256; ++j) {
    const int v = nearest_int(iscale * x[j]);
    q[j] = static_cast<int8_t>(v < 127 ? v : 127);
  }
  for (int g = 0; g < 16; ++g) {
    int32_t sum = 0;
    for (int j = 0; j < 16; ++j) sum += q[g * 16 + j];
    bsums[g] = sum;
  }
  *d_out = 1.f / iscale;
}

}  // namespace

void quantize_rows(ActFormat format, const float* x, int64_t n_rows, int64_t n_in,
                   QuantizedActivations& out) {
  prepare_rows(format, n_rows, n_in, out);
  quantize_blocks(format, x, 0, n_rows * (n_in / act_block(format)), out);
}

void prepare_rows(ActFormat format, int64_t n_rows, int64_t n_in, QuantizedActivations& out) {
  const int block = act_block(format);
  const int64_t n_blocks = n_in / block;
  const size_t values = static_cast<size_t>(n_rows * n_in);
  if (out.q.size() < values) out.q.resize(values);
  if (out.d.size() < static_cast<size_t>(n_rows * n_blocks)) out.d.resize(n_rows * n_blocks);
  if (format == ActFormat::kQ8_1 && out.s.size() < static_cast<size_t>(n_rows * n_blocks)) {
    out.s.resize(n_rows * n_blocks);
  }
  if (format == ActFormat::kQ8_K && out.bsums.size() < values / 16) out.bsums.resize(values / 16);
  if (format != ActFormat::kQ8_K && out.qsum.size() < static_cast<size_t>(n_rows * n_blocks)) {
    out.qsum.resize(n_rows * n_blocks);
  }
  out.view = {format,
              n_in,
              out.q.data(),
              out.d.data(),
              format == ActFormat::kQ8_1 ? out.s.data() : nullptr,
              format == ActFormat::kQ8_K ? out.bsums.data() : nullptr,
              format != ActFormat::kQ8_K ? out.qsum.data() : nullptr};
}

void quantize_blocks(ActFormat format, const float* x, int64_t begin, int64_t end,
                     QuantizedActivations& out) {
  const int block = act_block(format);
  for (int64_t b = begin; b < end; ++b) {
    const float* xb = x + b * block;
    int8_t* qb = out.q.data() + b * block;
    if (format == ActFormat::kQ8_K) {
      q8_k_block(xb, qb, &out.d[b], &out.bsums[b * 16]);
    } else {
      q8_legacy_block(xb, qb, &out.d[b], format == ActFormat::kQ8_1 ? &out.s[b] : nullptr,
                      &out.qsum[b]);
    }
  }
}

}  // namespace tandem::kernels::detail
