// What the sampler tests share besides the reference: random logits, and Samplers built on
// a chosen instruction set.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "runner/sampler/sampler.h"

namespace tandem::testing {

// Sampling parameters with the given temperature and filters, the rest at their defaults.
inline SamplingParams sampling_with(float temperature, int32_t top_k = 0, float top_p = 1.0f,
                                    float min_p = 0.0f) {
  SamplingParams p;
  p.temperature = temperature;
  p.top_k = top_k;
  p.top_p = top_p;
  p.min_p = min_p;
  return p;
}

// n logits drawn from N(0, sd), the same for the same seed.
inline std::vector<float> normal_logits(int32_t n, float sd, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, sd);
  std::vector<float> logits(n);
  for (float& v : logits) v = normal(rng);
  return logits;
}

// A Sampler built with TANDEM_ISA set to `isa` (nullptr: unset, so the best path the CPU
// has); the caller's TANDEM_ISA is restored afterwards. "avx2" selects the portable kernels.
inline std::unique_ptr<Sampler> sampler_with_isa(const char* isa, SamplerConfig config) {
  const char* outer = std::getenv("TANDEM_ISA");
  const std::string saved = outer != nullptr ? outer : "";
  if (isa != nullptr) {
    setenv("TANDEM_ISA", isa, 1);
  } else {
    unsetenv("TANDEM_ISA");
  }
  auto sampler = std::make_unique<Sampler>(std::move(config));
  if (outer != nullptr) {
    setenv("TANDEM_ISA", saved.c_str(), 1);
  } else {
    unsetenv("TANDEM_ISA");
  }
  return sampler;
}

// Half the L1 distance between `expected` and the tokens `sampler` draws from `logits` with
// seeds 0 .. draws - 1 at `position`: the sampled distribution's total variation.
inline double drawn_total_variation(Sampler& sampler, const std::vector<float>& logits,
                                    SamplingParams params, int64_t position,
                                    const RowHistory& history, const std::vector<double>& expected,
                                    int draws = 100000) {
  std::vector<int> hits(logits.size(), 0);
  for (int d = 0; d < draws; ++d) {
    params.seed = static_cast<uint64_t>(d);
    std::vector<float> row = logits;
    hits[static_cast<size_t>(sampler.sample(row, params, position, history))] += 1;
  }
  double tv = 0.0;
  for (size_t i = 0; i < hits.size(); ++i) tv += std::abs(double(hits[i]) / draws - expected[i]);
  return tv / 2.0;
}

}  // namespace tandem::testing
