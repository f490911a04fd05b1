#include "scheduler/kv_block_pool.h"

#include <stdexcept>
#include <string>

namespace tandem {

KvBlockPool::KvBlockPool(int32_t n_blocks, int32_t block_size)
    : block_size_(block_size), in_use_(n_blocks > 0 ? n_blocks : 0, false) {
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

bool KvBlockPool::reserve(int64_t n_tokens, std::vector<int32_t>& out) {
  const int32_t n = blocks_for(n_tokens);
  if (n > free_blocks()) return false;
  for (int32_t i = 0; i < n; ++i) {
    const int32_t id = free_.back();
    free_.pop_back();
    in_use_[id] = true;
    out.push_back(id);
  }
  return true;
}

void KvBlockPool::release(std::vector<int32_t>& blocks) {
  for (int32_t id : blocks) {
    if (id < 0 || id >= total() || !in_use_[id]) {
      throw std::logic_error("KV pool: block " + std::to_string(id) + " released but not in use");
    }
  }
  for (int32_t id : blocks) {
    if (!in_use_[id])
      throw std::logic_error("KV pool: block " + std::to_string(id) + " listed twice");
    in_use_[id] = false;
    free_.push_back(id);
  }
  blocks.clear();
}

}  // namespace tandem
