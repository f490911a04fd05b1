// Scalar dequantization of ggml's block types, in the order of operations ggml's
// dequantize_row_* functions use (compiled without FMA contraction, see CMakeLists.txt),
// so every value is the float ggml itself would produce.
#include "runner/gguf/quant.h"

#include <cstring>

#include "runner/util/float16.h"

namespace tandem::gguf {
namespace {

float half(uint16_t h) { return float_from_half(h); }

void q4_0(const BlockQ4_0& b, float* y) {
  const float d = half(b.d);
  for (int j = 0; j < kQK4 / 2; ++j) {
    y[j] = static_cast<float>((b.qs[j] & 0x0F) - 8) * d;
    y[j + kQK4 / 2] = static_cast<float>((b.qs[j] >> 4) - 8) * d;
  }
}

void q4_1(const BlockQ4_1& b, float* y) {
  const float d = half(b.d), m = half(b.m);
  for (int j = 0; j < kQK4 / 2; ++j) {
    y[j] = static_cast<float>(b.qs[j] & 0x0F) * d + m;
    y[j + kQK4 / 2] = static_cast<float>(b.qs[j] >> 4) * d + m;
  }
}

// The five-bit values of a Q5_0/Q5_1 block: four bits from qs, the fifth from qh.
void q5_values(const uint8_t (&qh_bytes)[4], const uint8_t (&qs)[kQK4 / 2], int (&q)[kQK4]) {
  uint32_t qh;
  std::memcpy(&qh, qh_bytes, sizeof(qh));
  for (int j = 0; j < kQK4 / 2; ++j) {
    q[j] = (qs[j] & 0x0F) | static_cast<int>(((qh >> j) << 4) & 0x10);
    q[j + kQK4 / 2] = (qs[j] >> 4) | static_cast<int>((qh >> (j + 12)) & 0x10);
  }
}

void q5_0(const BlockQ5_0& b, float* y) {
  const float d = half(b.d);
  int q[kQK4];
  q5_values(b.qh, b.qs, q);
  for (int j = 0; j < kQK4; ++j) y[j] = static_cast<float>(q[j] - 16) * d;
}

void q5_1(const BlockQ5_1& b, float* y) {
  const float d = half(b.d), m = half(b.m);
  int q[kQK4];
  q5_values(b.qh, b.qs, q);
  for (int j = 0; j < kQK4; ++j) y[j] = static_cast<float>(q[j]) * d + m;
}

void q8_0(const BlockQ8_0& b, float* y) {
  const float d = half(b.d);
  for (int j = 0; j < kQ8_0BlockSize; ++j) y[j] = static_cast<float>(b.qs[j]) * d;
}

void q2_k(const BlockQ2_K& b, float* y) {
  const float d = half(b.d), dmin = half(b.dmin);
  const uint8_t* q = b.qs;
  int is = 0;
  for (int n = 0; n < kQKK; n += 128, q += 32) {
    for (int shift = 0; shift < 8; shift += 2) {
      for (int half_index = 0; half_index < 2; ++half_index) {
        const uint8_t sc = b.scales[is++];
        const float dl = d * static_cast<float>(sc & 0xF), ml = dmin * static_cast<float>(sc >> 4);
        const uint8_t* qq = q + 16 * half_index;
        for (int l = 0; l < 16; ++l) *y++ = dl * static_cast<float>((qq[l] >> shift) & 3) - ml;
      }
    }
  }
}

// Q3_K's sixteen 6-bit scales, unpacked from 12 bytes as ggml does.
void q3_k_scales(const uint8_t (&packed)[12], int8_t (&scales)[16]) {
  constexpr uint32_t kmask1 = 0x03030303, kmask2 = 0x0f0f0f0f;
  uint32_t aux[4];
  std::memcpy(aux, packed, 12);
  const uint32_t tmp = aux[2];
  aux[2] = ((aux[0] >> 4) & kmask2) | (((tmp >> 4) & kmask1) << 4);
  aux[3] = ((aux[1] >> 4) & kmask2) | (((tmp >> 6) & kmask1) << 4);
  aux[0] = (aux[0] & kmask2) | (((tmp >> 0) & kmask1) << 4);
  aux[1] = (aux[1] & kmask2) | (((tmp >> 2) & kmask1) << 4);
  std::memcpy(scales, aux, 16);
}

void q3_k(const BlockQ3_K& b, float* y) {
  const float d_all = half(b.d);
  int8_t scales[16];
  q3_k_scales(b.scales, scales);
  const uint8_t* q = b.qs;
  int is = 0;
  uint8_t m = 1;
  for (int n = 0; n < kQKK; n += 128, q += 32) {
    for (int shift = 0; shift < 8; shift += 2, m = static_cast<uint8_t>(m << 1)) {
      for (int half_index = 0; half_index < 2; ++half_index) {
        const float dl = d_all * static_cast<float>(scales[is++] - 32);
        const uint8_t* qq = q + 16 * half_index;
        const uint8_t* hm = b.hmask + 16 * half_index;
        for (int l = 0; l < 16; ++l) {
          const int v = ((qq[l] >> shift) & 3) - ((hm[l] & m) ? 0 : 4);
          *y++ = dl * static_cast<float>(v);
        }
      }
    }
  }
}

// The j-th 6-bit scale and min of a Q4_K/Q5_K super-block (ggml's get_scale_min_k4).
void scale_min_k4(int j, const uint8_t (&q)[12], uint8_t& d, uint8_t& m) {
  if (j < 4) {
    d = q[j] & 63;
    m = q[j + 4] & 63;
  } else {
    d = static_cast<uint8_t>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    m = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

// The scales and mins of sub-blocks is and is + 1, as ggml computes them (d * sc, dmin * m).
struct ScalePair {
  float d1, m1, d2, m2;
};
ScalePair scale_pair(const uint8_t (&scales)[12], int is, float d, float dmin) {
  uint8_t sc, m;
  scale_min_k4(is, scales, sc, m);
  const float d1 = d * sc, m1 = dmin * m;
  scale_min_k4(is + 1, scales, sc, m);
  return {d1, m1, d * sc, dmin * m};
}

void q4_k(const BlockQ4_K& b, float* y) {
  const float d = half(b.d), dmin = half(b.dmin);
  const uint8_t* q = b.qs;
  for (int is = 0; is < 8; is += 2, q += 32) {
    const ScalePair s = scale_pair(b.scales, is, d, dmin);
    const float d1 = s.d1, m1 = s.m1, d2 = s.d2, m2 = s.m2;
    for (int l = 0; l < 32; ++l) *y++ = d1 * static_cast<float>(q[l] & 0xF) - m1;
    for (int l = 0; l < 32; ++l) *y++ = d2 * static_cast<float>(q[l] >> 4) - m2;
  }
}

void q5_k(const BlockQ5_K& b, float* y) {
  const float d = half(b.d), dmin = half(b.dmin);
  const uint8_t* ql = b.qs;
  uint8_t u1 = 1, u2 = 2;
  for (int is = 0; is < 8; is += 2, ql += 32) {
    const ScalePair s = scale_pair(b.scales, is, d, dmin);
    const float d1 = s.d1, m1 = s.m1, d2 = s.d2, m2 = s.m2;
    for (int l = 0; l < 32; ++l)
      *y++ = d1 * static_cast<float>((ql[l] & 0xF) + ((b.qh[l] & u1) ? 16 : 0)) - m1;
    for (int l = 0; l < 32; ++l)
      *y++ = d2 * static_cast<float>((ql[l] >> 4) + ((b.qh[l] & u2) ? 16 : 0)) - m2;
    u1 = static_cast<uint8_t>(u1 << 2);
    u2 = static_cast<uint8_t>(u2 << 2);
  }
}

void q6_k(const BlockQ6_K& b, float* y) {
  const float d = half(b.d);
  const uint8_t* ql = b.ql;
  const uint8_t* qh = b.qh;
  const int8_t* sc = b.scales;
  for (int n = 0; n < kQKK; n += 128, y += 128, ql += 64, qh += 32, sc += 8) {
    for (int l = 0; l < 32; ++l) {
      const int is = l / 16;
      const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
      const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
      const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
      const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
      y[l + 0] = d * static_cast<float>(sc[is + 0]) * static_cast<float>(q1);
      y[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
      y[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
      y[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
    }
  }
}

void iq4_nl(const BlockIq4Nl& b, float* y) {
  const float d = half(b.d);
  for (int j = 0; j < kQK4 / 2; ++j) {
    y[j] = d * static_cast<float>(kIq4NlValues[b.qs[j] & 0xF]);
    y[j + kQK4 / 2] = d * static_cast<float>(kIq4NlValues[b.qs[j] >> 4]);
  }
}

void iq4_xs(const BlockIq4Xs& b, float* y) {
  const float d = half(b.d);
  const uint8_t* qs = b.qs;
  for (int ib = 0; ib < kQKK / 32; ++ib, y += 32, qs += 16) {
    const int ls =
        ((b.scales_l[ib / 2] >> 4 * (ib % 2)) & 0xF) | (((b.scales_h >> 2 * ib) & 3) << 4);
    const float dl = d * static_cast<float>(ls - 32);
    for (int j = 0; j < 16; ++j) {
      y[j] = dl * static_cast<float>(kIq4NlValues[qs[j] & 0xF]);
      y[j + 16] = dl * static_cast<float>(kIq4NlValues[qs[j] >> 4]);
    }
  }
}

// Runs `one` over the blocks of a row; blocks are copied out, so `src` may be unaligned.
template <class Block, class Fn>
void blocks(const void* src, int64_t n, int64_t per_block, float* dst, Fn one) {
  const auto* bytes = static_cast<const uint8_t*>(src);
  for (int64_t i = 0; i < n / per_block; ++i) {
    Block b;
    std::memcpy(&b, bytes + i * static_cast<int64_t>(sizeof(Block)), sizeof(Block));
    one(b, dst + i * per_block);
  }
}

void plain(TensorType type, const void* src, int64_t n, float* dst) {
  const auto* bytes = static_cast<const uint8_t*>(src);
  for (int64_t i = 0; i < n; ++i) {
    uint16_t h;
    if (type == TensorType::kF32) {
      std::memcpy(dst + i, bytes + 4 * i, 4);
      continue;
    }
    std::memcpy(&h, bytes + 2 * i, 2);
    dst[i] = type == TensorType::kF16 ? float_from_half(h) : float_from_bfloat(h);
  }
}

}  // namespace

void dequantize_row(TensorType type, const void* src, int64_t n, float* dst) {
  switch (type) {
    case TensorType::kF32:
    case TensorType::kF16:
    case TensorType::kBF16:
      return plain(type, src, n, dst);
    case TensorType::kQ4_0:
      return blocks<BlockQ4_0>(src, n, kQK4, dst, q4_0);
    case TensorType::kQ4_1:
      return blocks<BlockQ4_1>(src, n, kQK4, dst, q4_1);
    case TensorType::kQ5_0:
      return blocks<BlockQ5_0>(src, n, kQK4, dst, q5_0);
    case TensorType::kQ5_1:
      return blocks<BlockQ5_1>(src, n, kQK4, dst, q5_1);
    case TensorType::kQ8_0:
      return blocks<BlockQ8_0>(src, n, kQ8_0BlockSize, dst, q8_0);
    case TensorType::kQ2_K:
      return blocks<BlockQ2_K>(src, n, kQKK, dst, q2_k);
    case TensorType::kQ3_K:
      return blocks<BlockQ3_K>(src, n, kQKK, dst, q3_k);
    case TensorType::kQ4_K:
      return blocks<BlockQ4_K>(src, n, kQKK, dst, q4_k);
    case TensorType::kQ5_K:
      return blocks<BlockQ5_K>(src, n, kQKK, dst, q5_k);
    case TensorType::kQ6_K:
      return blocks<BlockQ6_K>(src, n, kQKK, dst, q6_k);
    case TensorType::kIQ4_NL:
      return blocks<BlockIq4Nl>(src, n, kQK4, dst, iq4_nl);
    case TensorType::kIQ4_XS:
      return blocks<BlockIq4Xs>(src, n, kQKK, dst, iq4_xs);
  }
  throw GgufError(std::string("cannot dequantize tensor type ") + type_name(type));
}

}  // namespace tandem::gguf
