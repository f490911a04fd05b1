// The seed of each choice of a request with several (n > 1, or a list of prompts), so that
// every choice replays alone: send its prompt with n = 1 and the choice's reported seed.
// Pure; thread-safe.
#pragma once

#include <cstdint>

namespace tandem {

// Choice `index` (prompt_index * n + choice) of a request seeded `seed`. Choice 0 keeps
// the request's seed, so n = 1 answers exactly as before; choice i > 0 is splitmix64's
// finalizer over seed + i * golden ratio, kept below 2^53 so that a JavaScript client
// reads it exactly.
constexpr uint64_t choice_seed(uint64_t seed, int32_t index) {
  if (index == 0) return seed;
  uint64_t z = seed + static_cast<uint64_t>(index) * 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return z & ((uint64_t{1} << 53) - 1);
}

}  // namespace tandem
