// Per-request sampling parameters, as a request states them. Parsed and validated
// by protocol, carried unchanged by the scheduler, applied by the runner's fused
// sampler. A plain value type: no threads, no I/O.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace tandem {

struct SamplingParams {
  float temperature = 1.0f;  // 0: argmax (ties to the lowest id), no noise drawn
  int32_t top_k = 0;         // 0, or k >= vocab: off
  float top_p = 1.0f;        // in (0, 1]; 1: off
  float min_p = 0.0f;        // in [0, 1); 0: off
  uint64_t seed = 0;         // Gumbel noise key; the server draws one when the request has none
  // Added to the logits before everything else; a bias <= -100 bans the token.
  std::vector<std::pair<int32_t, float>> logit_bias;
  bool ignore_eos = false;  // EOS is banned
};

}  // namespace tandem
