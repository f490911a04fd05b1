// The sampler's kernels: the scalar log and exp are accurate, the noise follows its
// definition, and the AVX-512 path returns the portable path's results bit for bit (so a
// Sampler picks the same tokens on every CPU).
#include "runner/sampler/kernels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "runner/sampler/philox.h"
#include "runner/sampler/sampler.h"
#include "tests/runner/sampler/sampler_test_support.h"

namespace tandem::sampler_kernels::TANDEM_UNITY_ID {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

std::vector<float> messy_row(int32_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 4.0f);
  std::vector<float> row(n);
  for (float& v : row) v = normal(rng);
  if (n > 10) {
    row[3] = -kInf;
    row[7] = std::numeric_limits<float>::quiet_NaN();
    row[n - 2] = row[1];  // a tie
  }
  return row;
}

#define REQUIRE_AVX512() \
  if (avx512() == nullptr) GTEST_SKIP() << "this CPU has no AVX-512"

// The vector tables this CPU has (AVX2, AVX-512), each held to the portable one's bits.
std::vector<const Kernels*> vector_tables() {
  std::vector<const Kernels*> tables;
  for (const Kernels* k : {avx2(), avx512()}) {
    if (k != nullptr) tables.push_back(k);
  }
  return tables;
}
const char* table_name(const Kernels* k) {
  return k == avx512() ? "avx512" : k == avx2() ? "avx2" : "portable";
}
#define REQUIRE_VECTOR_TABLES() \
  if (vector_tables().empty()) GTEST_SKIP() << "this CPU has neither AVX2 nor AVX-512"

TEST(SamplerKernels, LogIsAccurateToAboutOneUlp) {
  for (float x = 0x1p-24f; x < 20.0f; x = x * 1.0001f + 1e-30f) {
    const double exact = std::log(double(x));
    EXPECT_NEAR(log_approx(x), exact, 2.5e-7 * std::max(1.0, std::abs(exact))) << x;
  }
  EXPECT_EQ(log_approx(1.0f), 0.0f);
}

TEST(SamplerKernels, ExpIsAccurateAndZeroFarBelowTheTop) {
  for (float d = 0.0f; d > -86.0f; d -= 0.001f) {
    const double exact = std::exp(double(d));
    EXPECT_NEAR(exp_shifted(d), exact, 3e-7 * exact) << d;
  }
  EXPECT_EQ(exp_shifted(0.0f), 1.0f);
  EXPECT_EQ(exp_shifted(-86.5f), 0.0f);
  EXPECT_EQ(exp_shifted(-kInf), 0.0f);
  EXPECT_EQ(exp_shifted(std::numeric_limits<float>::quiet_NaN()), 0.0f);
}

// The logprobs' exp: the argument's rounding (d * 32 / ln 2 in float, and the constant's)
// adds ~1.2e-7 * |d| of relative error, but a term that far down weighs e^d in Z, so log Z
// stays within ~1e-6 (a float ulp at log Z ~ 10; measured worst here 4.5e-7 at d = -5.8).
// Up to 64 above 0 too: the scan's sum is shifted by a guess that the max may pass.
TEST(SamplerKernels, TableExpIsAccurateAndZeroFarBelowTheTop) {
  for (float d = 64.0f; d > -86.0f; d -= 0.001f) {
    const double exact = std::exp(double(d));
    EXPECT_NEAR(exp_table(d), exact, (3e-7 + 1.2e-7 * std::abs(d)) * exact) << d;
  }
  EXPECT_EQ(exp_table(0.0f), 1.0f);
  EXPECT_EQ(exp_table(-86.5f), 0.0f);
  EXPECT_EQ(exp_table(-kInf), 0.0f);
  EXPECT_EQ(exp_table(std::numeric_limits<float>::quiet_NaN()), 0.0f);
}

TEST(SamplerKernels, NoiseIsMinusLogMinusLogOfThePhiloxUniform) {
  const uint64_t seed = 0x0123456789abcdefull;
  const int64_t position = (int64_t{5} << 32) + 77;
  for (int32_t id : {0, 1, 2, 3, 4, 5, 31999, 128255}) {
    const auto block =
        philox4x32_10({static_cast<uint32_t>(id) / 4, 0u, 77u, 5u}, {0x89abcdefu, 0x01234567u});
    const double u = uniform_open01(block[id % 4]);
    EXPECT_NEAR(gumbel_noise(seed, position, id), -std::log(-std::log(u)), 2e-6) << id;
  }
}

