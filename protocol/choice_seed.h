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

// A seed as a response reports it: the signed 64-bit value of its bits, so that a seed sent
// as a negative number (-1) comes back as sent and replays (read_seed keeps its bits), and
// one sent at or above 2^63 comes back as the negative number of the same bits, which
// replays too; written unsigned, -1 came back as 18446744073709551615, which JavaScript
// reads as 2^64 and cannot send back. Drawn seeds and choice seeds (< 2^53) are unchanged.
constexpr int64_t reported_seed(uint64_t seed) { return static_cast<int64_t>(seed); }

}  // namespace tandem
