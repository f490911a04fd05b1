// The quantized matmul (runner/kernels/quant_matmul.h): against a plain reference (weights
// dequantized exactly, activations through the reference quantizer, a double dot), bit for
// bit across the portable, AVX2 and AVX-512 VNNI forms, and independent of the batch.
#include <gtest/gtest.h>

#include <cpuid.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "runner/gguf/quant.h"
#include "runner/kernels/kernels.h"
#include "runner/kernels/quant_matmul.h"
#include "runner/kernels/quantize_q8.h"
#include "runner/util/float16.h"
#include "tests/common/isa_scope.h"

namespace tandem::kernels::TANDEM_UNITY_ID {
namespace {

using detail::ActFormat;
using detail::QuantKind;
using gguf::TensorType;

struct TypeCase {
  TensorType type;
  QuantKind kind;
  ActFormat format;
  std::vector<int> half_offsets;  // byte offsets of the block's F16 scales
};

const std::vector<TypeCase>& type_cases() {
  static const std::vector<TypeCase> cases = {
      {TensorType::kQ4_0, QuantKind::kQ4_0, ActFormat::kQ8_0, {0}},
      {TensorType::kQ4_1, QuantKind::kQ4_1, ActFormat::kQ8_1, {0, 2}},
      {TensorType::kQ5_0, QuantKind::kQ5_0, ActFormat::kQ8_0, {0}},
      {TensorType::kQ5_1, QuantKind::kQ5_1, ActFormat::kQ8_1, {0, 2}},
      {TensorType::kQ2_K, QuantKind::kQ2_K, ActFormat::kQ8_K, {80, 82}},
      {TensorType::kQ3_K, QuantKind::kQ3_K, ActFormat::kQ8_K, {108}},
      {TensorType::kQ4_K, QuantKind::kQ4_K, ActFormat::kQ8_K, {0, 2}},
      {TensorType::kQ5_K, QuantKind::kQ5_K, ActFormat::kQ8_K, {0, 2}},
      {TensorType::kQ6_K, QuantKind::kQ6_K, ActFormat::kQ8_K, {208}},
      {TensorType::kIQ4_NL, QuantKind::kIq4Nl, ActFormat::kQ8_0, {0}},
      {TensorType::kIQ4_XS, QuantKind::kIq4Xs, ActFormat::kQ8_K, {0}},
      {TensorType::kQ8_0, QuantKind::kQ8_0, ActFormat::kQ8_0, {0}},
  };
  return cases;
}

// Random blocks: every quant and packed scale byte uniformly random (so extreme quants and
// 6-bit scales occur), F16 scales random in magnitude and sign, one block in eight with
// its scales zero and one in eight with the largest quant-scale byte patterns.
std::vector<uint8_t> random_rows(const TypeCase& c, int64_t n_out, int64_t n_in, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.f, 1.f);
  const int64_t block_bytes = gguf::block_bytes(c.type);
  const int64_t n_blocks = n_out * n_in / gguf::block_elements(c.type);
  std::vector<uint8_t> bytes(n_blocks * block_bytes);
  for (auto& b : bytes) b = static_cast<uint8_t>(rng());
  for (int64_t i = 0; i < n_blocks; ++i) {
    uint8_t* block = bytes.data() + i * block_bytes;
    const int kind = static_cast<int>(rng() % 8);
    if (kind == 1) {
      for (int64_t j = 0; j < block_bytes; ++j) block[j] = 0xff;
    }
    for (int offset : c.half_offsets) {
      const float scale = kind == 0 ? 0.f : 0.01f * normal(rng);
      const uint16_t h = half_from_float(scale);
      std::memcpy(block + offset, &h, 2);
    }
  }
  return bytes;
}

// Activations with the awkward cases: a zero block, a block whose largest magnitude is
// negative, halves exactly on rounding ties, one large block.
std::vector<float> random_activations(int64_t n_rows, int64_t n_in, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::vector<float> x(n_rows * n_in);
  for (auto& v : x) v = normal(rng);
  for (int64_t m = 0; m < n_rows; ++m) {
    float* row = x.data() + m * n_in;
    if (m % 3 == 0)
      for (int k = 0; k < 32; ++k) row[k] = 0.f;
    if (m % 3 == 1) row[5] = -40.f;
    if (m % 4 == 2)
      for (int k = 0; k < 32; ++k) row[n_in - 32 + k] = 127.f * 0.5f * static_cast<float>(k % 5);
    if (m % 5 == 3)
      for (int k = 0; k < 16; ++k) row[k] *= 1e4f;
  }
  return x;
}

// Q4_1/Q5_1 against Q8_1: ggml takes a block's min times the activations' stored sum s (an
// F16 rounding of d * sum(q)), not times the sum of the rounded values.
double with_q8_1_sums(const uint8_t* row, size_t row_bytes, const std::vector<float>& wf,
                      const detail::QuantizedActivations& act, int64_t m) {
  const int64_t nb = static_cast<int64_t>(wf.size()) / 32;
  const size_t block_bytes = row_bytes / nb;
  double sum = 0;
  for (int64_t b = 0; b < nb; ++b) {
    uint16_t min_half;  // Q4_1 and Q5_1 blocks both start with d, m
    std::memcpy(&min_half, row + b * block_bytes + 2, 2);
    const double min = float_from_half(min_half), d = act.d[m * nb + b];
    for (int64_t k = 0; k < 32; ++k)
      sum += (double{wf[b * 32 + k]} - min) * d * act.q[(m * nb + b) * 32 + k];
    sum += min * act.s[m * nb + b];
  }
  return sum;
}

// The reference: the weights dequantized exactly, the activations as the reference
// quantizer rounds them (d * q), multiplied in double. `magnitude` bounds what float
// rounding of the per-block products can reach.
struct Reference {
  std::vector<double> y, magnitude;
};

Reference reference(const TypeCase& c, const std::vector<uint8_t>& w, int64_t n_out, int64_t n_in,
                    const std::vector<float>& x, int64_t n_rows) {
  detail::QuantizedActivations act;
  detail::quantize_rows(c.format, x.data(), n_rows, n_in, act);
  const int block = detail::act_block(c.format);
  std::vector<double> xq(n_rows * n_in);
  for (int64_t i = 0; i < n_rows * n_in; ++i) xq[i] = double{act.d[i / block]} * act.q[i];
  const size_t row_bytes = w.size() / n_out;
  Reference r{std::vector<double>(n_rows * n_out), std::vector<double>(n_rows * n_out)};
  std::vector<float> wf(n_in);
  for (int64_t o = 0; o < n_out; ++o) {
    gguf::dequantize_row(c.type, w.data() + o * row_bytes, n_in, wf.data());
    double w_max = 0;
    for (float v : wf) w_max = std::max(w_max, std::abs(double{v}));
    for (int64_t m = 0; m < n_rows; ++m) {
      double sum = 0, x_abs = 0;
      for (int64_t k = 0; k < n_in; ++k) {
        sum += double{wf[k]} * xq[m * n_in + k];
        x_abs += std::abs(xq[m * n_in + k]);
      }
      if (c.format == ActFormat::kQ8_1)
        sum = with_q8_1_sums(w.data() + o * row_bytes, row_bytes, wf, act, m);
      r.y[m * n_out + o] = sum;
      // A weight's scale and min parts are each at most twice its largest value.
      r.magnitude[m * n_out + o] = 4 * w_max * x_abs;
    }
  }
  return r;
}

std::string name_of(const TypeCase& c) { return gguf::type_name(c.type); }

std::vector<float> run_loop(detail::QuantLoop loop, const TypeCase& c,
                            const std::vector<uint8_t>& w, int64_t n_out, int64_t n_in,
                            const std::vector<float>& x, int64_t n_rows) {
  detail::QuantizedActivations act;
  detail::quantize_rows(c.format, x.data(), n_rows, n_in, act);
  std::vector<float> y(n_rows * n_out, std::nanf(""));
  const detail::QuantMatmulArgs args{c.kind, w.data(), w.size() / n_out, n_in,
                                     n_out,  act.view, n_rows,           y.data()};
  loop(args, 0, n_out);
  return y;
}

bool cpu_has_vnni() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512vnni");
}

