#include "runner/kernels/kernels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "runner/kernels/ceilings.h"
#include "runner/kernels/packed_impl.h"
#include "runner/util/float16.h"
#include "runner/util/thread_pool.h"
#include "tests/common/isa_scope.h"
#include "tests/common/test_support.h"

namespace tandem::kernels::TANDEM_UNITY_ID {
namespace {

using testing::IsaScope;
using testing::normal_floats;
using testing::runnable_isas;

using gguf::TensorType;

constexpr TensorType kAllTypes[] = {TensorType::kF32, TensorType::kF16, TensorType::kBF16,
                                    TensorType::kQ8_0};

// A weight matrix in GGUF bytes, random, with its dequantized F32 values.
struct Matrix {
  TensorType type;
  int64_t n_out, n_in;
  std::vector<uint8_t> bytes;
  std::vector<float> values;  // n_out x n_in, what dequantize_row gives
  WeightSource source() const { return {type, bytes.data(), n_out, n_in}; }
};

Matrix random_matrix(TensorType type, int64_t n_out, int64_t n_in, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.f, 1.f);
  Matrix m{type, n_out, n_in, {}, std::vector<float>(n_out * n_in)};
  for (int64_t o = 0; o < n_out; ++o) {
    for (int64_t k = 0; k < n_in; ++k) {
      const float v = normal(rng);
      switch (type) {
        case TensorType::kF32:
          m.bytes.resize(m.bytes.size() + 4);
          std::memcpy(m.bytes.data() + m.bytes.size() - 4, &v, 4);
          break;
        case TensorType::kF16:
        case TensorType::kBF16: {
          const uint16_t h = type == TensorType::kF16 ? half_from_float(v) : bfloat_from_float(v);
          m.bytes.resize(m.bytes.size() + 2);
          std::memcpy(m.bytes.data() + m.bytes.size() - 2, &h, 2);
          break;
        }
        case TensorType::kQ8_0:
          if (k % 32 == 0) {
            gguf::BlockQ8_0 block;
            block.d = half_from_float(0.01f + 0.02f * std::abs(normal(rng)));
            for (auto& q : block.qs) q = static_cast<int8_t>(rng() % 255 - 127);
            m.bytes.resize(m.bytes.size() + sizeof(block));
            std::memcpy(m.bytes.data() + m.bytes.size() - sizeof(block), &block, sizeof(block));
          }
          break;
        default:  // other quantized types: random blocks, bit 6 of every byte cleared so that
                  // each half-precision scale is finite and below 2
          if (k % gguf::block_elements(type) == 0) {
            for (int64_t i = 0; i < gguf::block_bytes(type); ++i)
              m.bytes.push_back(static_cast<uint8_t>(rng() & 0xbf));
          }
          break;
      }
    }
  }
  const size_t row_bytes = m.bytes.size() / n_out;
  for (int64_t o = 0; o < n_out; ++o) {
    dequantize_row(type, m.bytes.data() + o * row_bytes, m.values.data() + o * n_in, n_in);
  }
  return m;
}

// Checks y against a float64 product of the dequantized weights. The bound is the
// textbook one for an n-term F32 FMA chain, n_in * 2^-24 * sum|x*w|, plus (where
// activations are rounded to BF16) 2^-8 * sum|x*w| for that rounding. Q8_0 weights
// multiply activations quantized to Q8_0 as ggml does: each value then moves by at most
// half a step of its block's scale amax / 127, and that scale by its F16 rounding (2^-11 of
// the 127 steps), under amax / 200 in all; so sum|w| * amax / 200 is added per block.
void expect_close_to_reference(const Matrix& w, const std::vector<float>& x, int64_t n_rows,
                               const std::vector<float>& y, bool bf16_activations,
                               const std::string& what) {
  const double rel = static_cast<double>(w.n_in) * 0x1p-24 + (bf16_activations ? 0x1p-8 : 0.0);
  const bool q8_activations = w.type == TensorType::kQ8_0;
  for (int64_t m = 0; m < n_rows; ++m) {
    for (int64_t o = 0; o < w.n_out; ++o) {
      double ref = 0, magnitude = 0, quantized = 0;
      for (int64_t k = 0; k < w.n_in; ++k) {
        const double term = static_cast<double>(x[m * w.n_in + k]) * w.values[o * w.n_in + k];
        ref += term;
        magnitude += std::abs(term);
      }
      for (int64_t b = 0; q8_activations && b < w.n_in / 32; ++b) {
        double amax = 0, w_abs = 0;
        for (int64_t k = 32 * b; k < 32 * b + 32; ++k) {
          amax = std::max(amax, std::abs(static_cast<double>(x[m * w.n_in + k])));
          w_abs += std::abs(static_cast<double>(w.values[o * w.n_in + k]));
        }
        quantized += w_abs * amax / 200;
      }
      ASSERT_NEAR(y[m * w.n_out + o], ref, rel * magnitude + quantized + 1e-30)
          << what << " row " << m << " output " << o;
    }
  }
}

bool uses_bf16_activations(TensorType type) {
  return type == TensorType::kBF16 && detected_isa() >= Isa::kAvx512Bf16;
}

// A label for failure messages.
std::string label_of(Isa isa, TensorType type, int64_t n_out, int64_t n_in, int64_t n_rows) {
  return std::string(isa_name(isa)) + " " + gguf::type_name(type) + " " + std::to_string(n_out) +
         "x" + std::to_string(n_in) + " rows " + std::to_string(n_rows);
}

TEST(Kernels, MatmulMatchesFloat64ReferenceForEveryTypeAndOddShape) {
  ThreadPool pool(2);
  struct Shape {
    int64_t n_out, n_in;
  };
  for (Isa isa : runnable_isas()) {
    IsaScope scope(isa);
    for (TensorType type : kAllTypes) {
      const bool q8 = type == TensorType::kQ8_0;
      const Shape shapes[] = {{1, q8 ? 32 : 1},   {5, q8 ? 64 : 3},     {63, q8 ? 96 : 17},
                              {64, q8 ? 32 : 63}, {65, q8 ? 160 : 100}, {130, 576}};
      for (const Shape& s : shapes) {
        const Matrix w = random_matrix(type, s.n_out, s.n_in, 7 * s.n_out + s.n_in);
        const PackedWeights packed = PackedWeights::pack(w.source());
        EXPECT_EQ(packed.n_out(), s.n_out);
        EXPECT_EQ(packed.n_in(), s.n_in);
        for (int64_t n_rows : {1, 2, 7, 13}) {
          const auto x = normal_floats(n_rows * s.n_in, 99 + n_rows);
          std::vector<float> y(n_rows * s.n_out, std::nanf(""));
          matmul(pool, packed, x.data(), n_rows, y.data());
          expect_close_to_reference(w, x, n_rows, y, uses_bf16_activations(type),
                                    label_of(isa, type, s.n_out, s.n_in, n_rows));
        }
      }
    }
  }
}

// An F16 matrix whose every value is a BF16 value (an F16 file converted from a BF16
// checkpoint) is packed as BF16: same peak, same outputs bit for bit as the BF16 matrix on
// every ISA. One F16 value that BF16 cannot hold keeps the whole matrix on the exact path.
TEST(Kernels, F16WeightsHoldingOnlyBf16ValuesRunAsBf16) {
  ThreadPool pool(2);
  const Matrix b = random_matrix(TensorType::kBF16, 70, 96, 11);
  Matrix h{TensorType::kF16, b.n_out, b.n_in, std::vector<uint8_t>(b.bytes.size()), b.values};
  for (size_t i = 0; i < b.values.size(); ++i) {
    const uint16_t half = half_from_float(b.values[i]);
    ASSERT_EQ(float_from_half(half), b.values[i]) << "test data: value " << i << " not a half";
    std::memcpy(h.bytes.data() + 2 * i, &half, 2);
  }
  Matrix inexact = h;
  uint16_t one;
  std::memcpy(&one, inexact.bytes.data() + 2 * 37, 2);
  one ^= 1;  // the lowest mantissa bit: an F16 value with more bits than BF16 has
  std::memcpy(inexact.bytes.data() + 2 * 37, &one, 2);
  inexact.values[37] = float_from_half(one);
  for (Isa isa : runnable_isas()) {
    IsaScope scope(isa);
    const PackedWeights as_bf16 = PackedWeights::pack(b.source());
    const PackedWeights from_f16 = PackedWeights::pack(h.source());
    const PackedWeights exact = PackedWeights::pack(inexact.source());
    EXPECT_EQ(from_f16.peak(), as_bf16.peak()) << isa_name(isa);
    EXPECT_EQ(exact.peak(), Peak::kF32Fma) << isa_name(isa);
    for (int64_t n_rows : {1, 5, 32}) {
      const auto x = normal_floats(n_rows * b.n_in, 3 + n_rows);
      std::vector<float> y_bf16(n_rows * b.n_out), y_f16(n_rows * b.n_out),
          y_exact(n_rows * b.n_out);
      matmul(pool, as_bf16, x.data(), n_rows, y_bf16.data());
      matmul(pool, from_f16, x.data(), n_rows, y_f16.data());
      matmul(pool, exact, x.data(), n_rows, y_exact.data());
      ASSERT_EQ(0, std::memcmp(y_bf16.data(), y_f16.data(), y_f16.size() * 4))
          << isa_name(isa) << " rows " << n_rows;
      expect_close_to_reference(inexact, x, n_rows, y_exact, false,
                                label_of(isa, TensorType::kF16, b.n_out, b.n_in, n_rows));
    }
  }
}

// The attention's softmax step: each score scaled, each row's max raised to its largest,
// each element e^(x * scale - max) within a few ulp of std::exp, the same bits whatever n,
// its row, the number of rows and the ISA, and each row's sum its elements added in order
// (16 rows and more: AVX-512 sums sixteen at a time as the lanes of a transposed block).
TEST(Kernels, ScaledExpSumsAreElementwiseAndSumInOrder) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> score(-60.f, 16.f);
  constexpr int64_t kStride = 48;
  constexpr float kScale = 0.5f;
  constexpr int kMaxRows = 37;
  std::vector<float> x(kMaxRows * kStride);
  for (float& v : x) v = score(rng);
  // Per row: the running max it starts from (below, inside and above the scores' range).
  const std::vector<float> starts = {-INFINITY, 3.f, 20.f, -5.f, 7.5f, -INFINITY, 1.f, 9.f, 0.f};
  std::vector<float> start(kMaxRows);
  for (int h = 0; h < kMaxRows; ++h) start[h] = starts[(h * 5) % starts.size()];
  for (Isa isa : runnable_isas()) {
    IsaScope scope(isa);
    for (int n_rows : {1, 3, 4, 5, 9, 16, 21, kMaxRows}) {
      for (int64_t n : {1, 5, 16, 17, 41}) {
        std::vector<float> y = x, max(start.begin(), start.begin() + n_rows), sums(n_rows, -1.f);
        scaled_exp_sums(y.data(), kStride, n_rows, n, kScale, max.data(), sums.data());
        for (int h = 0; h < n_rows; ++h) {
          const float* in = &x[h * kStride];
          float m = start[h];
          for (int64_t i = 0; i < n; ++i) m = std::max(m, in[i] * kScale);
          ASSERT_EQ(max[h], m) << isa_name(isa) << " row " << h << " n " << n;
          float expected_sum = 0;
          for (int64_t i = 0; i < n; ++i) {
            // The element alone, in a row of one, gives the same bits.
            float one = in[i], one_max = m, one_sum = 0;
            scaled_exp_sums(&one, 1, 1, 1, kScale, &one_max, &one_sum);
            ASSERT_EQ(y[h * kStride + i], one) << isa_name(isa) << " row " << h << " n " << n;
            const double exact = std::exp(static_cast<double>(in[i] * kScale - m));
            EXPECT_NEAR(one, exact, 4e-7 * exact + 1e-37) << in[i];
            expected_sum += one;
          }
          EXPECT_EQ(sums[h], expected_sum) << isa_name(isa) << " row " << h << " n " << n;
          for (int64_t i = n; i < kStride; ++i) ASSERT_EQ(y[h * kStride + i], x[h * kStride + i]);
        }
      }
    }
  }
}