TEST(SamplerKernels, NoiseStaysFiniteAtTheUniformsEnds) {
  const float lowest = -log_approx(-log_approx(uniform_open01(0u)));
  const float highest = -log_approx(-log_approx(uniform_open01(0xffffffffu)));
  EXPECT_NEAR(lowest, -std::log(-std::log(0x1p-24)), 1e-5);
  EXPECT_NEAR(highest, -std::log(-std::log1p(-0x1p-24)), 1e-4);
  EXPECT_TRUE(std::isfinite(lowest) && std::isfinite(highest));
}

TEST(SamplerKernels, VectorNoiseMatchesTheScalarDefinitionBitForBit) {
  REQUIRE_VECTOR_TABLES();
  for (const Kernels* table : vector_tables()) {
    SCOPED_TRACE(table_name(table));
    const Kernels& vec = *table;
    std::mt19937 rng(5);
    std::vector<int32_t> ids(1003);
    for (auto& id : ids) id = static_cast<int32_t>(rng() % 200000);
    for (uint64_t seed : {uint64_t{0}, uint64_t{1}, ~uint64_t{0}, uint64_t{0xdeadbeefcafe}}) {
      for (int64_t position : {int64_t{0}, int64_t{1}, int64_t{1} << 40, int64_t{-1}}) {
        std::vector<float> a(ids.size()), b(ids.size());
        portable().noise(seed, position, ids.data(), static_cast<int32_t>(ids.size()), a.data());
        vec.noise(seed, position, ids.data(), static_cast<int32_t>(ids.size()), b.data());
        for (size_t j = 0; j < ids.size(); ++j) {
          ASSERT_EQ(std::bit_cast<uint32_t>(a[j]), std::bit_cast<uint32_t>(b[j])) << j;
          ASSERT_EQ(a[j], gumbel_noise(seed, position, ids[j]));
        }
      }
    }
  }
}

// The logprobs' partials: every path gives the portable one's bits, whatever the row's
// length against the panel, with -inf, NaN, +inf, -0 and whole panels of -inf in the row;
// and their Z is the row's, against a double-precision sum.
TEST(SamplerKernels, PanelPartialsMatchThePortableOnesAndSumTheRow) {
  std::vector<const Kernels*> tables = vector_tables();
  tables.push_back(&portable());
  for (int32_t n : {1, 8, 15, 16, 17, 63, 64, 65, 100, 130, 1000, 32000, 49152, 128256}) {
    for (int variant = 0; variant < 3; ++variant) {
      std::vector<float> row = messy_row(n, static_cast<uint32_t>(n + variant));
      if (variant == 1 && n > 130) {
        for (int32_t i = 64; i < 128; ++i) row[i] = -kInf;  // a panel with nothing finite
        row[0] = -0.0f;
        row[129] = 0.0f;
      }
      if (variant == 2) row[n / 2] = kInf;
      const int32_t panels = logit_panels(n);
      std::vector<float> max_a(panels), sum_a(panels);
      portable().panel_partials(row.data(), n, max_a.data(), sum_a.data());
      const float top = *std::max_element(max_a.begin(), max_a.end());
      for (const Kernels* k : tables) {
        SCOPED_TRACE(std::string(table_name(k)) + " n " + std::to_string(n) + " variant " +
                     std::to_string(variant));
        std::vector<float> max_b(panels), sum_b(panels);
        k->panel_partials(row.data(), n, max_b.data(), sum_b.data());
        for (int32_t p = 0; p < panels; ++p) {
          ASSERT_EQ(std::bit_cast<uint32_t>(max_a[p]), std::bit_cast<uint32_t>(max_b[p])) << p;
          ASSERT_EQ(std::bit_cast<uint32_t>(sum_a[p]), std::bit_cast<uint32_t>(sum_b[p])) << p;
        }
        // A run of panels computed apart (as a matmul task's share) gives the same bits.
        if (panels > 2) {
          std::vector<float> max_c(panels), sum_c(panels);
          k->panel_partials(row.data() + kLogitPanel, n - kLogitPanel, max_c.data() + 1,
                            sum_c.data() + 1);
          for (int32_t p = 1; p < panels; ++p) {
            ASSERT_EQ(std::bit_cast<uint32_t>(max_a[p]), std::bit_cast<uint32_t>(max_c[p]));
            ASSERT_EQ(std::bit_cast<uint32_t>(sum_a[p]), std::bit_cast<uint32_t>(sum_c[p]));
          }
        }
        if (std::isinf(top)) continue;  // the sampler stops before Z there
        const float z = k->partials_z(max_a.data(), sum_a.data(), panels, top);
        ASSERT_EQ(
            std::bit_cast<uint32_t>(portable().partials_z(max_a.data(), sum_a.data(), panels, top)),
            std::bit_cast<uint32_t>(z));
        double exact = 0.0;
        for (float v : row) {
          if (!std::isnan(v)) exact += std::exp(double(v) - double(top));
        }
        EXPECT_NEAR(z, exact, 2e-6 * exact);
      }
    }
  }
}