bool cpu_has_avx_vnni() {  // CPUID leaf 7 subleaf 1, EAX bit 4 (clang's builtin lacks it)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) && (eax & (1u << 4)) != 0;
}

// AMX-INT8 (CPUID leaf 7, EDX bit 25) with the tile state granted (Isa::kAmx runnable).
bool cpu_runs_amx_int8() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) || (edx & (1u << 25)) == 0) return false;
  const auto isas = testing::runnable_isas();
  return std::find(isas.begin(), isas.end(), Isa::kAmx) != isas.end();
}

TEST(QuantMatmul, EveryTypeMatchesTheDequantizedReference) {
  for (const TypeCase& c : type_cases()) {
    for (int64_t n_in : {int64_t{256}, int64_t{768}, int64_t{2304}}) {
      const int64_t n_out = 19, n_rows = 7;
      const auto w = random_rows(c, n_out, n_in, 17 + static_cast<uint32_t>(n_in));
      const auto x = random_activations(n_rows, n_in, 3);
      const Reference ref = reference(c, w, n_out, n_in, x, n_rows);
      const auto y = run_loop(detail::portable_quant_loop(), c, w, n_out, n_in, x, n_rows);
      const double blocks = static_cast<double>(n_in / 16);
      for (size_t i = 0; i < y.size(); ++i) {
        ASSERT_NEAR(y[i], ref.y[i], (blocks + 4) * 0x1p-23 * ref.magnitude[i] + 1e-30)
            << name_of(c) << " n_in " << n_in << " output " << i;
      }
    }
  }
}