TEST(Kernels, MatmulWritesOnlyItsOutputs) {
  ThreadPool pool(2);
  for (Isa isa : runnable_isas()) {
    IsaScope scope(isa);
    const Matrix w = random_matrix(TensorType::kF32, 70, 40, 3);
    const PackedWeights packed = PackedWeights::pack(w.source());
    const auto x = normal_floats(3 * 40, 4);
    std::vector<float> y(3 * 70 + 64, 123.f);
    matmul(pool, packed, x.data(), 3, y.data());
    for (size_t i = 3 * 70; i < y.size(); ++i) ASSERT_EQ(y[i], 123.f) << isa_name(isa);
  }
}

TEST(Kernels, ConcatenatedSourcesGiveEachSourcesOutputsBitForBit) {
  ThreadPool pool(2);
  for (Isa isa : runnable_isas()) {
    IsaScope scope(isa);
    for (TensorType type : kAllTypes) {
      const int64_t n_in = 64;
      const Matrix a = random_matrix(type, 5, n_in, 1);
      const Matrix b = random_matrix(type, 70, n_in, 2);
      const Matrix c = random_matrix(type, 30, n_in, 3);
      const WeightSource sources[] = {a.source(), b.source(), c.source()};
      const PackedWeights fused = PackedWeights::pack(sources);
      ASSERT_EQ(fused.n_out(), 105);
      const int64_t n_rows = 9;
      const auto x = normal_floats(n_rows * n_in, 5);
      std::vector<float> y(n_rows * 105);
      matmul(pool, fused, x.data(), n_rows, y.data());
      int64_t offset = 0;
      for (const Matrix* m : {&a, &b, &c}) {
        std::vector<float> alone(n_rows * m->n_out);
        matmul(pool, PackedWeights::pack(m->source()), x.data(), n_rows, alone.data());
        for (int64_t r = 0; r < n_rows; ++r) {
          ASSERT_EQ(0, std::memcmp(&y[r * 105 + offset], &alone[r * m->n_out], m->n_out * 4))
              << label_of(isa, type, m->n_out, n_in, n_rows) << " row " << r;
        }
        offset += m->n_out;
      }
    }
  }
}

