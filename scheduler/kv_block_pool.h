// The scheduler's view of the device's KV pool: fixed-size blocks handed to requests at
// admission and taken back exactly once. Releasing a block that is not in use is a bug and
// throws std::logic_error. Used only on the scheduler thread; not thread-safe.
#pragma once

#include <cstdint>
#include <vector>

namespace tandem {

class KvBlockPool {
 public:
  KvBlockPool(int32_t n_blocks, int32_t block_size);

  int32_t blocks_for(int64_t n_tokens) const;  // blocks that hold n_tokens positions
  bool can_reserve(int64_t n_tokens) const { return blocks_for(n_tokens) <= free_blocks(); }
  // All or nothing: appends the blocks for n_tokens to `out` and returns true, or changes
  // nothing and returns false.
  bool reserve(int64_t n_tokens, std::vector<int32_t>& out);
  // Returns every block in `blocks` to the pool and clears it.
  void release(std::vector<int32_t>& blocks);

  int32_t total() const { return static_cast<int32_t>(in_use_.size()); }
  int32_t free_blocks() const { return static_cast<int32_t>(free_.size()); }
  int32_t used() const { return total() - free_blocks(); }
  int32_t block_size() const { return block_size_; }

 private:
  int32_t block_size_;
  std::vector<int32_t> free_;  // a stack: a freed block is the next one handed out
  std::vector<bool> in_use_;
};

}  // namespace tandem