TEST(SamplerKernels, VectorExpMatchesTheScalarDefinitionBitForBit) {
  REQUIRE_VECTOR_TABLES();
  for (const Kernels* vec : vector_tables()) {
    SCOPED_TRACE(table_name(vec));
    std::vector<float> z;
    for (float d = 1.0f; d > -90.0f; d -= 0.0037f) z.push_back(d);
    z.push_back(-kInf);
    z.push_back(std::numeric_limits<float>::quiet_NaN());
    std::vector<float> a(z.size()), b(z.size());
    const auto n = static_cast<int32_t>(z.size());
    portable().exp_shifted(z.data(), n, 1.0f, a.data());
    vec->exp_shifted(z.data(), n, 1.0f, b.data());
    for (size_t i = 0; i < z.size(); ++i) {
      ASSERT_EQ(std::bit_cast<uint32_t>(a[i]), std::bit_cast<uint32_t>(b[i])) << z[i];
    }
    // The table exp, one entry at a time through the partials' Z (a lone term, times 1,
    // folds with zeros).
    constexpr float kOne = 1.0f;
    for (size_t i = 0; i < z.size(); ++i) {
      ASSERT_EQ(std::bit_cast<uint32_t>(exp_table(z[i] - 1.0f)),
                std::bit_cast<uint32_t>(vec->partials_z(&z[i], &kOne, 1, 1.0f)))
          << z[i];
    }
  }
}

TEST(SamplerKernels, VectorRowKernelsMatchThePortableOnes) {
  REQUIRE_VECTOR_TABLES();
  for (const Kernels* table : vector_tables()) {
    SCOPED_TRACE(table_name(table));
    const Kernels& vec = *table;
    const Kernels& port = portable();
    for (int32_t n : {1, 2, 15, 16, 17, 63, 64, 65, 100, 1000, 32000, 128256}) {
      const std::vector<float> row = messy_row(n, static_cast<uint32_t>(n));
      for (float inv_t : {1.0f, 1.0f / 0.7f, 0.25f}) {
        std::vector<float> za = row, zb = row;
        const float max_a = port.scale_max(za.data(), n, inv_t);
        const float max_b = vec.scale_max(zb.data(), n, inv_t);
        ASSERT_EQ(std::bit_cast<uint32_t>(max_a), std::bit_cast<uint32_t>(max_b)) << n;
        ASSERT_EQ(0, std::memcmp(za.data(), zb.data(), sizeof(float) * n)) << n;
        ASSERT_EQ(port.argmax(za.data(), n), vec.argmax(za.data(), n)) << n;

        const float sum_a = port.z_sum(za.data(), n, max_a);
        ASSERT_EQ(std::bit_cast<uint32_t>(sum_a),
                  std::bit_cast<uint32_t>(vec.z_sum(za.data(), n, max_a)))
            << n;
        Ladder la, lb;
        port.ladder(za.data(), n, max_a, &la);
        vec.ladder(za.data(), n, max_a, &lb);
        for (int r = 0; r < kRungs; ++r) {
          ASSERT_NEAR(la.mass[r], lb.mass[r], 1e-3f * sum_a) << n << " rung " << r;
          if (n <= kLadderFullRows) {
            ASSERT_LE(la.mass[r], sum_a * 1.0001f);
          }
        }

        for (float threshold : {0.0f, -3.0f, -20.0f, -std::numeric_limits<float>::max()}) {
          std::vector<float> va(n + 16), vb(n + 16);
          std::vector<int32_t> ia(n + 16), ib(n + 16);
          const int32_t ca = port.collect(za.data(), n, max_a, threshold, va.data(), ia.data());
          const int32_t cb = vec.collect(za.data(), n, max_a, threshold, vb.data(), ib.data());
          ASSERT_EQ(ca, cb) << n << " " << threshold;
          for (int32_t i = 0; i < ca; ++i) {
            ASSERT_EQ(ia[i], ib[i]);
            ASSERT_EQ(va[i], vb[i]);
          }
        }
        for (uint64_t seed : {uint64_t{3}, uint64_t{1} << 33}) {
          ASSERT_EQ(port.gumbel_argmax(za.data(), n, -2, seed, 9),
                    vec.gumbel_argmax(za.data(), n, -2, seed, 9))
              << n << " seed " << seed;
        }
      }
    }
  }
}