// The vector forms this CPU can run, by name: `avx2` (the AVX2 row form unless given
// another AVX2 loop), then AVX-512 VNNI's where the CPU has it.
std::vector<std::pair<const char*, detail::QuantLoop>> vector_loops(
    detail::QuantLoop avx2 = detail::avx2_quant_loop()) {
  std::vector<std::pair<const char*, detail::QuantLoop>> loops = {{"avx2", avx2}};
  // AVX-VNNI serves the row forms; the AVX2 lane form has no such twin.
  if (avx2 == detail::avx2_quant_loop()) {
    if (cpu_has_avx_vnni())
      loops.push_back({"avxvnni", detail::avxvnni_quant_loop()});
    else
      std::cout << "  (no AVX-VNNI here: that form is not checked)\n";
  }
  if (cpu_has_vnni())
    loops.push_back({"avx512vnni", detail::avx512vnni_quant_loop()});
  else
    std::cout << "  (no AVX512-VNNI here: that form is not checked)\n";
  // The tile form (interleaved blocks of 32; anything else it hands to the VNNI loop).
  if (cpu_runs_amx_int8())
    loops.push_back({"amx", detail::amx_quant_loop()});
  else
    std::cout << "  (no AMX-INT8 here: that form is not checked)\n";
  return loops;
}

TEST(QuantMatmul, PortableAvx2AndAvx512AreBitIdentical) {
  const auto loops = vector_loops();
  for (const TypeCase& c : type_cases()) {
    // 256 * 9 + 256: the vector loops' full steps and their tails.
    for (int64_t n_in : {int64_t{256}, int64_t{512}, int64_t{2560}}) {
      const int64_t n_out = 23, n_rows = 5;
      const auto w = random_rows(c, n_out, n_in, 5 + static_cast<uint32_t>(n_in));
      const auto x = random_activations(n_rows, n_in, 9);
      const auto portable = run_loop(detail::portable_quant_loop(), c, w, n_out, n_in, x, n_rows);
      for (const auto& [name, loop] : loops) {
        const auto y = run_loop(loop, c, w, n_out, n_in, x, n_rows);
        ASSERT_EQ(0, std::memcmp(y.data(), portable.data(), y.size() * 4))
            << name << " " << name_of(c) << " n_in " << n_in;
      }
    }
  }
  // Legacy types with a row length that leaves a 32-value tail in every vector loop.
  for (const TypeCase& c : type_cases()) {
    if (gguf::block_elements(c.type) != 32) continue;
    const auto w = random_rows(c, 9, 32 * 11, 3);
    const auto x = random_activations(3, 32 * 11, 4);
    const auto portable = run_loop(detail::portable_quant_loop(), c, w, 9, 32 * 11, x, 3);
    for (const auto& [name, loop] : loops) {
      const auto y = run_loop(loop, c, w, 9, 32 * 11, x, 3);
      ASSERT_EQ(0, std::memcmp(y.data(), portable.data(), y.size() * 4)) << name << name_of(c);
    }
  }
}

// Blocks at the edges of every type's range: each block all 0x00 bytes, all 0xff, nibbles
// alternating 0x0f / 0xf0, or random; its F16 scales zero, tiny, or random in sign and size.
std::vector<uint8_t> extreme_rows(const TypeCase& c, int64_t n_out, int64_t n_in, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.f, 1.f);
  const int64_t block_bytes = gguf::block_bytes(c.type);
  const int64_t n_blocks = n_out * n_in / gguf::block_elements(c.type);
  std::vector<uint8_t> bytes(n_blocks * block_bytes);
  for (int64_t i = 0; i < n_blocks; ++i) {
    uint8_t* block = bytes.data() + i * block_bytes;
    const int pattern = static_cast<int>(rng() % 4);
    for (int64_t j = 0; j < block_bytes; ++j) {
      const uint8_t fixed[3] = {0x00, 0xff, static_cast<uint8_t>(j % 2 ? 0xf0 : 0x0f)};
      block[j] = pattern < 3 ? fixed[pattern] : static_cast<uint8_t>(rng());
    }
    for (int offset : c.half_offsets) {
      const int size = static_cast<int>(rng() % 4);
      const float scale = size == 0 ? 0.f : size == 1 ? 1e-7f : 0.05f * normal(rng);
      const uint16_t h = half_from_float(scale);
      std::memcpy(block + offset, &h, 2);
    }
  }
  return bytes;
}

// Activations with the quantizers' extremes: rows at +-127 (one sign, alternating), a row
// of zeros, and random rows.
std::vector<float> extreme_activations(int64_t n_rows, int64_t n_in, uint32_t seed) {
  auto x = random_activations(n_rows, n_in, seed);
  for (int64_t m = 0; m < n_rows; ++m) {
    float* row = x.data() + m * n_in;
    for (int64_t k = 0; k < n_in; ++k) {
      if (m % 4 == 1) row[k] = 3.f;
      if (m % 4 == 2) row[k] = k % 2 ? -3.f : 3.f;
      if (m % 8 == 3) row[k] = 0.f;
    }
  }
  return x;
}

