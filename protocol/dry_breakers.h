// llama.cpp's DRY sequence breakers in token form (its "restart sequences"): made by the
// server from a request's strings against the model's vocabulary (server/dry_breakers.h),
// read by the sampler's DRY step (runner/sampler/dry.h). A plain value, shared immutable
// among the requests that send the same strings.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

namespace tandem {

struct DryBreakers {
  // Keyed by a restart sequence's first token: the tokens that follow it in the sequence,
  // each list distinct. An empty tail: that token alone holds a breaker (a "single-token
  // breaker", which DRY never penalizes).
  std::unordered_map<int32_t, std::vector<std::vector<int32_t>>> tails;

  bool single_token(int32_t id) const {
    const auto found = tails.find(id);
    if (found == tails.end()) return false;
    for (const auto& tail : found->second) {
      if (tail.empty()) return true;
    }
    return false;
  }
};

}  // namespace tandem