// Sources of several types (llama-quantize's Q4_K_M gives some layers' attn_v Q8_0 or
// Q6_K beside Q5_0 or Q4_K attn_q/attn_k) keep each run of one type in its own form: the
// memory of the parts packed alone, and each output the bits of its part alone, whatever
// the batch and the thread count.
TEST(Kernels, MixedTypeSourcesAreMultipliedEachInItsOwnForm) {
  ThreadPool pool1(1), pool3(3);
  const int64_t n_in = 256;
  const Matrix mats[] = {
      random_matrix(TensorType::kQ5_0, 20, n_in, 1), random_matrix(TensorType::kQ5_0, 12, n_in, 2),
      random_matrix(TensorType::kQ8_0, 16, n_in, 3), random_matrix(TensorType::kQ4_K, 24, n_in, 4),
      random_matrix(TensorType::kBF16, 8, n_in, 5)};
  std::vector<WeightSource> sources;
  for (const Matrix& m : mats) sources.push_back(m.source());
  const PackedWeights fused = PackedWeights::pack(sources);
  // The runs alone: Q5_0 (both), Q8_0, Q4_K, BF16.
  const std::vector<std::pair<size_t, size_t>> runs = {{0, 2}, {2, 1}, {3, 1}, {4, 1}};
  std::vector<PackedWeights> alone;
  size_t bytes = 0;
  for (auto [first, count] : runs) {
    alone.push_back(PackedWeights::pack(std::span(sources).subspan(first, count)));
    bytes += alone.back().bytes();
  }
  EXPECT_EQ(fused.bytes(), bytes);
  EXPECT_EQ(fused.n_out(), 80);
  const int64_t max_rows = 33;
  const auto x = normal_floats(max_rows * n_in, 8);
  for (int64_t n_rows : {int64_t{1}, int64_t{5}, max_rows}) {
    for (ThreadPool* pool : {&pool1, &pool3}) {
      std::vector<float> y(n_rows * 80);
      matmul(*pool, fused, x.data(), n_rows, y.data());
      int64_t offset = 0;
      for (const PackedWeights& part : alone) {
        std::vector<float> want(n_rows * part.n_out());
        matmul(*pool, part, x.data(), n_rows, want.data());
        for (int64_t r = 0; r < n_rows; ++r) {
          ASSERT_EQ(0, std::memcmp(&y[r * 80 + offset], &want[r * part.n_out()], part.n_out() * 4))
              << "rows " << n_rows << " row " << r << " part at " << offset;
        }
        offset += part.n_out();
      }
    }
  }
}

