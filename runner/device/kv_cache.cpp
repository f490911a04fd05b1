#include "runner/device/kv_cache.h"

#include <stdexcept>
#include <string>

namespace tandem {

KvCache::KvCache(int32_t n_layer, int32_t kv_dim, int32_t n_blocks, int32_t block_size)
    : n_layer_(n_layer), kv_dim_(kv_dim), n_blocks_(n_blocks), block_size_(block_size) {
  if (n_layer <= 0 || kv_dim <= 0 || n_blocks <= 0 || block_size <= 0)
    throw std::invalid_argument("KvCache: every dimension must be positive");
  n_floats_ = static_cast<size_t>(n_layer) * n_blocks * 2 * block_size * kv_dim;
  data_.reset(new float[n_floats_]);
}

}  // namespace tandem