// The AVX2 and AVX-512 VNNI forms decode the blocks with vector instructions and take the
// integer dots from unsigned quants (quant_vector.h); the portable form unpacks every quant
// to an int8 and sums groups of 16 (quant_matmul.h). Both must give the same bits for every
// type, batch size and range of outputs, on the blocks' extremes.
TEST(QuantMatmul, VectorFormsEqualThePortableFormOnExtremeBlocksForEveryBatch) {
  const auto loops = vector_loops();
  for (const TypeCase& c : type_cases()) {
    const bool legacy = gguf::block_elements(c.type) == 32;
    // Legacy rows end in a span of every block count from 1 to 8 (576 in 2, 1568 in 1, 416
    // in 5): the 512-bit form takes blocks in pairs and a lone last one alone.
    const std::vector<int64_t> legacy_widths{32, 96, 128, 192, 224, 256, 416, 576, 1568};
    for (int64_t n_in : legacy ? legacy_widths : std::vector<int64_t>{256, 1536}) {
      const int64_t n_out = 13;
      const auto w = extreme_rows(c, n_out, n_in, 7 + static_cast<uint32_t>(n_in));
      for (int64_t n_rows : {int64_t{1}, int64_t{2}, int64_t{3}, int64_t{4}, int64_t{5}, int64_t{6},
                             int64_t{7}, int64_t{8}, int64_t{9}, int64_t{16}, int64_t{33}}) {
        const auto x = extreme_activations(n_rows, n_in, 11 + static_cast<uint32_t>(n_rows));
        detail::QuantizedActivations act;
        detail::quantize_rows(c.format, x.data(), n_rows, n_in, act);
        auto run = [&](detail::QuantLoop loop, int64_t begin, int64_t end) {
          std::vector<float> y(n_rows * n_out, std::nanf(""));
          const detail::QuantMatmulArgs args{c.kind, w.data(), w.size() / n_out, n_in,
                                             n_out,  act.view, n_rows,           y.data()};
          loop(args, begin, end);
          return y;
        };
        const auto portable = run(detail::portable_quant_loop(), 0, n_out);
        for (const auto& [name, loop] : loops) {
          const auto y = run(loop, 0, n_out);
          ASSERT_EQ(0, std::memcmp(y.data(), portable.data(), y.size() * 4))
              << name << " " << name_of(c) << " n_in " << n_in << " rows " << n_rows;
          // A range that starts and ends inside a group of decoded rows.
          const auto part = run(loop, 1, n_out - 2);
          for (int64_t m = 0; m < n_rows; ++m)
            for (int64_t o = 1; o < n_out - 2; ++o)
              ASSERT_EQ(__builtin_bit_cast(uint32_t, part[m * n_out + o]),
                        __builtin_bit_cast(uint32_t, portable[m * n_out + o]))
                  << name << " " << name_of(c) << " n_in " << n_in << " row " << m << " out " << o;
        }
      }
    }
  }
}

// Through the public matmul: every ISA the CPU runs gives the portable bits, and a row's
// result does not depend on how many rows come with it or on the thread count.
// 150 outputs keep every type as stored, 160 interleave Q4_0 and Q5_0 (and with VNNI, the
// K-quants and IQ4_XS: quant_interleave.h).
TEST(QuantMatmul, MatmulRowsAreBitIdenticalAcrossIsasBatchesAndThreads) {
  ThreadPool pool1(1), pool3(3);
  for (const TypeCase& c : type_cases()) {
    for (const int64_t n_out : {int64_t{150}, int64_t{160}}) {
      const int64_t n_in = 512, max_rows = 33;
      const auto w = random_rows(c, n_out, n_in, 41);
      const PackedWeights packed = PackedWeights::pack(WeightSource{c.type, w.data(), n_out, n_in});
      EXPECT_EQ(packed.bytes(), w.size()) << "kept in its blocks: " << name_of(c);
      const auto x = random_activations(max_rows, n_in, 42);
      const auto portable = run_loop(detail::portable_quant_loop(), c, w, n_out, n_in, x, max_rows);
      for (Isa isa : testing::runnable_isas()) {
        testing::IsaScope scope(isa);
        for (int64_t n_rows : {int64_t{1}, int64_t{2}, int64_t{3}, int64_t{4}, int64_t{5},
                               int64_t{8}, int64_t{9}, int64_t{16}, max_rows}) {
          for (ThreadPool* pool : {&pool1, &pool3}) {
            std::vector<float> y(n_rows * n_out);
            matmul(*pool, packed, x.data(), n_rows, y.data());
            ASSERT_EQ(0, std::memcmp(y.data(), portable.data(), y.size() * 4))
                << isa_name(isa) << " " << name_of(c) << " rows " << n_rows;
          }
        }
        // Row 20 alone equals row 20 of the batch.
        std::vector<float> one(n_out);
        matmul(pool3, packed, x.data() + 20 * n_in, 1, one.data());
        ASSERT_EQ(0, std::memcmp(one.data(), portable.data() + 20 * n_out, n_out * 4));
      }
    }
  }
}