// Quantized parts that multiply the same activations (Q5_0 and Q8_0 over Q8_0; Q4_K and Q6_K
// over Q8_K) run as one job, the activations quantized once and each part writing its columns
// of y (detail::quant_pieces_fit): every output keeps the bits of its part alone, on every
// ISA, for streamed, lane, interleaved and tile batches and on one and three threads. Parts
// of different activation formats (Q5_0 beside Q4_K) still go one after another.
TEST(Kernels, QuantizedPartsOfOneActivationFormatRunAsOneJobWithTheirOwnBits) {
  ThreadPool pool1(1), pool3(3);
  struct Case {
    int64_t n_in;
    std::vector<std::pair<TensorType, int64_t>> parts;  // type and outputs, in order
    bool one_job;
  };
  const Case cases[] = {
      {576, {{TensorType::kQ5_0, 32}, {TensorType::kQ5_0, 16}, {TensorType::kQ8_0, 48}}, true},
      {512, {{TensorType::kQ4_K, 64}, {TensorType::kQ6_K, 32}, {TensorType::kQ4_K, 16}}, true},
      {512, {{TensorType::kQ5_0, 32}, {TensorType::kQ4_K, 32}}, false},
  };
  for (const Case& c : cases) {
    std::vector<Matrix> mats;
    for (size_t i = 0; i < c.parts.size(); ++i)
      mats.push_back(random_matrix(c.parts[i].first, c.parts[i].second, c.n_in, 30 + i));
    std::vector<WeightSource> sources;
    for (const Matrix& m : mats) sources.push_back(m.source());
    const PackedWeights fused = PackedWeights::pack(sources);
    EXPECT_EQ(detail::quant_pieces_fit(fused.impl()), c.one_job);
    EXPECT_EQ(fused.impl().pieces.size(), c.one_job ? fused.impl().parts.size() : 0);
    const int64_t n_out = fused.n_out(), max_rows = 33;
    const auto x = normal_floats(max_rows * c.n_in, 9);
    for (Isa isa : runnable_isas()) {
      IsaScope scope(isa);
      for (int64_t n_rows : {int64_t{1}, int64_t{5}, int64_t{16}, max_rows}) {
        for (ThreadPool* pool : {&pool1, &pool3}) {
          std::vector<float> y(n_rows * n_out);
          matmul(*pool, fused, x.data(), n_rows, y.data());
          int64_t col = 0;
          for (const Matrix& m : mats) {
            const PackedWeights alone = PackedWeights::pack(m.source());
            std::vector<float> want(n_rows * m.n_out);
            matmul(*pool, alone, x.data(), n_rows, want.data());
            for (int64_t r = 0; r < n_rows; ++r)
              ASSERT_EQ(0, std::memcmp(&y[r * n_out + col], &want[r * m.n_out], m.n_out * 4))
                  << isa_name(isa) << " rows " << n_rows << " row " << r << " part at " << col;
            col += m.n_out;
          }
        }
      }
    }
  }
}

