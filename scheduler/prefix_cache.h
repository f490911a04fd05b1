// Content addresses for KV blocks (vLLM's automatic prefix caching, in spirit): a full
// block is named by its tokens and, through its parent, by every token before it. The
// hash chains: hash(block i) = H(hash(block i-1), tokens of block i), so one lookup per
// block walks a prompt from its start. The hash only finds candidates; a match is then
// checked exactly (the tokens, and the parent block with the generation it had when the
// child was registered), so a hash collision can cost a miss, never a wrong block.
// Pure functions and values; thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tandem {

inline constexpr uint64_t kPrefixRootHash = 0x7461'6e64'656d'4b56ull;  // "tandemKV"

// hash(parent, tokens): 64-bit, a splitmix64-style mix per token.
uint64_t prefix_block_hash(uint64_t parent_hash, std::span<const int32_t> tokens);

// The "parent hash" of a sequence's first block: kPrefixRootHash for the shared cache, a
// mix of the salt's bytes for a request's cache_salt (vLLM's: a tenant's prompts are found
// only by requests with the same salt, so no other tenant can time its cache hits).
uint64_t prefix_root_hash(std::string_view salt);

// What a registered block holds, for the exact check.
struct PrefixKey {
  uint64_t hash = 0;
  int32_t parent = -1;             // the block before it, -1 at the sequence's start
  uint32_t parent_generation = 0;  // that block's generation when this one was registered
  std::vector<int32_t> tokens;     // block_size tokens
  // A first block's cache_salt ("" for the shared cache); later blocks are told apart by
  // their parent, which a salted first block heads.
  std::string salt;
};

}  // namespace tandem
