// The quantized block types decode as ggml defines them. The reference here is written
// per element, from the format's description (which bits of which bytes make element i),
// independently of runner/gguf/quant.cpp's block loops, and with its own half decoder.
#include "runner/gguf/quant.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace tandem::gguf::TANDEM_UNITY_ID {
namespace {

// IEEE half by its definition: sign, 5-bit exponent (bias 15), 10-bit fraction.
float half_value(uint16_t h) {
  const int sign = h >> 15, exponent = (h >> 10) & 31, fraction = h & 1023;
  const float magnitude = exponent == 0 ? std::ldexp(static_cast<float>(fraction), -24)
                                        : std::ldexp(1.0f + fraction / 1024.0f, exponent - 15);
  return sign ? -magnitude : magnitude;
}

uint16_t u16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
int nibble(const uint8_t* qs, int i) { return i < 16 ? qs[i] & 15 : qs[i - 16] >> 4; }

// Element i of one block; `b` points at the block's bytes (layouts in ggml-common.h).
float legacy(TensorType t, const uint8_t* b, int i) {
  switch (t) {
    case TensorType::kQ4_0:
      return static_cast<float>(nibble(b + 2, i) - 8) * half_value(u16(b));
    case TensorType::kQ4_1:
      return static_cast<float>(nibble(b + 4, i)) * half_value(u16(b)) + half_value(u16(b + 2));
    case TensorType::kQ5_0: {
      const int high = (b[2 + i / 8] >> (i % 8)) & 1;
      return static_cast<float>((nibble(b + 6, i) | high << 4) - 16) * half_value(u16(b));
    }
    case TensorType::kQ5_1: {
      const int high = (b[4 + i / 8] >> (i % 8)) & 1;
      return static_cast<float>(nibble(b + 8, i) | high << 4) * half_value(u16(b)) +
             half_value(u16(b + 2));
    }
    case TensorType::kQ8_0:
      return static_cast<float>(static_cast<int8_t>(b[2 + i])) * half_value(u16(b));
    case TensorType::kIQ4_NL:
      return half_value(u16(b)) * static_cast<float>(kIq4NlValues[nibble(b + 2, i)]);
    default:
      ADD_FAILURE() << "not a legacy type";
      return 0;
  }
}

// The 6-bit scale s (and min) of a Q4_K/Q5_K super-block: 8 scales and 8 mins in 12 bytes.
void k4_scale(const uint8_t* sc, int s, int& scale, int& min) {
  if (s < 4) {
    scale = sc[s] & 63;
    min = sc[s + 4] & 63;
  } else {
    scale = (sc[s + 4] & 15) | (sc[s - 4] >> 6) << 4;
    min = (sc[s + 4] >> 4) | (sc[s] >> 6) << 4;
  }
}

float k_quant(TensorType t, const uint8_t* b, int i) {
  const int g = i / 128, r = i % 128;  // Q2/Q3/Q6: halves of 128
  switch (t) {
    case TensorType::kQ2_K: {  // scales[16] qs[64] d dmin
      const int q = (b[16 + g * 32 + r % 32] >> (2 * (r / 32))) & 3;
      const int sc = b[i / 16];
      const float dl = half_value(u16(b + 80)) * static_cast<float>(sc & 15);
      return dl * static_cast<float>(q) - half_value(u16(b + 82)) * static_cast<float>(sc >> 4);
    }
    case TensorType::kQ3_K: {  // hmask[32] qs[64] scales[12] d
      const int q = (b[32 + g * 32 + r % 32] >> (2 * (r / 32))) & 3;
      const int high = (b[r % 32] >> (4 * g + r / 32)) & 1;
      const int s = i / 16;
      const int low4 = s < 8 ? b[96 + s] & 15 : b[96 + s - 8] >> 4;
      const int scale = low4 | ((b[96 + 8 + s % 4] >> (2 * (s / 4))) & 3) << 4;
      return half_value(u16(b + 108)) * static_cast<float>(scale - 32) *
             static_cast<float>(q - (high ? 0 : 4));
    }
    case TensorType::kQ4_K:
    case TensorType::kQ5_K: {  // d dmin scales[12] (qh[32]) qs[128]
      const bool five = t == TensorType::kQ5_K;
      const int chunk = i / 64, upper = (i % 64) / 32, l = i % 32;
      const uint8_t byte = b[(five ? 48 : 16) + chunk * 32 + l];
      int q = upper ? byte >> 4 : byte & 15;
      if (five && ((b[16 + l] >> (2 * chunk + upper)) & 1)) q += 16;
      int scale, min;
      k4_scale(b + 4, 2 * chunk + upper, scale, min);
      const float d1 = half_value(u16(b)) * static_cast<float>(scale);
      return d1 * static_cast<float>(q) - half_value(u16(b + 2)) * static_cast<float>(min);
    }
    case TensorType::kQ6_K: {  // ql[128] qh[64] scales[16] d
      const int quarter = r / 32, l = r % 32;
      const uint8_t low = b[g * 64 + l + (quarter & 1) * 32];
      const int q = ((quarter >= 2 ? low >> 4 : low & 15) |
                     ((b[128 + g * 32 + l] >> (2 * quarter)) & 3) << 4) -
                    32;
      const auto scale = static_cast<int8_t>(b[192 + g * 8 + l / 16 + 2 * quarter]);
      return half_value(u16(b + 208)) * static_cast<float>(scale) * static_cast<float>(q);
    }
    case TensorType::kIQ4_XS: {  // d scales_h scales_l[4] qs[128]
      const int ib = i / 32;
      const int ls = ((b[4 + ib / 2] >> (4 * (ib % 2))) & 15) | ((u16(b + 2) >> (2 * ib)) & 3) << 4;
      const float dl = half_value(u16(b)) * static_cast<float>(ls - 32);
      return dl * static_cast<float>(kIq4NlValues[nibble(b + 8 + ib * 16, i % 32)]);
    }
    default:
      return legacy(t, b, i);
  }
}

// Random blocks whose scales are modest halves (no inf or NaN).
std::vector<uint8_t> random_blocks(TensorType t, int n_blocks, std::mt19937& rng) {
  std::vector<uint8_t> bytes(static_cast<size_t>(block_bytes(t) * n_blocks));
  for (auto& byte : bytes) byte = static_cast<uint8_t>(rng());
  const std::vector<int> scale_offsets = [&]() -> std::vector<int> {
    switch (t) {
      case TensorType::kQ2_K:
        return {80, 82};
      case TensorType::kQ3_K:
        return {108};
      case TensorType::kQ6_K:
        return {208};
      case TensorType::kQ4_1:
      case TensorType::kQ5_1:
      case TensorType::kQ4_K:
      case TensorType::kQ5_K:
        return {0, 2};
      default:
        return {0};
    }
  }();
  for (int blk = 0; blk < n_blocks; ++blk) {
    for (int offset : scale_offsets) {
      const uint16_t h = static_cast<uint16_t>((rng() & 0x83ff) | ((rng() % 20 + 1) << 10));
      std::memcpy(&bytes[blk * block_bytes(t) + offset], &h, 2);
    }
  }
  return bytes;
}

class Dequantize : public ::testing::TestWithParam<TensorType> {};

TEST_P(Dequantize, EveryElementIsWhatTheFormatSays) {
  const TensorType t = GetParam();
  std::mt19937 rng(static_cast<uint32_t>(t) + 1);
  const int n_blocks = 8;
  const int64_t per = block_elements(t);
  const std::vector<uint8_t> bytes = random_blocks(t, n_blocks, rng);
  std::vector<float> got(static_cast<size_t>(per * n_blocks));
  dequantize_row(t, bytes.data(), per * n_blocks, got.data());
  for (int blk = 0; blk < n_blocks; ++blk) {
    const uint8_t* b = bytes.data() + blk * block_bytes(t);
    for (int i = 0; i < per; ++i) {
      const float want = per == 256 ? k_quant(t, b, i) : legacy(t, b, i);
      ASSERT_EQ(got[blk * per + i], want) << type_name(t) << " block " << blk << " element " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllTypes, Dequantize,
                         ::testing::Values(TensorType::kQ4_0, TensorType::kQ4_1, TensorType::kQ5_0,
                                           TensorType::kQ5_1, TensorType::kQ8_0, TensorType::kQ2_K,
                                           TensorType::kQ3_K, TensorType::kQ4_K, TensorType::kQ5_K,
                                           TensorType::kQ6_K, TensorType::kIQ4_NL,
                                           TensorType::kIQ4_XS),
                         [](const auto& info) { return std::string(type_name(info.param)); });

TEST(TensorTypes, BlockSizesAndBytesAreGgmls) {
  EXPECT_EQ(block_elements(TensorType::kQ4_K), 256);
  EXPECT_EQ(block_bytes(TensorType::kQ4_K), 144);
  EXPECT_EQ(block_elements(TensorType::kQ5_0), 32);
  EXPECT_EQ(block_bytes(TensorType::kQ5_0), 22);
  EXPECT_EQ(tensor_bytes(TensorType::kQ6_K, 512), 420u);
  EXPECT_THROW(tensor_bytes(TensorType::kIQ4_XS, 100), GgufError);
  EXPECT_STREQ(ggml_type_name(16), "IQ2_XXS");
  EXPECT_FALSE(is_supported_type(16));
  EXPECT_TRUE(is_supported_type(23));
}

}  // namespace
}  // namespace tandem::gguf::TANDEM_UNITY_ID