// The other quantized types take the integer path: tests/runner/kernels/quant_matmul_test.cpp.

// A guided split's ranges (packed_impl.h) cover every part once, and each thread slot's
// rounds follow one another: the range a thread is most likely to claim next starts where
// its last one ended, which is what lets panel_loop prefetch across the end of a range.
TEST(Kernels, GuidedRangesCoverEveryPartOnceAndEachSlotsRoundsFollowOn) {
  for (int64_t threads = 1; threads <= 4; ++threads) {
    const int64_t n_tasks = detail::kGuidedRoundCount * threads;
    const int64_t parts = detail::kGuidedParts * threads;
    std::vector<int> covered(parts, 0);
    for (int64_t t = 0; t < n_tasks; ++t) {
      const int64_t begin = detail::guided_start(t, threads), end = detail::guided_end(t, threads);
      ASSERT_LT(begin, end) << "task " << t << " of " << n_tasks;
      for (int64_t p = begin; p < end; ++p) ++covered[p];
      if (t + threads < n_tasks) {
        EXPECT_EQ(end, detail::guided_start(t + threads, threads));
      }
      // A range ends inside its slot's region until the last round.
      EXPECT_EQ(end % detail::kGuidedParts == 0, t + threads >= n_tasks) << "task " << t;
    }
    EXPECT_EQ(std::count(covered.begin(), covered.end(), 1), parts) << threads << " threads";
    // In units: the ranges of n_units tile [0, n_units) whatever the rounding.
    for (int64_t n_units : {1, 7, 48, 1001}) {
      std::vector<int> units(n_units, 0);
      for (int64_t t = 0; t < n_tasks; ++t) {
        for (int64_t u = detail::range_start(t, n_tasks, n_units, threads);
             u < detail::range_end(t, n_tasks, n_units, threads); ++u)
          ++units[u];
      }
      EXPECT_EQ(std::count(units.begin(), units.end(), 1), n_units) << n_units << " units";
    }
  }
}

// THE LAW: a row's result does not depend on n_rows, on the other rows' contents,
// or on the thread count.
TEST(Kernels, RowsAreBitIdenticalWhateverTheBatchAndThreadCount) {
  ThreadPool pool1(1), pool2(2), pool3(3);
  ThreadPool* pools[] = {&pool1, &pool2, &pool3};
  for (Isa isa : runnable_isas()) {
    IsaScope scope(isa);
    for (TensorType type : kAllTypes) {
      const int64_t n_in = type == TensorType::kQ8_0 ? 96 : 90;
      const int64_t n_out = 200;
      const Matrix w = random_matrix(type, n_out, n_in, 11);
      const PackedWeights packed = PackedWeights::pack(w.source());
      const int64_t max_rows = 37;
      const auto x = normal_floats(max_rows * n_in, 12);
      // Reference: each row alone, one thread.
      std::vector<float> alone(max_rows * n_out);
      for (int64_t r = 0; r < max_rows; ++r) {
        matmul(pool1, packed, &x[r * n_in], 1, &alone[r * n_out]);
      }
      const auto noise = normal_floats(max_rows * n_in, 13);
      for (ThreadPool* pool : pools) {
        for (int64_t n_rows = 1; n_rows <= max_rows; ++n_rows) {
          std::vector<float> y(n_rows * n_out);
          matmul(*pool, packed, x.data(), n_rows, y.data());
          ASSERT_EQ(0, std::memcmp(y.data(), alone.data(), y.size() * 4))
              << label_of(isa, type, n_out, n_in, n_rows) << ", " << pool->size() << " threads";
          // The same rows moved to the end of a batch of other activations.
          const int64_t shift = max_rows - n_rows;
          std::vector<float> mixed(noise.begin(), noise.end());
          std::copy(x.begin(), x.begin() + n_rows * n_in, mixed.begin() + shift * n_in);
          std::vector<float> ym(max_rows * n_out);
          matmul(*pool, packed, mixed.data(), max_rows, ym.data());
          ASSERT_EQ(0, std::memcmp(&ym[shift * n_out], alone.data(), n_rows * n_out * 4))
              << label_of(isa, type, n_out, n_in, n_rows) << " after " << shift << " other rows, "
              << pool->size() << " threads";
        }
      }
    }
  }
}

