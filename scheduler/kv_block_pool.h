// The scheduler's view of the device's KV pool: fixed-size blocks, reference-counted, handed
// to requests as they need them and taken back exactly once per reference. With the prefix
// cache on, a full block whose KV a completed step wrote can be registered under its
// content (prefix_cache.h: its tokens and every token before them); a later request with
// the same prefix takes a reference to it instead of computing it again. A registered
// block nobody references stays cached, and is evicted least recently used first when the
// pool needs a block. Releasing a block that is not referenced is a bug and throws
// std::logic_error. Used only on the scheduler thread; not thread-safe.
#pragma once

#include <cstdint>
#include <list>
#include <span>
#include <unordered_map>
#include <vector>

#include "scheduler/prefix_cache.h"

namespace tandem {

class KvBlockPool {
 public:
  KvBlockPool(int32_t n_blocks, int32_t block_size);

  int32_t blocks_for(int64_t n_tokens) const;  // blocks that hold n_tokens positions
  bool can_reserve(int64_t n_tokens) const { return blocks_for(n_tokens) <= free_blocks(); }
  // All or nothing: appends blocks_for(n_tokens) fresh blocks (one reference each) to
  // `out`, in ascending order, and returns true, or changes nothing and returns false.
  // Evicts cached blocks nobody references, least recently used first, when no block is
  // free.
  bool reserve(int64_t n_tokens, std::vector<int32_t>& out);
  // Appends `blocks` (each referenced already) to `out`, one more reference each: a
  // sequence that shares another's written blocks (n choices of one prompt). A negative
  // entry (a sliding-window table's dropped block, kNoBlock) is copied as it is.
  void share(std::span<const int32_t> blocks, std::vector<int32_t>& out);
  // Drops one reference to every block in `blocks`, last block first (so a request's
  // tail is evicted before its head), and clears it. Negative entries are skipped.
  void release(std::vector<int32_t>& blocks);
  void release_one(int32_t block);

  // The prefix cache. Appends to `out`, one new reference each, the cached blocks that
  // hold the full blocks of `tokens` from the start, as far as they are cached (at most
  // max_blocks); returns how many. `salt` (a request's cache_salt; "" for the shared cache)
  // finds only the sequences registered under the same salt.
  int32_t match(std::span<const int32_t> tokens, int32_t max_blocks, std::vector<int32_t>& out,
                std::string_view salt = {});
  // How many blocks match would find, taking nothing (the pacer's look at a queued prompt).
  int32_t cached_blocks(std::span<const int32_t> tokens, int32_t max_blocks,
                        std::string_view salt = {}) const;
  // Registers `block` as holding `tokens` (block_size of them) after the blocks of
  // `parent` (-1: the sequence's start, under `salt`). Ignored when the parent is not
  // registered (its chain is not findable) or the same content is registered already.
  // Returns whether `block` is now the registered one.
  bool register_block(int32_t block, int32_t parent, std::span<const int32_t> tokens,
                      std::string_view salt = {});
  bool is_registered(int32_t block) const;

  // The sliding-window group's prefix cache (a second pool of the same block size): a
  // local block is registered under the global block that holds the same positions of
  // the same prefix, named by tag_of (its id and generation), so it is found exactly
  // while that global block keeps its content, and never after it was handed out afresh.
  uint64_t tag_of(int32_t block) const {
    return (static_cast<uint64_t>(block) << 32) | blocks_.at(block).generation;
  }
  // Registers `block` (referenced) under `tag`; false when the tag has a block already.
  bool register_tagged(int32_t block, uint64_t tag);
  int32_t find_tagged(uint64_t tag) const;  // the block registered under tag, or -1
  void take(int32_t block);                 // one more reference to a registered block

  int32_t total() const { return static_cast<int32_t>(blocks_.size()); }
  // Blocks a reserve can have: free ones plus cached ones nobody references.
  int32_t free_blocks() const { return static_cast<int32_t>(free_.size() + lru_.size()); }
  int32_t used() const { return total() - free_blocks(); }  // referenced by some request
  int32_t cached() const { return static_cast<int32_t>(index_.size()); }  // registered
  int32_t refcount(int32_t block) const { return blocks_.at(block).refs; }
  int32_t block_size() const { return block_size_; }
  uint64_t evictions() const { return evictions_; }

 private:
  int32_t find_block(int32_t parent, uint64_t hash, std::span<const int32_t> block_tokens,
                     std::string_view salt) const;
  // Calls found(block) for each cached block of tokens' full blocks from the start, as far
  // as they are cached (at most max_blocks); returns how many.
  template <class F>
  int32_t walk_prefix(std::span<const int32_t> tokens, int32_t max_blocks, std::string_view salt,
                      F found) const {
    int32_t parent = -1, n = 0;
    uint64_t parent_hash = prefix_root_hash(salt);
    for (; n < max_blocks &&
           static_cast<int64_t>(n + 1) * block_size_ <= static_cast<int64_t>(tokens.size());
         ++n) {
      const std::span<const int32_t> block_tokens = tokens.subspan(n * block_size_, block_size_);
      const uint64_t hash = prefix_block_hash(parent_hash, block_tokens);
      const int32_t block = find_block(parent, hash, block_tokens, salt);
      if (block < 0) break;
      found(block);
      parent = block;
      parent_hash = hash;
    }
    return n;
  }

  struct Block {
    int32_t refs = 0;
    bool registered = false;
    uint32_t generation = 0;           // bumped each time the block is handed out afresh
    PrefixKey key;                     // while registered
    std::list<int32_t>::iterator lru;  // while registered and unreferenced
  };
  int32_t take_block();  // a free block, else the least recently used cached one
  void unregister(int32_t block);
  void check_referenced(int32_t id) const;

  int32_t block_size_;
  std::vector<Block> blocks_;
  std::vector<int32_t> free_;  // a stack: a freed block is the next one handed out
  std::list<int32_t> lru_;     // registered, unreferenced; front = least recently used
  std::unordered_multimap<uint64_t, int32_t> index_;  // PrefixKey::hash -> registered block
  uint64_t evictions_ = 0;
};

}  // namespace tandem
