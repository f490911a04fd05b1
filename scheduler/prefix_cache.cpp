#include "scheduler/prefix_cache.h"

namespace tandem {

namespace {
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
}  // namespace

uint64_t prefix_block_hash(uint64_t parent_hash, std::span<const int32_t> tokens) {
  uint64_t h = mix(parent_hash ^ tokens.size());
  for (int32_t t : tokens) h = mix(h ^ static_cast<uint32_t>(t));
  return h;
}

uint64_t prefix_root_hash(std::string_view salt) {
  if (salt.empty()) return kPrefixRootHash;
  uint64_t h = mix(kPrefixRootHash ^ salt.size());
  for (unsigned char c : salt) h = mix(h ^ c);
  return h;
}

}  // namespace tandem