TEST(SamplerKernels, NoiseCeilingBoundsTheNoise) {
  std::mt19937 rng(8);
  std::vector<uint32_t> bits = {0u, 1u, 0x1ffu, 0x200u, 0xfffffe00u, 0xfffffdffu, 0xffffffffu};
  for (int i = 0; i < 200000; ++i) bits.push_back(static_cast<uint32_t>(rng()));
  for (uint32_t b = 0; b < (1u << 14); ++b) bits.push_back(0xffffffffu - (b << 9));  // u near 1
  for (uint32_t b : bits) {
    const float g = gumbel_from_bits(b);
    ASSERT_LE(g, noise_ceiling(b)) << b;
    ASSERT_LE(g, kNoiseCeiling) << b;
  }
}

// Both paths skip Philox and logs for tokens that provably cannot win; each must still pick
// the token a full pass over every token picks, on flat rows (little to skip) and peaked ones.
TEST(SamplerKernels, PrunedDenseGumbelPicksWhatTheFullPassPicks) {
  std::vector<const Kernels*> paths = vector_tables();
  paths.insert(paths.begin(), &portable());
  for (float sd : {0.3f, 3.0f, 12.0f}) {
    std::vector<float> row = messy_row(3000, 99);
    for (float& v : row) v *= sd / 4.0f;
    row[2345] = row[17] = 40.0f;  // two equal tops, far above the rest
    for (int pass = 0; pass < 2; ++pass) {
      for (uint64_t seed = 0; seed < 100; ++seed) {
        float best = -kInf;
        int32_t full = -1;
        for (int32_t i = 0; i < 3000; ++i) {
          const float v = row[i] + gumbel_noise(seed, 5, i);
          if (v > best) {
            best = v;
            full = i;
          }
        }
        for (const Kernels* k : paths) {
          ASSERT_EQ(k->gumbel_argmax(row.data(), 3000, -2, seed, 5), full)
              << "sd " << sd << " seed " << seed << " " << table_name(k);
        }
      }
      row[2345] = row[17] = 0.0f;
    }
  }
}

// The same over a candidate set in no particular order: ties go to the lowest id, not the
// lowest position.
TEST(SamplerKernels, PrunedGumbelOverASetPicksWhatTheFullPassPicks) {
  std::vector<const Kernels*> paths = vector_tables();
  paths.insert(paths.begin(), &portable());
  std::mt19937 rng(3);
  for (float sd : {0.3f, 3.0f, 12.0f}) {
    std::vector<int32_t> ids(1500);
    for (size_t j = 0; j < ids.size(); ++j) ids[j] = static_cast<int32_t>(j * 37 + 11);
    std::shuffle(ids.begin(), ids.end(), rng);
    std::vector<float> z = messy_row(1500, 4);
    for (float& v : z) v *= sd / 4.0f;
    z[900] = z[20] = 40.0f;  // two equal tops: the lower id must win their ties
    for (int pass = 0; pass < 2; ++pass) {
      for (uint64_t seed = 0; seed < 100; ++seed) {
        float best = -kInf;
        int32_t full = -1;
        for (size_t j = 0; j < ids.size(); ++j) {
          const float v = z[j] + gumbel_noise(seed, 8, ids[j]);
          if (v > best || (v == best && ids[j] < ids[full])) {
            best = v;
            full = static_cast<int32_t>(j);
          }
        }
        for (const Kernels* k : paths) {
          ASSERT_EQ(k->gumbel_argmax_at(z.data(), ids.data(), 1500, seed, 8), full)
              << "sd " << sd << " seed " << seed << " " << table_name(k);
        }
      }
      z[900] = z[20] = 0.0f;
    }
  }
}

TEST(SamplerKernels, ArgmaxTakesTheLowestIndexOfTiesAndSkipsNaN) {
  for (const Kernels* k : {&portable(), avx2(), avx512()}) {
    if (k == nullptr) continue;
    std::vector<float> x(100, 1.0f);
    x[40] = 2.0f;
    x[70] = 2.0f;
    x[10] = std::numeric_limits<float>::quiet_NaN();
    EXPECT_EQ(k->argmax(x.data(), 100), 40);
    std::vector<float> none(37, -kInf);
    none[5] = std::numeric_limits<float>::quiet_NaN();
    EXPECT_EQ(k->argmax(none.data(), 37), -1);
  }
}