// Rows interleaved by sixteen (quant_interleave.h: Q4_0 and Q5_0 for every vector form, every
// other type for VNNI): the layout gives every row's blocks back as stored, and every form
// reading it (the portable one through those rows, the vector ones through their own kernel,
// quant_interleaved.h and quant_interleaved_k.h, or AVX2 through the portable form for the
// VNNI-only types) gives the portable bits of the stored rows, for every batch (the 512-bit
// kernel's row counts 1-8 and the runs of 8 after them) and for ranges that start and end
// inside a group of sixteen, on the blocks' extremes.
TEST(QuantMatmul, InterleavedRowsGiveTheStoredRowsBitsInEveryFormBatchAndRange) {
  auto loops = vector_loops();
  loops.push_back({"portable", detail::portable_quant_loop()});
  using detail::QuantKind;
  for (const TypeCase& c : type_cases()) {
    const bool every_form = c.kind == QuantKind::kQ4_0 || c.kind == QuantKind::kQ5_0;
    const bool legacy = gguf::block_elements(c.type) == 32;
    const auto widths =
        legacy ? std::vector<int64_t>{32, 576, 2048} : std::vector<int64_t>{256, 1536};
    for (int64_t n_in : widths) {
      const int64_t n_out = 48;
      ASSERT_TRUE(detail::interleaves(c.kind, n_out, true));
      ASSERT_EQ(every_form, detail::interleaves(c.kind, n_out, false));
      ASSERT_FALSE(detail::interleaves(c.kind, n_out + 4, true));
      const auto w = extreme_rows(c, n_out, n_in, 5 + static_cast<uint32_t>(n_in));
      std::vector<uint8_t> inter(w.size());
      detail::interleave_rows(c.kind, w.data(), n_out, n_in, inter.data());
      const size_t row_bytes = w.size() / n_out;
      std::vector<uint8_t> row(row_bytes);
      for (int64_t o = 0; o < n_out; ++o) {
        detail::deinterleave_row(c.kind, inter.data(), n_in, o, row.data());
        ASSERT_EQ(0, std::memcmp(row.data(), w.data() + o * row_bytes, row_bytes))
            << name_of(c) << " n_in " << n_in << " row " << o;
      }
      for (int64_t n_rows = 1; n_rows <= 17; n_rows += n_rows < 9 ? 1 : 8) {
        const auto x = extreme_activations(n_rows, n_in, 13 + static_cast<uint32_t>(n_rows));
        detail::QuantizedActivations act;
        detail::quantize_rows(c.format, x.data(), n_rows, n_in, act);
        auto run = [&](detail::QuantLoop loop, bool interleaved, int64_t begin, int64_t end) {
          std::vector<float> y(n_rows * n_out, std::nanf(""));
          const detail::QuantMatmulArgs args{c.kind,     interleaved ? inter.data() : w.data(),
                                             row_bytes,  n_in,
                                             n_out,      act.view,
                                             n_rows,     y.data(),
                                             interleaved};
          loop(args, begin, end);
          return y;
        };
        const auto stored = run(detail::portable_quant_loop(), false, 0, n_out);
        for (const auto& [name, loop] : loops) {
          const auto y = run(loop, true, 0, n_out);
          ASSERT_EQ(0, std::memcmp(y.data(), stored.data(), y.size() * 4))
              << name << " " << name_of(c) << " n_in " << n_in << " rows " << n_rows;
          const auto part = run(loop, true, 5, 37);  // inside the first and third groups
          for (int64_t m = 0; m < n_rows; ++m) {
            for (int64_t o = 0; o < n_out; ++o) {
              const bool in = o >= 5 && o < 37;
              ASSERT_EQ(in, !std::isnan(part[m * n_out + o])) << name << " out " << o;
              if (!in) continue;
              ASSERT_EQ(__builtin_bit_cast(uint32_t, part[m * n_out + o]),
                        __builtin_bit_cast(uint32_t, stored[m * n_out + o]))
                  << name << " " << name_of(c) << " n_in " << n_in << " row " << m;
            }
          }
        }
      }
    }
  }
}

// The tile forms decode a range's groups of sixteen rows in chunks that ramp up (1, 2, 4, 8
// groups, quant_tiles.h; one group at a time for the blocks of 32 at one or two tiles of
// rows) while each chunk's passes ask for the next one's lines: over 17 groups, with two and
// with four tiles of activation rows, every range (whole, starting and ending inside a
// group, the ramp cut short) must give the stored rows' portable bits.
TEST(QuantMatmul, TileFormsChunksOfEveryRangeGiveThePortableBits) {
  if (!cpu_runs_amx_int8()) GTEST_SKIP() << "no AMX-INT8 here: the tile forms are not run";
  for (const TypeCase& c : type_cases()) {
    const int64_t n_in = gguf::block_elements(c.type) == 32 ? 576 : 512;
    const int64_t n_out = 17 * 16;
    ASSERT_TRUE(detail::interleaves(c.kind, n_out, true));
    const auto w = random_rows(c, n_out, n_in, 23 + static_cast<uint32_t>(n_in));
    std::vector<uint8_t> inter(w.size());
    detail::interleave_rows(c.kind, w.data(), n_out, n_in, inter.data());
    for (const int64_t n_rows : {int64_t{21}, int64_t{49}}) {
      const auto x = random_activations(n_rows, n_in, 29);
      detail::QuantizedActivations act;
      detail::quantize_rows(c.format, x.data(), n_rows, n_in, act);
      const auto stored = run_loop(detail::portable_quant_loop(), c, w, n_out, n_in, x, n_rows);
      for (const auto& [begin, end] : std::vector<std::pair<int64_t, int64_t>>{
               {0, n_out}, {37, 250}, {16, 16 * 8}, {100, n_out}, {3, 29}}) {
        constexpr uint32_t kUnwritten = 0x7fc0dead;  // a NaN no output computes here
        std::vector<float> y(n_rows * n_out, __builtin_bit_cast(float, kUnwritten));
        const detail::QuantMatmulArgs args{c.kind,   inter.data(), w.size() / n_out, n_in, n_out,
                                           act.view, n_rows,       y.data(),         true};
        detail::amx_quant_loop()(args, begin, end);
        for (int64_t m = 0; m < n_rows; ++m) {
          for (int64_t o = 0; o < n_out; ++o) {
            const bool in = o >= begin && o < end;
            ASSERT_EQ(__builtin_bit_cast(uint32_t, y[m * n_out + o]),
                      in ? __builtin_bit_cast(uint32_t, stored[m * n_out + o]) : kUnwritten)
                << name_of(c) << " range " << begin << "-" << end << " rows " << n_rows << " row "
                << m << " out " << o;
          }
        }
      }
    }
  }
}