// The same law where k spans several k-chunks: AVX2's (tile_loop.h, chunked_panels: a
// batch of up to two tiles resumes each pass from the sums stored in y) and AVX-512's F16
// chunks widened once for four row tiles or more (widened_panels: the first tile's pass
// stores them, the others read them). An odd n_in (a last BF16 pair with one k; a last
// partial chunk), a cut last panel, and every batch size around the tiles.
TEST(Kernels, RowsSpanningSeveralKChunksAreBitIdenticalInEveryBatch) {
  ThreadPool pool1(1), pool2(2);
  for (Isa isa : runnable_isas()) {
    IsaScope scope(isa);
    for (TensorType type : kAllTypes) {
      const int64_t n_in = type == TensorType::kQ8_0 ? 800 : 1001, n_out = 136, max_rows = 26;
      const Matrix w = random_matrix(type, n_out, n_in, 21);
      const PackedWeights packed = PackedWeights::pack(w.source());
      const auto x = normal_floats(max_rows * n_in, 22);
      std::vector<float> alone(max_rows * n_out);
      for (int64_t r = 0; r < max_rows; ++r) {
        matmul(pool1, packed, &x[r * n_in], 1, &alone[r * n_out]);
      }
      for (ThreadPool* pool : {&pool1, &pool2}) {
        for (int64_t n_rows = 2; n_rows <= max_rows; ++n_rows) {
          std::vector<float> y(n_rows * n_out);
          matmul(*pool, packed, x.data(), n_rows, y.data());
          ASSERT_EQ(0, std::memcmp(y.data(), alone.data(), y.size() * 4))
              << label_of(isa, type, n_out, n_in, n_rows) << ", " << pool->size() << " threads";
        }
      }
    }
  }
}

// The same law for a prefill's batch: hundreds of rows, which the AMX loop takes in chunks of
// 256 (amx/matmul.cpp) and splits between threads within a panel's rows; a row's sums are
// those it gets alone. A cut last panel, and a k of 19 blocks of 16 pairs, the last partial.
TEST(Kernels, RowsOfALongBatchAreTheirOneRowBits) {
  ThreadPool pool1(1), pool2(2);
  for (Isa isa : runnable_isas()) {
    IsaScope scope(isa);
    for (TensorType type : {TensorType::kBF16, TensorType::kF32}) {
      const int64_t n_in = 600, n_out = 150, n_rows = 300;
      const Matrix w = random_matrix(type, n_out, n_in, 31);
      const PackedWeights packed = PackedWeights::pack(w.source());
      const auto x = normal_floats(n_rows * n_in, 32);
      std::vector<float> y(n_rows * n_out), alone(n_rows * n_out);
      for (int64_t r = 0; r < n_rows; r += 7)
        matmul(pool1, packed, &x[r * n_in], 1, &alone[r * n_out]);
      for (ThreadPool* pool : {&pool1, &pool2}) {
        matmul(*pool, packed, x.data(), n_rows, y.data());
        for (int64_t r = 0; r < n_rows; r += 7) {
          ASSERT_EQ(0, std::memcmp(&y[r * n_out], &alone[r * n_out], n_out * 4))
              << label_of(isa, type, n_out, n_in, n_rows) << " row " << r << ", " << pool->size()
              << " threads";
        }
      }
      expect_close_to_reference(w, x, n_rows, y, uses_bf16_activations(type),
                                label_of(isa, type, n_out, n_in, n_rows));
    }
  }
}

TEST(Kernels, PackedWeightsRejectMismatchedSources) {
  const Matrix a = random_matrix(TensorType::kF32, 4, 32, 1);
  const Matrix b = random_matrix(TensorType::kF32, 4, 64, 1);
  const WeightSource sources[] = {a.source(), b.source()};
  EXPECT_THROW(PackedWeights::pack(sources), std::invalid_argument);
  EXPECT_THROW(PackedWeights::pack(std::span<const WeightSource>()), std::invalid_argument);
  const WeightSource q8_partial{TensorType::kQ8_0, a.bytes.data(), 1, 48};
  EXPECT_THROW(PackedWeights::pack(q8_partial), std::invalid_argument);
}

TEST(Kernels, DequantizeRowWidensEachType) {
  const float f32[3] = {1.5f, -2.f, 0.25f};
  float out[32];
  dequantize_row(TensorType::kF32, f32, out, 3);
  EXPECT_EQ(out[2], 0.25f);
  const uint16_t f16[2] = {0x3c00, 0xc000};  // 1, -2
  dequantize_row(TensorType::kF16, f16, out, 2);
  EXPECT_EQ(out[0], 1.f);
  EXPECT_EQ(out[1], -2.f);
  const uint16_t bf16[2] = {0x3f80, 0xbfc0};  // 1, -1.5
  dequantize_row(TensorType::kBF16, bf16, out, 2);
  EXPECT_EQ(out[0], 1.f);
  EXPECT_EQ(out[1], -1.5f);
  gguf::BlockQ8_0 block{};
  block.d = 0x3800;  // 0.5
  for (int j = 0; j < 32; ++j) block.qs[j] = static_cast<int8_t>(j - 16);
  dequantize_row(TensorType::kQ8_0, &block, out, 32);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(out[j], 0.5f * (j - 16));
}