// The log-probability scan lists the k best in rank order (value descending, ties to the
// lower id; no -inf or NaN), exactly as sorting the row does, and every path gives the same
// list: on messy rows (ties, -inf, NaN), ascending rows (every entry enters the list) and
// rows with fewer finite entries than k; whole, and in runs that continue one list.
TEST(SamplerKernels, ScanTopListsTheKBestInRankOrderWholeOrInRuns) {
  std::vector<std::vector<float>> rows;
  for (int32_t n : {1, 5, 16, 17, 64, 65, 100, 3000, 32000}) rows.push_back(messy_row(n, 7));
  std::vector<float> ascending(300);
  for (int32_t i = 0; i < 300; ++i) ascending[i] = static_cast<float>(i % 150);
  rows.push_back(ascending);
  std::vector<float> sparse(200, -kInf);
  sparse[3] = std::numeric_limits<float>::quiet_NaN();
  sparse[50] = 1.0f;
  sparse[190] = 1.0f;
  rows.push_back(sparse);
  for (const std::vector<float>& row : rows) {
    const auto n = static_cast<int32_t>(row.size());
    std::vector<int32_t> order;
    for (int32_t i = 0; i < n; ++i) {
      if (row[i] > -kInf) order.push_back(i);  // NaN fails the compare too
    }
    std::stable_sort(order.begin(), order.end(),
                     [&](int32_t a, int32_t b) { return row[a] > row[b]; });
    for (const Kernels* k : {&portable(), avx2(), avx512()}) {
      if (k == nullptr) continue;
      for (int32_t want : {1, 5, 20, kMaxTop}) {
        for (int32_t run : {n, 37, 64}) {  // the row whole, or in runs of `run` entries
          TopList list;
          for (int32_t first = 0; first < n; first += run)
            k->scan_top(row.data() + first, std::min(run, n - first), want, first, &list);
          ASSERT_EQ(list.count, std::min<int32_t>(want, static_cast<int32_t>(order.size())));
          for (int32_t i = 0; i < list.count; ++i) {
            ASSERT_EQ(list.id[i], order[i]) << n << " k " << want << " run " << run << " at " << i;
            ASSERT_EQ(list.value[i], row[order[i]]);
          }
          if (list.count > 0) {
            ASSERT_EQ(list.id[0], k->argmax(row.data(), n));
          }
        }
      }
    }
  }
}

// The same Sampler contract on both paths: TANDEM_ISA=avx2 makes a Sampler use the AVX2
// table (avx2/kernels.cpp). Every token must agree.
TEST(SamplerKernels, PortableAndVectorSamplersPickTheSameTokens) {
  REQUIRE_AVX512();
  const int32_t n = 32000;
  const auto vector_owned = testing::sampler_with_isa(nullptr, {n, {2}});
  const auto portable_owned = testing::sampler_with_isa("avx2", {n, {2}});
  Sampler& vector_sampler = *vector_owned;
  Sampler& portable_sampler = *portable_owned;
  ASSERT_TRUE(vector_sampler.uses_avx512());
  ASSERT_FALSE(portable_sampler.uses_avx512());

  struct Setting {
    float t;
    int32_t k;
    float p, min_p;
  };
  const Setting settings[] = {{1.0f, 0, 1.0f, 0.0f},  {0.0f, 0, 1.0f, 0.0f},
                              {0.8f, 40, 1.0f, 0.0f}, {1.0f, 0, 0.9f, 0.0f},
                              {1.0f, 0, 1.0f, 0.1f},  {1.1f, 30, 0.8f, 0.05f}};
  int checked = 0;
  for (float sd : {1.0f, 3.0f}) {
    const std::vector<float> logits = messy_row(n, 17 + static_cast<uint32_t>(sd));
    for (const Setting& s : settings) {
      for (uint64_t seed = 0; seed < 25; ++seed) {
        SamplingParams params;
        params.temperature = s.t;
        params.top_k = s.k;
        params.top_p = s.p;
        params.min_p = s.min_p;
        params.seed = seed * 0x9e3779b9ull;
        params.ignore_eos = seed % 2 == 0;
        std::vector<float> a = logits, b = logits;
        ASSERT_EQ(vector_sampler.sample(a, params, int64_t(seed) + 100),
                  portable_sampler.sample(b, params, int64_t(seed) + 100))
            << "sd " << sd << " t " << s.t << " k " << s.k << " p " << s.p << " seed " << seed;
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 2 * 6 * 25);
}

}  // namespace
}  // namespace tandem::sampler_kernels::TANDEM_UNITY_ID