// The lane forms (quant_lanes.h: AVX2's 8 rows per vector, AVX-512 VNNI's 16) take
// activations laid out across rows and sum each block's products per row in a lane; they
// must give the portable bits for every type (IQ4 signed, the rest unsigned), batch (one
// vector of rows, one and a part, two, and more), range of outputs (groups of 4 and runs of
// 16 cut short at either end) and row length (legacy rows ending in a short span).
TEST(QuantMatmul, LaneFormEqualsThePortableFormForEveryTypeBatchAndRange) {
  for (const auto& [name, loop] : vector_loops(detail::avx2_lanes_quant_loop())) {
    for (const TypeCase& c : type_cases()) {
      const bool legacy = gguf::block_elements(c.type) == 32;
      for (int64_t n_in :
           legacy ? std::vector<int64_t>{64, 576} : std::vector<int64_t>{256, 1536}) {
        const int64_t n_out = 37;
        const auto w = extreme_rows(c, n_out, n_in, 3 + static_cast<uint32_t>(n_in));
        for (int64_t n_rows : {int64_t{1}, int64_t{3}, int64_t{4}, int64_t{5}, int64_t{8},
                               int64_t{12}, int64_t{16}, int64_t{17}, int64_t{40}}) {
          const auto x = extreme_activations(n_rows, n_in, 5 + static_cast<uint32_t>(n_rows));
          const auto portable =
              run_loop(detail::portable_quant_loop(), c, w, n_out, n_in, x, n_rows);
          detail::QuantizedActivations act;
          detail::quantize_rows(c.format, x.data(), n_rows, n_in, act, true);
          ASSERT_EQ(act.view.lanes, 16 * ((n_rows + 15) / 16));
          for (auto [begin, end] :
               {std::pair<int64_t, int64_t>{0, n_out}, {3, n_out - 5}, {17, 18}}) {
            std::vector<float> y(n_rows * n_out, std::nanf(""));
            const detail::QuantMatmulArgs args{c.kind, w.data(), w.size() / n_out, n_in,
                                               n_out,  act.view, n_rows,           y.data()};
            loop(args, begin, end);
            for (int64_t m = 0; m < n_rows; ++m)
              for (int64_t o = 0; o < n_out; ++o) {
                const float want = o >= begin && o < end ? portable[m * n_out + o] : std::nanf("");
                ASSERT_EQ(__builtin_bit_cast(uint32_t, y[m * n_out + o]),
                          __builtin_bit_cast(uint32_t, want))
                    << name << " " << name_of(c) << " n_in " << n_in << " rows " << n_rows
                    << " range " << begin << ".." << end << " row " << m << " out " << o;
              }
          }
        }
      }
    }
  }
}

// The lane layout holds each row's quantized values (their int8 bytes), scales and sums where
// ActRows says, and zeros in the padding lanes, also when the buffers held a larger batch.
TEST(QuantMatmul, LaneLayoutHoldsEveryRowsValuesAndZeroPadding) {
  for (ActFormat format : {ActFormat::kQ8_0, ActFormat::kQ8_1, ActFormat::kQ8_K}) {
    {
      const int64_t n_in = 512;
      detail::QuantizedActivations act;
      const auto big = random_activations(40, n_in, 1);
      detail::quantize_rows(format, big.data(), 40, n_in, act, true);
      const int64_t n_rows = 5;
      const auto x = random_activations(n_rows, n_in, 2);
      detail::quantize_rows(format, x.data(), n_rows, n_in, act, true);
      // The lane layout is written alone: the rows' own values come from the row-major form.
      detail::QuantizedActivations rows;
      detail::quantize_rows(format, x.data(), n_rows, n_in, rows);
      const detail::ActRows& v = act.view;
      const detail::ActRows& r = rows.view;
      ASSERT_EQ(v.lanes, 16);
      const int64_t block = detail::act_block(format), nb = n_in / block;
      for (int64_t lane = 0; lane < v.lanes; ++lane) {
        const int64_t m = lane;
        const bool real = m < n_rows;
        for (int64_t k = 0; k < n_in; ++k) {
          const int want = real ? static_cast<uint8_t>(r.q[m * n_in + k]) : 0;
          ASSERT_EQ(v.lane_q[(k / 4 * v.lanes + lane) * 4 + k % 4], want) << lane << " " << k;
        }
        for (int64_t b = 0; b < nb; ++b) {
          ASSERT_EQ(v.lane_d[b * v.lanes + lane], real ? r.d[m * nb + b] : 0.f);
          if (format == ActFormat::kQ8_K) {
            for (int g = 0; g < 16; ++g) {
              ASSERT_EQ(v.lane_bsum_pairs[((b * 8 + g / 2) * v.lanes + lane) * 2 + g % 2],
                        real ? r.bsums[(m * nb + b) * 16 + g] : 0);
            }
          } else {
            ASSERT_EQ(v.lane_qsum[b * v.lanes + lane], real ? r.qsum[m * nb + b] : 0);
          }
          if (format == ActFormat::kQ8_1) {
            ASSERT_EQ(v.lane_s[b * v.lanes + lane], real ? r.s[m * nb + b] : 0.f);
          }
        }
      }
    }
  }
}