TEST(Kernels, DotAndAxpyMatchFloat64OnEveryIsaAndLength) {
  for (Isa isa : runnable_isas()) {
    IsaScope scope(isa);
    for (int64_t n = 0; n <= 70; ++n) {
      const auto a = normal_floats(n, 1 + n);
      const auto b = normal_floats(n, 100 + n);
      double ref = 0, magnitude = 0;
      for (int64_t i = 0; i < n; ++i) {
        ref += static_cast<double>(a[i]) * b[i];
        magnitude += std::abs(static_cast<double>(a[i]) * b[i]);
      }
      EXPECT_NEAR(dot(a.data(), b.data(), n), ref, n * 0x1p-24 * magnitude + 1e-30)
          << isa_name(isa) << " n=" << n;
      std::vector<float> y(b);
      axpy(0.75f, a.data(), y.data(), n);
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_EQ(y[i], std::fma(0.75f, a[i], b[i])) << isa_name(isa) << " n=" << n;
      }
    }
  }
}

TEST(Kernels, BlockAttentionKernelsEqualTheirOneRowForms) {
  for (Isa isa : runnable_isas()) {
    IsaScope scope(isa);
    for (int64_t n : {7, 16, 64, 70}) {
      const int64_t stride = n + 5, count = 13;
      const auto q = normal_floats(n, 3);
      const auto k = normal_floats(stride * count, 4);
      const auto w = normal_floats(count, 5);
      std::vector<float> scores(count);
      dot_rows(q.data(), k.data(), stride, count, n, scores.data());
      for (int64_t j = 0; j < count; ++j) {
        double ref = 0, magnitude = 0;
        for (int64_t i = 0; i < n; ++i) {
          ref += static_cast<double>(q[i]) * k[j * stride + i];
          magnitude += std::abs(static_cast<double>(q[i]) * k[j * stride + i]);
        }
        ASSERT_NEAR(scores[j], ref, n * 0x1p-24 * magnitude) << isa_name(isa);
        // A row's score does not depend on which rows share its call.
        float alone = 0;
        dot_rows(q.data(), k.data() + j * stride, stride, 1, n, &alone);
        ASSERT_EQ(scores[j], alone) << isa_name(isa) << " j=" << j;
      }
      std::vector<float> y = normal_floats(n, 6), expected = y;
      axpy_rows(w.data(), k.data(), stride, count, n, y.data());
      for (int64_t j = 0; j < count; ++j) axpy(w[j], k.data() + j * stride, expected.data(), n);
      ASSERT_EQ(y, expected) << isa_name(isa) << " n=" << n;
    }
  }
}

TEST(Kernels, SiluMulMatchesFloat64AndIgnoresTheLength) {
  for (Isa isa : runnable_isas()) {
    IsaScope scope(isa);
    // Gates across the whole range the forward pass meets, saturated ends included.
    std::vector<float> gate, up;
    for (float g = -120.0f; g <= 120.0f; g += 0.0625f) gate.push_back(g);
    for (size_t i = 0; i < gate.size(); ++i) up.push_back(0.5f + static_cast<float>(i % 7));
    const int64_t n = static_cast<int64_t>(gate.size());
    std::vector<float> out(n);
    silu_mul(gate.data(), up.data(), out.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      const double g = gate[i];
      const double ref = g / (1.0 + std::exp(-g)) * up[i];
      EXPECT_NEAR(out[i], ref, 4e-7 * std::abs(ref) + 1e-30) << isa_name(isa) << " g=" << g;
    }
    // An element's result does not depend on how long the row is (vector tails included).
    for (int64_t len : {1, 5, 8, 15, 16, 17, 33}) {
      std::vector<float> part(len);
      silu_mul(gate.data() + 1000, up.data() + 1000, part.data(), len);
      for (int64_t i = 0; i < len; ++i) ASSERT_EQ(part[i], out[1000 + i]) << isa_name(isa);
    }
  }
}

// The KV cache's narrowing against the scalar converters, bit for bit, on every ISA: the
// values around each rounding decision (ties, one ulp either side, with an even and an odd
// kept bit), F16's subnormals and overflow edge, infinities, NaNs with payloads, and random
// bit patterns; at lengths that leave every tail size.
TEST(Kernels, NarrowingToF16AndBf16MatchesTheScalarConvertersBitForBit) {
  std::vector<uint32_t> bits = {0u,          0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u,
                                0xffc00001u, 0x7f800001u, 0x7fa00000u, 0xff812345u, 0x477ff000u,
                                0x477fefffu, 0x477fe000u, 0x38800000u, 0x33000000u, 0x33000001u,
                                0x32ffffffu, 0x387fc000u, 0x7f7fffffu};
  std::mt19937 rng(5);
  for (int i = 0; i < 4096; ++i) {
    const uint32_t high = rng() & 0xffff0000u;
    for (uint32_t low : {0x7fffu, 0x8000u, 0x8001u, 0x17fffu, 0x18000u}) bits.push_back(high + low);
    // F16: the 13 dropped bits at the tie, around it, and in the subnormal range.
    const uint32_t base = (rng() & 0x80000000u) | ((rng() % 40 + 100) << 23) | (rng() & 0x7fc000u);
    for (uint32_t low : {0xfffu, 0x1000u, 0x1001u, 0x3000u}) bits.push_back(base + low);
    bits.push_back(static_cast<uint32_t>(rng()));
  }
  std::vector<float> x(bits.size());
  std::memcpy(x.data(), bits.data(), bits.size() * sizeof(float));
  for (Isa isa : runnable_isas()) {
    IsaScope scope(isa);
    for (int64_t len : {int64_t{1}, int64_t{7}, int64_t{8}, int64_t{15}, int64_t{17},
                        static_cast<int64_t>(x.size())}) {
      std::vector<uint16_t> half(len, 0xdead), bfloat(len, 0xdead);
      to_half(x.data(), half.data(), len);
      to_bfloat(x.data(), bfloat.data(), len);
      for (int64_t i = 0; i < len; ++i) {
        ASSERT_EQ(half[i], half_from_float(x[i]))
            << isa_name(isa) << " F16 of bits " << std::hex << bits[i];
        ASSERT_EQ(bfloat[i], bfloat_from_float(x[i]))
            << isa_name(isa) << " BF16 of bits " << std::hex << bits[i];
      }
    }
    // Nothing past n is written.
    std::vector<uint16_t> out(9, 0xbeef);
    to_half(x.data(), out.data(), 3);
    to_bfloat(x.data(), out.data() + 4, 3);
    EXPECT_EQ(out[3], 0xbeef);
    EXPECT_EQ(out[7], 0xbeef);
    EXPECT_EQ(out[8], 0xbeef);
  }
}

