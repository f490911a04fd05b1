// llama.cpp's dynamic temperature in the fused sampler (runner/sampler/dynatemp.h): the
// step's temperature against a double-precision reading of the definition, and the draws
// against the softmax at that temperature, over the whole row (the temperature first) and
// over the kept set (the temperature last, llama-server's default chain).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "runner/sampler/dynatemp.h"
#include "runner/sampler/kernels.h"
#include "runner/sampler/sampler.h"
#include "tests/runner/sampler/reference.h"
#include "tests/runner/sampler/sampler_test_support.h"

namespace tandem::TANDEM_UNITY_ID {
namespace {

// T_dyn as llama.cpp's temp_ext writes it, in double: the normalized entropy of the softmax.
double plain_dynamic(const std::vector<float>& x, size_t n, double t, double range,
                     double exponent) {
  double max = -INFINITY, sum = 0, entropy = 0;
  for (float v : x) max = std::max(max, double(v));
  for (float v : x) sum += std::exp(v - max);
  for (float v : x) {
    const double p = std::exp(v - max) / sum;
    if (p > 0) entropy -= p * std::log(p);
  }
  const double low = std::max(0.0, t - range), high = t + range;
  return low + (high - low) * std::pow(entropy / std::log(double(n)), exponent);
}

float dynamic_of(const std::vector<float>& x, float t, float range, float exponent) {
  const float max = *std::max_element(x.begin(), x.end());
  std::vector<float> e;
  for (float v : x) e.push_back(sampler_kernels::exp_shifted(v - max));
  return sampler_dynatemp::temperature(x, e, max, x.size(), t, range, exponent);
}

TEST(SamplerDynatemp, TheTemperatureIsTheDefinitions) {
  for (uint32_t round = 0; round < 200; ++round) {
    const auto n = static_cast<int32_t>(2 + round % 300);
    const std::vector<float> x = testing::normal_logits(n, 0.3f + float(round % 5), round);
    const float t = std::vector<float>{0.5f, 1.0f, 1.5f}[round % 3];
    const float range = std::vector<float>{0.2f, 0.5f, 2.0f}[round % 3];
    const float exponent = std::vector<float>{0.5f, 1.0f, 2.0f, 0.0f}[round % 4];
    EXPECT_NEAR(dynamic_of(x, t, range, exponent), plain_dynamic(x, x.size(), t, range, exponent),
                2e-5)
        << "round " << round;
  }
  // A single likely token: entropy 0, the lowest temperature; uniform: the highest.
  EXPECT_FLOAT_EQ(dynamic_of({0.0f, -100.0f, -100.0f}, 1.0f, 0.5f, 1.0f), 0.5f);
  EXPECT_NEAR(dynamic_of({0.0f, 0.0f, 0.0f, 0.0f}, 1.0f, 0.5f, 1.0f), 1.5f, 1e-5);
  EXPECT_FLOAT_EQ(dynamic_of({0.0f, 0.0f, 0.0f, 0.0f}, 0.3f, 0.5f, 1.0f), 0.8f);  // max(0, T - r)
}

// The draws follow softmax(z / T_dyn) over the set the temperature stage sees.
TEST(SamplerDynatemp, DrawsFollowTheSoftmaxAtTheDynamicTemperature) {
  const int32_t n = 24;
  Sampler sampler({n, {}});
  const std::vector<float> logits = testing::normal_logits(n, 1.5f, 5);
  for (const bool last : {false, true}) {
    SamplingParams p = testing::sampling_with(0.8f, last ? 6 : 0);
    p.dynatemp_range = 0.6f;
    p.dynatemp_exponent = 1.5f;
    p.temperature_last = last;
    // The set: the 6 best (top_k, the temperature after it) or the whole row.
    std::vector<int32_t> order(n);
    for (int32_t i = 0; i < n; ++i) order[i] = i;
    std::sort(order.begin(), order.end(),
              [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
    order.resize(last ? 6 : n);
    std::vector<float> seen;
    for (int32_t id : order) seen.push_back(logits[id]);
    const double t = plain_dynamic(seen, seen.size(), 0.8, 0.6, 1.5);
    std::vector<double> expected(n, 0.0);
    double sum = 0;
    for (int32_t id : order) sum += expected[id] = std::exp(logits[id] / t);
    for (double& v : expected) v /= sum;
    EXPECT_LT(testing::drawn_total_variation(sampler, logits, p, 4, {}, expected), 0.01)
        << "last " << last;
  }
}

// A huge exponent sends every step's temperature to its lowest, 0 here: greedy's token,
// with no noise, whatever the seed.
TEST(SamplerDynatemp, ALowestTemperatureOfZeroIsGreedy) {
  const int32_t n = 50;
  Sampler sampler({n, {}});
  const std::vector<float> logits = testing::normal_logits(n, 1.0f, 8);
  const auto top =
      static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  for (const bool last : {false, true}) {
    SamplingParams p = testing::sampling_with(1.0f, last ? 20 : 0);
    p.dynatemp_range = 1.0f;
    p.dynatemp_exponent = 1e30f;
    p.temperature_last = last;
    for (uint64_t seed = 0; seed < 20; ++seed) {
      p.seed = seed;
      std::vector<float> row = logits;
      EXPECT_EQ(sampler.sample(row, p, 2), top) << last;
    }
  }
}

}  // namespace
}  // namespace tandem::TANDEM_UNITY_ID