// One vector quantizer's output (values, scales, sums and the lane layout) against the
// portable form's, bit for bit.
using Quantizer = void (*)(ActFormat, const float*, int64_t, int64_t,
                           detail::QuantizedActivations&);
void expect_same_lanes(const detail::ActRows& vec, const detail::ActRows& ref, ActFormat format,
                       int64_t n_in) {
  const int64_t lanes = vec.lanes, lane_blocks = lanes * n_in / detail::act_block(format);
  ASSERT_EQ(lanes, ref.lanes);
  EXPECT_EQ(0, std::memcmp(vec.lane_q, ref.lane_q, lanes * n_in));
  EXPECT_EQ(0, std::memcmp(vec.lane_d, ref.lane_d, lane_blocks * 4));
  if (format == ActFormat::kQ8_K) {
    EXPECT_EQ(0, std::memcmp(vec.lane_bsum_pairs, ref.lane_bsum_pairs, lane_blocks * 32));
  } else {
    EXPECT_EQ(0, std::memcmp(vec.lane_qsum, ref.lane_qsum, lane_blocks * 4));
  }
  if (format == ActFormat::kQ8_1) {
    EXPECT_EQ(0, std::memcmp(vec.lane_s, ref.lane_s, lane_blocks * 4));
  }
}

// lanes false: the row-major form; true: the lane layout alone.
void expect_quantizer_is_portable(Quantizer quantize, ActFormat format, const std::vector<float>& x,
                                  int64_t n_rows, int64_t n_in, bool lanes) {
  detail::QuantizedActivations vec, ref;
  // The lane layout where asked: each vector quantizer writes it by its own code.
  detail::prepare_rows(format, n_rows, n_in, vec, lanes);
  detail::prepare_rows(format, n_rows, n_in, ref, lanes);
  const int64_t n_blocks = n_rows * n_in / detail::act_block(format);
  quantize(format, x.data(), 0, n_blocks, vec);
  detail::quantize_blocks_portable(format, x.data(), 0, n_blocks, ref);
  auto same = [](const auto& a, const auto& b, size_t n) {
    return n == 0 || std::memcmp(a.data(), b.data(), n * sizeof(a[0])) == 0;
  };
  const size_t nb = static_cast<size_t>(n_blocks);
  if (lanes) return expect_same_lanes(vec.view, ref.view, format, n_in);
  EXPECT_TRUE(same(vec.q, ref.q, static_cast<size_t>(n_rows * n_in))) << static_cast<int>(format);
  EXPECT_TRUE(same(vec.d, ref.d, nb)) << static_cast<int>(format);
  if (format == ActFormat::kQ8_1) {
    EXPECT_TRUE(same(vec.s, ref.s, nb));
  }
  if (format == ActFormat::kQ8_K) {
    EXPECT_TRUE(same(vec.bsums, ref.bsums, nb * 16));
  } else {
    EXPECT_TRUE(same(vec.qsum, ref.qsum, nb));
  }
}

// Activations are quantized by vector code, AVX2 (avx2/quantize_q8.cpp) or AVX-512
// (avx512/quantize_q8.cpp) as the kernels run; each must give the portable quantizer's bits
// on ordinary rows and on the edges: rounding ties, NaN and infinities, zeros of both signs,
// subnormals, blocks whose largest magnitude is so small that 1 / d overflows (each x * id
// infinite: ggml's conversion on x86 gives 0 there, and so must all three forms), and the
// largest magnitude present with both signs (Q8_K keeps the first). Each form runs where
// the CPU has its instructions (AVX2 on every CPU tandem runs on).
TEST(QuantMatmul, VectorQuantizersEqualThePortableOnes) {
  const int64_t n_rows = 24, n_in = 512;
  auto x = extreme_activations(n_rows, n_in, 8);
  std::mt19937 rng(3);
  const float specials[] = {0.5f, -0.5f, 1.5f,     -2.5f,     126.5f,        -0.f,  1e-40f,
                            -3.f, 3.f,   INFINITY, -INFINITY, std::nanf(""), 63.5f, 1e30f};
  for (int64_t m = 12; m < n_rows; ++m) {
    float* row = x.data() + m * n_in;
    for (int64_t k = 0; k < n_in; ++k) {
      if (rng() % 3 == 0) row[k] = specials[rng() % std::size(specials)];
      if (m == 12) row[k] = static_cast<float>(k % 255) - 127.f;  // every tie, scale 1
      if (m == 13) row[k] = k % 2 ? 0.5f : -0.5f;
      if (m == 14) row[k] = (k % 3 == 0 ? -1.5e-39f : 1e-40f) * static_cast<float>(k % 5);
    }
  }
  std::vector<std::pair<const char*, Quantizer>> forms = {{"avx2", &detail::avx2_quantize_blocks}};
  if (detected_isa() != Isa::kAvx2) forms.emplace_back("avx512", &detail::avx512_quantize_blocks);
  for (const auto& [form, quantize] : forms) {
    for (ActFormat format : {ActFormat::kQ8_0, ActFormat::kQ8_1, ActFormat::kQ8_K}) {
      SCOPED_TRACE(std::string(form) + ", format " + std::to_string(static_cast<int>(format)));
      expect_quantizer_is_portable(quantize, format, x, n_rows, n_in, false);
      expect_quantizer_is_portable(quantize, format, x, n_rows, n_in, true);
    }
  }
}

