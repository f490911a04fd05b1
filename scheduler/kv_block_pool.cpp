#include "scheduler/kv_block_pool.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace tandem {

KvBlockPool::KvBlockPool(int32_t n_blocks, int32_t block_size)
    : block_size_(block_size), blocks_(n_blocks > 0 ? n_blocks : 0) {
  if (n_blocks <= 0 || block_size <= 0) {
    throw std::invalid_argument("KV pool: block count and block size must be positive");
  }
  free_.reserve(n_blocks);
  // Block 0 on top: handed out first.
  for (int32_t id = n_blocks - 1; id >= 0; --id) free_.push_back(id);
}

int32_t KvBlockPool::blocks_for(int64_t n_tokens) const {
  if (n_tokens <= 0) return 0;
  return static_cast<int32_t>((n_tokens + block_size_ - 1) / block_size_);
}

int32_t KvBlockPool::take_block() {
  int32_t id;
  if (!free_.empty()) {
    id = free_.back();
    free_.pop_back();
  } else {
    id = lru_.front();  // reserve checked there is one
    unregister(id);     // takes it off the LRU list
    ++evictions_;
  }
  Block& b = blocks_[id];
  b.refs = 1;
  ++b.generation;
  return id;
}

bool KvBlockPool::reserve(int64_t n_tokens, std::vector<int32_t>& out) {
  const int32_t n = blocks_for(n_tokens);
  if (n > free_blocks()) return false;
  const auto first = static_cast<std::ptrdiff_t>(out.size());
  for (int32_t i = 0; i < n; ++i) out.push_back(take_block());
  // In ascending order: evictions come deepest block first, so a cached sequence's run
  // would otherwise be handed out backwards, and the attention walk reads a row's blocks
  // fastest as one ascending run of adjacent blocks (BM_DecodeAtContext1024, 16 rows of
  // f16 KV: 25.7-27.4 ms ascending, 30.7-31.0 descending). Which blocks are taken is
  // unchanged.
  std::sort(out.begin() + first, out.end());
  return true;
}

void KvBlockPool::check_referenced(int32_t id) const {
  if (id < 0 || id >= total() || blocks_[id].refs <= 0)
    throw std::logic_error("KV pool: block " + std::to_string(id) + " released but not in use");
}

void KvBlockPool::share(std::span<const int32_t> blocks, std::vector<int32_t>& out) {
  for (int32_t id : blocks)
    if (id >= 0) check_referenced(id);
  for (int32_t id : blocks) {
    if (id >= 0) ++blocks_[id].refs;
    out.push_back(id);
  }
}

void KvBlockPool::release_one(int32_t block) {
  std::vector<int32_t> one{block};
  release(one);
}

void KvBlockPool::release(std::vector<int32_t>& blocks) {
  for (int32_t id : blocks)
    if (id >= 0) check_referenced(id);
  for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) {
    const int32_t id = *it;
    if (id < 0) continue;
    Block& b = blocks_[id];
    if (b.refs <= 0)
      throw std::logic_error("KV pool: block " + std::to_string(id) + " listed twice");
    if (--b.refs > 0) continue;
    if (b.registered) {
      b.lru = lru_.insert(lru_.end(), id);  // most recently used at the back
    } else {
      free_.push_back(id);
    }
  }
  blocks.clear();
}

void KvBlockPool::unregister(int32_t id) {
  Block& b = blocks_[id];
  auto [first, last] = index_.equal_range(b.key.hash);
  for (auto it = first; it != last; ++it)
    if (it->second == id) {
      index_.erase(it);
      break;
    }
  if (b.refs == 0) lru_.erase(b.lru);
  b.registered = false;
  b.key = PrefixKey{};
}

bool KvBlockPool::is_registered(int32_t block) const { return blocks_.at(block).registered; }

// A tagged block's key: the tag as its hash, no parent and no tokens (kTagged tells it
// from a chained one; a pool holds one kind or the other).
namespace {
constexpr int32_t kTagged = -2;
}

bool KvBlockPool::register_tagged(int32_t block, uint64_t tag) {
  check_referenced(block);
  Block& b = blocks_[block];
  if (b.registered || find_tagged(tag) >= 0) return false;
  b.key = PrefixKey{tag, kTagged, 0, {}, {}};
  b.registered = true;
  index_.emplace(tag, block);
  return true;
}

int32_t KvBlockPool::find_tagged(uint64_t tag) const {
  auto [first, last] = index_.equal_range(tag);
  for (auto it = first; it != last; ++it)
    if (blocks_[it->second].key.parent == kTagged) return it->second;
  return -1;
}

void KvBlockPool::take(int32_t block) {
  Block& b = blocks_.at(block);
  if (!b.registered) throw std::logic_error("KV pool: only a cached block can be taken");
  if (b.refs++ == 0) lru_.erase(b.lru);
}

// The registered block holding block_tokens after `parent`'s (-1: the start), whose
// content hashes to `hash`; -1 if none. The hash only finds candidates (prefix_cache.h).
int32_t KvBlockPool::find_block(int32_t parent, uint64_t hash,
                                std::span<const int32_t> block_tokens,
                                std::string_view salt) const {
  auto [first, last] = index_.equal_range(hash);
  for (auto it = first; it != last; ++it) {
    const PrefixKey& key = blocks_[it->second].key;
    const bool same_parent =
        key.parent == parent &&
        (parent < 0 ? key.salt == salt : key.parent_generation == blocks_[parent].generation);
    if (same_parent &&
        std::equal(key.tokens.begin(), key.tokens.end(), block_tokens.begin(), block_tokens.end()))
      return it->second;
  }
  return -1;
}

int32_t KvBlockPool::match(std::span<const int32_t> tokens, int32_t max_blocks,
                           std::vector<int32_t>& out, std::string_view salt) {
  return walk_prefix(tokens, max_blocks, salt, [&](int32_t found) {
    Block& b = blocks_[found];
    if (b.refs++ == 0) lru_.erase(b.lru);
    out.push_back(found);
  });
}

int32_t KvBlockPool::cached_blocks(std::span<const int32_t> tokens, int32_t max_blocks,
                                   std::string_view salt) const {
  return walk_prefix(tokens, max_blocks, salt, [](int32_t) {});
}

bool KvBlockPool::register_block(int32_t block, int32_t parent, std::span<const int32_t> tokens,
                                 std::string_view salt) {
  check_referenced(block);
  Block& b = blocks_[block];
  if (b.registered) return true;
  if (static_cast<int32_t>(tokens.size()) != block_size_)
    throw std::logic_error("KV pool: only a full block can be registered");
  if (parent >= 0 && !blocks_.at(parent).registered) return false;
  if (parent >= 0) salt = {};  // a later block is told apart by its parent
  const uint64_t parent_hash = parent < 0 ? prefix_root_hash(salt) : blocks_[parent].key.hash;
  const uint64_t hash = prefix_block_hash(parent_hash, tokens);
  const uint32_t parent_generation = parent < 0 ? 0 : blocks_[parent].generation;
  // The same content cached already (what a match would find): this copy stays private.
  if (find_block(parent, hash, tokens, salt) >= 0) return false;
  b.key =
      PrefixKey{hash, parent, parent_generation, {tokens.begin(), tokens.end()}, std::string(salt)};
  b.registered = true;
  index_.emplace(hash, block);
  return true;
}

}  // namespace tandem
