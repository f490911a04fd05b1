// What the sampler's distribution tests share, on the CPU (distribution_test.cpp) and on the
// GPU (tests/cuda/sampler_kernel_test.cpp): the settings drawn from, and the total variation
// between the draws' frequencies and reference.h's softmax over the kept set.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "protocol/sampling_params.h"
#include "tests/runner/sampler/sampler_test_support.h"

namespace tandem::testing {

struct DistributionSetting {
  float temperature;
  int32_t top_k;
  float top_p;
  float min_p;

  SamplingParams params() const { return sampling_with(temperature, top_k, top_p, min_p); }
};

// Plain sampling and each filter alone and combined, on normal_logits(32, 1.5f, 7).
inline std::vector<DistributionSetting> distribution_settings() {
  return {{1.0f, 0, 1.0f, 0.0f},     // plain: the dense Gumbel pass
          {0.5f, 0, 1.0f, 0.0f},     // sharper
          {2.0f, 0, 1.0f, 0.0f},     // flatter
          {0.7f, 5, 1.0f, 0.0f},     // top_k (5 kept)
          {1.3f, 0, 0.8f, 0.0f},     // top_p (8 kept)
          {1.5f, 0, 1.0f, 0.05f},    // min_p (8 kept)
          {1.5f, 12, 0.95f, 0.02f},  // all three; top_k binds (12 kept)
          {1.5f, 20, 0.7f, 0.01f},   // all three; top_p binds
          {1.2f, 6, 1.0f, 0.05f},    // top_k and min_p; min_p binds (4)
          {2.0f, 8, 0.95f, 0.0f}};   // top_k and top_p
}

// Half the L1 distance between hits / draws and `expected`.
inline double total_variation(const std::vector<int>& hits, int draws,
                              const std::vector<double>& expected) {
  double tv = 0.0;
  for (size_t i = 0; i < hits.size(); ++i) tv += std::abs(double(hits[i]) / draws - expected[i]);
  return tv / 2.0;
}

}  // namespace tandem::testing
