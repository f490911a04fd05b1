// ggml's reference activation quantizers, operation for operation (compiled without FMA
// contraction, see runner/CMakeLists.txt): one portable code path for every ISA, so the
// quantized activations cannot differ between them.
#include "runner/kernels/quantize_q8.h"

#include <cmath>
#include <cstdint>
#include <cstring>

#include "runner/kernels/kernels.h"
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

// roundf (half away from zero) inline: libm's is a call per value on the baseline ISA.
// Then the conversion as ggml's `(int8_t) roundf(x)` does it on x86 (cvttss2si, whose
// low byte is kept): a NaN (from an infinite activation) or a value out of int's range
// (an infinite x * id, where a block's largest magnitude is so small that 1 / d
// overflows) is INT_MIN, so 0; values from 2^23 up are whole already.
int round_half_away(float v) {
  if (!(v == v) || !(std::fabs(v) < 2147483648.f)) return INT32_MIN;
  if (!(std::fabs(v) < 8388608.f)) return static_cast<int>(v);
  const int t = static_cast<int>(v);
  const float frac = v - static_cast<float>(t);  // exact: |v| < 2^23
  return frac >= 0.5f ? t + 1 : frac <= -0.5f ? t - 1 : t;
}

// quantize_row_q8_0_ref / q8_1_ref for one block of 32: d = amax / 127, q = roundf(x / d).
void q8_legacy_block(const float* x, int8_t* q, float* d_out, float* s_out, int32_t* qsum) {
  float amax = 0.f;
  for (int j = 0; j < 32; ++j) {
    const float a = std::fabs(x[j]);
    amax = a > amax ? a : amax;  // fmax(amax, a): amax is never NaN, and a NaN a is skipped
  }
  const float d = amax / 127.f;
  const float id = d != 0.f ? 1.f / d : 0.f;
  int sum = 0;
  for (int j = 0; j < 32; ++j) {
    q[j] = static_cast<int8_t>(round_half_away(x[j] * id));
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

// Sizes the lane layout for n_rows rows and zeroes its padding lanes.
void prepare_lanes(ActFormat format, int64_t n_rows, int64_t n_in, QuantizedActivations& out) {
  const int64_t lanes = (n_rows + 15) / 16 * 16, n_blocks = n_in / act_block(format);
  auto fit = [](auto& v, int64_t size) {
    if (v.size() < static_cast<size_t>(size)) v.resize(static_cast<size_t>(size));
  };
  fit(out.lane_q_bytes, lanes * n_in + 64);
  const auto address = reinterpret_cast<uintptr_t>(out.lane_q_bytes.data());
  out.lane_q = out.lane_q_bytes.data() + (64 - address % 64) % 64;
  fit(out.lane_d, lanes * n_blocks);
  if (format == ActFormat::kQ8_K) fit(out.lane_bsum_pairs, lanes * n_blocks * 16);
  if (format != ActFormat::kQ8_K) fit(out.lane_qsum, lanes * n_blocks);
  if (format == ActFormat::kQ8_1) fit(out.lane_s, lanes * n_blocks);
  for (int64_t m = n_rows; m < lanes; ++m) {
    for (int64_t s = 0; s < n_in / 4; ++s) std::memset(out.lane_q + (s * lanes + m) * 4, 0, 4);
    for (int64_t b = 0; b < n_blocks; ++b) {
      out.lane_d[b * lanes + m] = 0.f;
      if (format == ActFormat::kQ8_K) {
        for (int t = 0; t < 16; ++t)
          out.lane_bsum_pairs[(b * 8 + t / 2) * lanes * 2 + m * 2 + t % 2] = 0;
      } else {
        out.lane_qsum[b * lanes + m] = 0;
      }
      if (format == ActFormat::kQ8_1) out.lane_s[b * lanes + m] = 0.f;
    }
  }
  ActRows& v = out.view;
  v.lanes = lanes;
  v.lane_q = out.lane_q;
  v.lane_d = out.lane_d.data();
  v.lane_qsum = format != ActFormat::kQ8_K ? out.lane_qsum.data() : nullptr;
  v.lane_s = format == ActFormat::kQ8_1 ? out.lane_s.data() : nullptr;
  v.lane_bsum_pairs = format == ActFormat::kQ8_K ? out.lane_bsum_pairs.data() : nullptr;
}

}  // namespace

void block_to_lanes(ActFormat format, int64_t m, int64_t b, const int8_t* q, const BlockScales& sc,
                    QuantizedActivations& out) {
  const ActRows& v = out.view;
  const int block = act_block(format);
  uint8_t* dst = out.lane_q + (b * block / 4 * v.lanes + m) * 4;
  for (int s = 0; s < block / 4; ++s) {
    for (int i = 0; i < 4; ++i) dst[s * v.lanes * 4 + i] = static_cast<uint8_t>(q[4 * s + i]);
  }
  lane_block_values(format, m, b, sc, out);
}

void quantize_rows(ActFormat format, const float* x, int64_t n_rows, int64_t n_in,
                   QuantizedActivations& out, bool lanes) {
  prepare_rows(format, n_rows, n_in, out, lanes);
  quantize_blocks(format, x, 0, n_rows * (n_in / act_block(format)), out);
}

void prepare_rows(ActFormat format, int64_t n_rows, int64_t n_in, QuantizedActivations& out,
                  bool lanes) {
  out.view = ActRows{};
  out.view.format = format;
  out.view.n_in = n_in;
  out.view.n_rows = n_rows;
  if (lanes) return prepare_lanes(format, n_rows, n_in, out);
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
  out.view.q = out.q.data();
  out.view.d = out.d.data();
  out.view.s = format == ActFormat::kQ8_1 ? out.s.data() : nullptr;
  out.view.bsums = format == ActFormat::kQ8_K ? out.bsums.data() : nullptr;
  out.view.qsum = format != ActFormat::kQ8_K ? out.qsum.data() : nullptr;
}

void quantize_blocks(ActFormat format, const float* x, int64_t begin, int64_t end,
                     QuantizedActivations& out) {
  // The same bits every way (QuantMatmul.VectorQuantizersEqualThePortableOnes).
  if (detected_isa() == Isa::kAvx2) return avx2_quantize_blocks(format, x, begin, end, out);
  avx512_quantize_blocks(format, x, begin, end, out);
}

void quantize_blocks_portable(ActFormat format, const float* x, int64_t begin, int64_t end,
                              QuantizedActivations& out) {
  quantize_units<&q8_legacy_block, &q8_k_block>(
      format, x, begin, end, out,
      [&](int64_t m, int64_t b, const int8_t* q, const BlockScales& sc) {
        block_to_lanes(format, m, b, q, sc, out);
      });
}

}  // namespace tandem::kernels::detail
