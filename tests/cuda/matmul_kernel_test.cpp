// The tensor-core matmuls (runner/cuda/mma_matmul.cu), F16, BF16 and int8 times a scale per
// 32 (Q8_0, Q4_0 ... repacked), against a double-precision reference on random data, with every
// shape edge the kernel has: K not a multiple of its 32-wide chunk, outputs not a multiple of its
// 16-row tile, tokens spanning two 32-token tiles, the fused RMSNorm, the residual add and the
// gated FFN. And law 2: a token's outputs are the same bits whether it runs alone, in a small batch
// or in the whole one.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <random>
#include <vector>

#include "runner/cuda/cuda_check.h"
#include "runner/cuda/forward_kernels.h"
#include "runner/cuda/mma_matmul.h"
#include "runner/util/float16.h"
#include "tests/cuda/cuda_test_support.h"

namespace tandem::testing::TANDEM_UNITY_ID {
namespace {

using cuda::DeviceMatrix;
using cuda::WeightType;

struct Case {
  WeightType type;
  int32_t n_out, n_in, n_tokens;
  bool norm, gated, accumulate;
};

struct Data {
  std::vector<uint16_t> w_bits;  // the stored weights (F16, BF16)
  std::vector<int8_t> q;         // or (kScaledInt8) the integers
  std::vector<float> d;          // and a scale per 32 of a row, F16 values as GGUF's
  std::vector<float> w;          // their values
  std::vector<float> x, norm, y0;
};

Data make_data(const Case& c, int32_t rows, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Data d;
  if (c.type == WeightType::kScaledInt8) {
    std::uniform_int_distribution<int> integer(-128, 127);
    for (int64_t b = 0; b < int64_t{rows} * c.n_in / 32; ++b)
      d.d.push_back(float_from_half(half_from_float(normal(rng) * 0.004f)));
    for (int64_t i = 0; i < int64_t{rows} * c.n_in; ++i) {
      d.q.push_back(static_cast<int8_t>(integer(rng)));
      d.w.push_back(d.q.back() * d.d[i / 32]);  // exact: 8 by 11 significant bits
    }
  }
  for (int64_t i = 0; c.type != WeightType::kScaledInt8 && i < int64_t{rows} * c.n_in; ++i) {
    const float v = normal(rng) * 0.2f;
    const uint16_t bits = c.type == WeightType::kF16 ? half_from_float(v) : bfloat_from_float(v);
    d.w_bits.push_back(bits);
    d.w.push_back(c.type == WeightType::kF16 ? float_from_half(bits) : float_from_bfloat(bits));
  }
  for (int32_t m = 0; m < c.n_tokens; ++m) {
    const float magnitude = m % 5 == 0 ? 40.0f : 1.0f;  // the norm must cancel it
    for (int32_t i = 0; i < c.n_in; ++i) d.x.push_back(normal(rng) * magnitude);
  }
  for (int32_t i = 0; i < c.n_in; ++i) d.norm.push_back(0.5f + std::abs(normal(rng)) * 0.5f);
  for (int64_t i = 0; i < int64_t{c.n_tokens} * c.n_out; ++i)
    d.y0.push_back(c.accumulate ? normal(rng) : std::nanf(""));  // unwritten NaN fails
  return d;
}

// y for tokens [first, first + count), run as a batch of their own.
std::vector<float> run(const Case& c, const Data& d, int32_t first, int32_t count) {
  DeviceBuffer w(d.w_bits), q(d.q), scales(d.d), norm(d.norm);
  DeviceBuffer x(std::vector<float>(d.x.begin() + int64_t{first} * c.n_in,
                                    d.x.begin() + int64_t{first + count} * c.n_in));
  DeviceBuffer y(std::vector<float>(d.y0.begin() + int64_t{first} * c.n_out,
                                    d.y0.begin() + int64_t{first + count} * c.n_out));
  DeviceMatrix m{c.type, w.ptr, c.gated ? 2 * c.n_out : c.n_out, c.n_in};
  if (c.type == WeightType::kScaledInt8) {
    m.data = q.ptr;
    m.scales = scales.as<float>();
  }
  EXPECT_TRUE(cuda::mma_matmul_fits(m));
  const cuda::NormIn in{c.norm ? norm.as<float>() : nullptr, 1e-5f};
  if (c.gated)
    cuda::gated_matmul(m, x.as<float>(), count, c.n_out, cuda::Activation::kSilu, y.as<float>(),
                       nullptr, in);
  else
    cuda::matmul(m, x.as<float>(), count, y.as<float>(), c.accumulate, nullptr, in);
  TANDEM_CUDA_CHECK(cudaGetLastError());
  TANDEM_CUDA_CHECK(cudaDeviceSynchronize());
  return y.read<float>(static_cast<size_t>(count) * c.n_out);
}

// The reference dot product of weight row o with token m's (normed) input, and the sum of
// the products' magnitudes, which bounds TF32's rounding of the input.
std::pair<double, double> reference_dot(const Case& c, const Data& d, int32_t o, int32_t m) {
  const float* x = d.x.data() + int64_t{m} * c.n_in;
  double scale = 1;
  if (c.norm) {
    double ss = 0;
    for (int32_t i = 0; i < c.n_in; ++i) ss += double{x[i]} * x[i];
    scale = 1.0 / std::sqrt(ss / c.n_in + 1e-5);
  }
  double dot = 0, magnitude = 0;
  for (int32_t i = 0; i < c.n_in; ++i) {
    const double xn = c.norm ? x[i] * scale * d.norm[i] : x[i];
    dot += d.w[int64_t{o} * c.n_in + i] * xn;
    magnitude += std::abs(d.w[int64_t{o} * c.n_in + i] * xn);
  }
  return {dot, magnitude};
}

void expect_near_reference(const Case& c, const Data& d, const std::vector<float>& y) {
  constexpr double kTf32 = 1.0 / 1024;  // TF32 keeps 10 mantissa bits: 2^-11 relative, doubled
  int bad = 0;
  for (int32_t m = 0; m < c.n_tokens; ++m)
    for (int32_t o = 0; o < c.n_out; ++o) {
      const auto [dot, mag] = reference_dot(c, d, o, m);
      double expected = dot, tolerance = kTf32 * mag + 1e-6;
      if (c.gated) {
        const auto [up, up_mag] = reference_dot(c, d, c.n_out + o, m);
        const double silu = dot / (1 + std::exp(-dot));
        expected = silu * up;
        tolerance = 1.1 * (std::abs(up) * kTf32 * mag + std::abs(silu) * kTf32 * up_mag) + 1e-6;
      }
      if (c.accumulate) expected += d.y0[int64_t{m} * c.n_out + o];
      const float got = y[int64_t{m} * c.n_out + o];
      if (!(std::abs(got - expected) <= tolerance) && bad++ < 5)
        ADD_FAILURE() << "token " << m << " row " << o << ": " << got << ", expected " << expected
                      << " within " << tolerance;
    }
  EXPECT_EQ(bad, 0);
}

class TensorCoreMatmul : public ::testing::TestWithParam<Case> {};

TEST_P(TensorCoreMatmul, AgreesWithDoublesAndATokensBitsDoNotDependOnItsBatch) {
  TANDEM_REQUIRE_GPU();
  const Case c = GetParam();
  const Data d = make_data(c, c.gated ? 2 * c.n_out : c.n_out, 1234 + c.n_in + c.n_out);
  const std::vector<float> all = run(c, d, 0, c.n_tokens);
  expect_near_reference(c, d, all);
  const std::pair<int32_t, int32_t> subsets[] = {
      {0, 1}, {5, 1}, {c.n_tokens - 1, 1}, {3, 9}, {1, c.n_tokens - 1}};
  for (const auto& [first, count] : subsets) {
    const std::vector<float> part = run(c, d, first, count);
    for (int64_t i = 0; i < int64_t{count} * c.n_out; ++i)
      ASSERT_EQ(std::bit_cast<uint32_t>(part[i]),
                std::bit_cast<uint32_t>(all[int64_t{first} * c.n_out + i]))
          << "token " << first + i / c.n_out << " output " << i % c.n_out << " in a batch of "
          << count << " from " << first;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, TensorCoreMatmul,
    ::testing::Values(Case{WeightType::kBF16, 40, 40, 37, false, false, false},
                      Case{WeightType::kF16, 40, 40, 37, false, false, true},
                      Case{WeightType::kBF16, 96, 576, 37, true, false, false},
                      Case{WeightType::kF16, 72, 1536, 20, false, false, true},
                      Case{WeightType::kBF16, 48, 264, 70, true, true, false},
                      Case{WeightType::kF16, 24, 576, 37, true, true, false},
                      Case{WeightType::kScaledInt8, 40, 64, 37, false, false, true},
                      Case{WeightType::kScaledInt8, 96, 576, 37, true, false, false},
                      Case{WeightType::kScaledInt8, 72, 1536, 20, false, false, false},
                      Case{WeightType::kScaledInt8, 24, 576, 37, true, true, false}),
    [](const ::testing::TestParamInfo<Case>& info) {
      const Case& c = info.param;
      const char* type = c.type == WeightType::kF16    ? "F16"
                         : c.type == WeightType::kBF16 ? "BF16"
                                                       : "ScaledInt8";
      return std::string(type) + "_" + std::to_string(c.n_out) + "x" + std::to_string(c.n_in) +
             "_tokens" + std::to_string(c.n_tokens) + (c.norm ? "_norm" : "") +
             (c.gated ? "_gated" : "") + (c.accumulate ? "_accumulate" : "");
    });

}  // namespace
}  // namespace tandem::testing::TANDEM_UNITY_ID