TEST(QuantMatmul, ItsHalfConversionIsTheOneConverters) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if (((h >> 10) & 0x1f) == 0x1f) continue;  // Inf and NaN: never a block's scale
    const auto bits = static_cast<uint16_t>(h);
    ASSERT_EQ(__builtin_bit_cast(uint32_t, detail::half(bits)),
              __builtin_bit_cast(uint32_t, float_from_half(bits)))
        << h;
  }
}

TEST(QuantMatmul, Q8QuantizersFollowGgmlsReference) {
  std::vector<float> x(256, 0.f);
  detail::QuantizedActivations act;
  // Q8_K: the value of largest magnitude maps to -127 (d negative when it is positive),
  // ties round to even, and per-16 sums are kept.
  x[0] = 127.f;  // the scale is -1: x[k] scales to -x[k] exactly
  x[1] = -63.5f;
  x[2] = 0.5f;
  x[3] = 1.5f;
  x[4] = 2.5f;
  detail::quantize_rows(ActFormat::kQ8_K, x.data(), 1, 256, act);
  EXPECT_EQ(act.q[0], -127);
  EXPECT_EQ(act.q[1], 64);
  EXPECT_EQ(act.q[2], 0);
  EXPECT_EQ(act.q[3], -2);
  EXPECT_EQ(act.q[4], -2);
  EXPECT_EQ(act.d[0], -1.f);
  EXPECT_EQ(act.bsums[0], -127 + 64 - 2 - 2);
  // An all-zero block: d = 0 and zero sums.
  std::vector<float> zeros(256, 0.f);
  detail::quantize_rows(ActFormat::kQ8_K, zeros.data(), 1, 256, act);
  EXPECT_EQ(act.d[0], 0.f);
  EXPECT_EQ(act.bsums[3], 0);
  // Q8_0: d = amax / 127 rounded to F16, halves round away from zero (roundf).
  std::vector<float> b(32, 0.f);
  b[0] = 127.f;
  b[1] = -2.5f;
  b[2] = 0.5f;
  detail::quantize_rows(ActFormat::kQ8_0, b.data(), 1, 32, act);
  EXPECT_EQ(act.d[0], 1.f);
  EXPECT_EQ(act.q[0], 127);
  EXPECT_EQ(act.q[1], -3);
  EXPECT_EQ(act.q[2], 1);
  // Ties either side of zero and just below one.
  b[3] = -0.5f;
  b[4] = 1.49999988f;
  b[5] = -126.5f;
  b[6] = std::nanf("");  // skipped by the maximum, quantized to 0
  detail::quantize_rows(ActFormat::kQ8_0, b.data(), 1, 32, act);
  EXPECT_EQ(act.q[3], -1);
  EXPECT_EQ(act.q[4], 1);
  EXPECT_EQ(act.q[5], -127);
  EXPECT_EQ(act.q[6], 0);
  EXPECT_EQ(act.d[0], 1.f);
  // Random blocks against roundf itself.
  const auto r = random_activations(8, 256, 77);
  detail::quantize_rows(ActFormat::kQ8_0, r.data(), 8, 256, act);
  for (int64_t i = 0; i < 8 * 256; ++i) {
    const float d = float_from_half(half_from_float(act.d[i / 32]));
    float amax = 0.f;
    for (int j = 0; j < 32; ++j) amax = std::fmax(amax, std::fabs(r[i / 32 * 32 + j]));
    const float unrounded = amax / 127.f;
    ASSERT_EQ(act.d[i / 32], d);
    ASSERT_EQ(act.q[i],
              static_cast<int>(std::roundf(r[i] * (unrounded != 0.f ? 1.f / unrounded : 0.f))))
        << i;
  }
  std::fill(b.begin() + 3, b.begin() + 7, 0.f);
  // Q8_1 keeps s = d * sum(q), rounded to F16.
  detail::quantize_rows(ActFormat::kQ8_1, b.data(), 1, 32, act);
  EXPECT_EQ(act.s[0], 125.f);
}

}  // namespace
}  // namespace tandem::kernels::TANDEM_UNITY_ID