// AVX512-BF16's dot only where it outruns the F32 FMAs (AMD), else BF16 widened to F32 on the
// AVX-512 level (Intel without AMX); TANDEM_ISA names any level up to the CPU's.
TEST(Kernels, TheBf16DotIsChosenOnlyWhereItOutrunsTheFmas) {
  EXPECT_EQ(choose_isa(Isa::kAvx512Bf16, true, nullptr), Isa::kAvx512Bf16);
  EXPECT_EQ(choose_isa(Isa::kAvx512Bf16, false, nullptr), Isa::kAvx512);
  EXPECT_EQ(choose_isa(Isa::kAvx512Bf16, false, ""), Isa::kAvx512);
  EXPECT_EQ(choose_isa(Isa::kAmx, false, nullptr), Isa::kAmx);  // the tiles beat both
  EXPECT_EQ(choose_isa(Isa::kAvx512, false, nullptr), Isa::kAvx512);
  EXPECT_EQ(choose_isa(Isa::kAvx2, true, nullptr), Isa::kAvx2);
  EXPECT_EQ(choose_isa(Isa::kAvx512Bf16, false, "avx512bf16"), Isa::kAvx512Bf16);
  EXPECT_EQ(choose_isa(Isa::kAmx, false, "avx512bf16"), Isa::kAvx512Bf16);
  EXPECT_EQ(choose_isa(Isa::kAvx512Bf16, true, "amx"), Isa::kAvx512Bf16);  // at most the CPU's
  EXPECT_EQ(choose_isa(Isa::kAvx512Bf16, true, "avx2"), Isa::kAvx2);
  EXPECT_EQ(choose_isa(Isa::kAvx512Bf16, false, "nonsense"), Isa::kAvx512);
  // This machine, unless TANDEM_ISA says otherwise, follows the rule.
  if (!std::getenv("TANDEM_ISA") && hardware_isa() == Isa::kAvx512Bf16) {
    const Isa saved = detected_isa();
    EXPECT_EQ(saved, bf16_dot_outruns_fma() ? Isa::kAvx512Bf16 : Isa::kAvx512);
  }
}

TEST(Kernels, TestHookRefusesAnIsaThisCpuLacksAndNamesEveryIsa) {
  const auto isas = runnable_isas();
  ASSERT_FALSE(isas.empty());
  EXPECT_EQ(isas.front(), Isa::kAvx2);  // the floor always runs
  EXPECT_STREQ(isa_name(Isa::kAvx512Bf16), "avx512bf16");
  EXPECT_STREQ(isa_name(Isa::kAmx), "amx");
  const Isa saved = detected_isa();
  if (isas.back() != Isa::kAmx) {
    EXPECT_FALSE(set_isa_for_testing(Isa::kAmx));
    EXPECT_EQ(detected_isa(), saved);
  }
}

// With one thread the line printed and the fractions divided by it read one bandwidth:
// it was measured twice, and `generate` printed "30.0 GB/s", then "30.3 GB/s of 29.7".
TEST(Ceilings, OneThreadsReadBandwidthIsOneFigure) {
  ThreadPool pool(1);
  const MachineCeilings c = measure_ceilings(pool, 0.01, int64_t{4} << 20);
  EXPECT_EQ(c.threads, 1);
  EXPECT_GT(c.read_gbps_one_thread, 0);
  EXPECT_EQ(c.read_gbps_all_threads, c.read_gbps_one_thread);
  char expected[64];
  std::snprintf(expected, sizeof expected, "memory read %.1f GB/s", c.read_gbps_all_threads);
  EXPECT_NE(describe(c).find(expected), std::string::npos) << describe(c);
}

}  // namespace
}  // namespace tandem::kernels::TANDEM_UNITY_ID
