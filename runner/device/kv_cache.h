// The paged KV cache's storage: a pool of fixed-size blocks of token slots, each
// holding every layer's K and V vectors for that token. Which block belongs to which
// request is the scheduler's business (it passes block tables in each StepPlan); this
// class only maps (layer, block, slot) to memory. Not thread-safe by itself: the forward
// pass writes a row's slots before any thread reads them in the same step.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace tandem {

class KvCache {
 public:
  static constexpr int32_t kDefaultBlockSize = 16;

  KvCache(int32_t n_layer, int32_t kv_dim, int32_t n_blocks,
          int32_t block_size = kDefaultBlockSize);

  int32_t n_layer() const { return n_layer_; }
  int32_t n_blocks() const { return n_blocks_; }
  int32_t block_size() const { return block_size_; }
  int32_t kv_dim() const { return kv_dim_; }
  size_t bytes() const { return n_floats_ * sizeof(float); }

  // The kv_dim floats of K (or V) for one token slot of one layer.
  float* k(int32_t layer, int32_t block, int32_t slot) { return slot_ptr(layer, block, 0, slot); }
  float* v(int32_t layer, int32_t block, int32_t slot) { return slot_ptr(layer, block, 1, slot); }

  // Bytes one token takes in the cache (all layers, K and V).
  static size_t bytes_per_token(int32_t n_layer, int32_t kv_dim) {
    return static_cast<size_t>(n_layer) * 2 * kv_dim * sizeof(float);
  }

 private:
  // Layout: [layer][block][K|V][slot][kv_dim], so one head's keys for consecutive
  // positions of a block sit kv_dim floats apart in one contiguous run.
  float* slot_ptr(int32_t layer, int32_t block, int32_t which, int32_t slot) {
    size_t index =
        ((static_cast<size_t>(layer) * n_blocks_ + block) * 2 + which) * block_size_ + slot;
    return data_.get() + index * kv_dim_;
  }

  int32_t n_layer_;
  int32_t kv_dim_;
  int32_t n_blocks_;
  int32_t block_size_;
  size_t n_floats_;
  // Left uninitialized: the OS commits pages as steps first write them, so a large
  // --kv-tokens costs nothing until it is used. Slots are always written before read.
  std::unique_ptr<float[]> data_;
};

}  // namespace tandem
