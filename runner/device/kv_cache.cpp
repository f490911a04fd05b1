#include "runner/device/kv_cache.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "runner/kernels/kernels.h"
#include "runner/util/float16.h"

namespace tandem {

const char* kv_type_name(KvType type) {
  switch (type) {
    case KvType::kF32:
      return "f32";
    case KvType::kF16:
      return "f16";
    case KvType::kBf16:
      return "bf16";
    case KvType::kQ8_0:
      return "q8_0";
  }
  return "?";
}

std::optional<KvType> parse_kv_type(std::string_view name) {
  for (KvType t : {KvType::kF32, KvType::kF16, KvType::kBf16, KvType::kQ8_0})
    if (name == kv_type_name(t)) return t;
  return std::nullopt;
}

gguf::TensorType kv_tensor_type(KvType type) {
  switch (type) {
    case KvType::kF32:
      return gguf::TensorType::kF32;
    case KvType::kF16:
      return gguf::TensorType::kF16;
    case KvType::kBf16:
      return gguf::TensorType::kBF16;
    case KvType::kQ8_0:
      return gguf::TensorType::kQ8_0;
  }
  return gguf::TensorType::kF32;
}

size_t kv_vector_bytes(KvType type, int64_t kv_dim) {
  const gguf::TensorType t = kv_tensor_type(type);
  const int64_t per_block = gguf::block_elements(t);
  return static_cast<size_t>((kv_dim + per_block - 1) / per_block * gguf::block_bytes(t));
}

size_t kv_element_offset(KvType type, int64_t index) {
  const gguf::TensorType t = kv_tensor_type(type);
  return static_cast<size_t>(index / gguf::block_elements(t) * gguf::block_bytes(t));
}

namespace {

// x[i] to out[i * stride] for i < n: a token's K elements into a transposed block's rows
// (typed, so each is one store rather than a call to memcpy).
template <class T>
void scatter_column(const T* x, int32_t n, T* out, int32_t stride) {
  for (int32_t i = 0; i < n; ++i) out[static_cast<int64_t>(i) * stride] = x[i];
}

}  // namespace

KvCache::KvCache(int32_t n_layer, int32_t kv_dim, int32_t n_blocks, KvType type, int32_t head_dim,
                 int32_t block_size, const std::vector<bool>& local_layers, int32_t n_local_blocks)
    : n_layer_(n_layer),
      kv_dim_(kv_dim),
      n_blocks_(n_blocks),
      n_local_blocks_(std::max(n_local_blocks, 0)),
      block_size_(block_size),
      type_(type),
      vector_bytes_(kv_vector_bytes(type, kv_dim)) {
  if (n_layer <= 0 || kv_dim <= 0 || n_blocks <= 0 || block_size <= 0)
    throw std::invalid_argument("KvCache: every dimension must be positive");
  const int32_t head = head_dim > 0 ? head_dim : kv_dim;
  if (type == KvType::kQ8_0 && (head % gguf::kQ8_0BlockSize != 0 || kv_dim % head != 0))
    throw std::invalid_argument(
        "q8_0 needs a head size that is a multiple of 32 (this "
        "model's is " +
        std::to_string(head) + ")");
  if (kv_dim % head != 0)
    throw std::invalid_argument("KvCache: kv_dim must be a whole number of heads");
  head_dim_ = head;
  head_bytes_ = kv_element_offset(type, head);
  if (!local_layers.empty() && static_cast<int32_t>(local_layers.size()) != n_layer)
    throw std::invalid_argument("KvCache: local_layers must name every layer");
  layers_.resize(n_layer);
  if (n_local_blocks_ > 0)
    for (int32_t l = 0; l < static_cast<int32_t>(local_layers.size()); ++l)
      if (local_layers[l]) {
        layers_[l].local = true;
        ++n_local_layers_;
      }
  if (n_local_layers_ == 0) n_local_blocks_ = 0;
  const size_t block_bytes = 2 * static_cast<size_t>(block_size) * vector_bytes_;
  const size_t global_layer_bytes = static_cast<size_t>(n_blocks) * block_bytes;
  const size_t local_layer_bytes = static_cast<size_t>(n_local_blocks_) * block_bytes;
  n_bytes_ = static_cast<size_t>(n_layer - n_local_layers_) * global_layer_bytes +
             static_cast<size_t>(n_local_layers_) * local_layer_bytes;
  data_ = allocate_large(n_bytes_);
  uint8_t* at = data_.get();
  for (LayerPlace& place : layers_) {
    place.base = at;
    at += place.local ? local_layer_bytes : global_layer_bytes;
  }
}

void KvCache::store_by_heads(int32_t layer, int32_t block, int32_t which, int32_t slot,
                             const float* x) {
  thread_local std::vector<uint8_t> vector;
  vector.resize(vector_bytes_);
  encode(x, vector.data());
  for (int32_t h = 0; h < kv_dim_ / head_dim_; ++h)
    std::memcpy(head_ptr(layer, block, which, h, slot),
                vector.data() + static_cast<size_t>(h) * head_bytes_, head_bytes_);
}

void KvCache::read_by_heads(int32_t layer, int32_t block, int32_t which, int32_t slot,
                            float* out) const {
  for (int32_t h = 0; h < kv_dim_ / head_dim_; ++h)
    kernels::dequantize_row(kv_tensor_type(type_), head_ptr(layer, block, which, h, slot),
                            out + static_cast<int64_t>(h) * head_dim_, head_dim_);
}

void KvCache::store(int32_t layer, int32_t block, int32_t slot, const float* k, const float* v) {
  store_by_heads(layer, block, 1, slot, v);
  if (!k_transposed()) return store_by_heads(layer, block, 0, slot, k);
  // Each element to its place in the block's rows; 16-bit types encoded as a vector first.
  uint8_t* out = slot_ptr(layer, block, 0, 0);
  if (type_ == KvType::kF32) {
    scatter_column(k, kv_dim_, reinterpret_cast<float*>(out) + slot, block_size_);
    return;
  }
  thread_local std::vector<uint8_t> vector;
  vector.resize(vector_bytes_);
  encode(k, vector.data());
  scatter_column(reinterpret_cast<const uint16_t*>(vector.data()), kv_dim_,
                 reinterpret_cast<uint16_t*>(out) + slot, block_size_);
}

void KvCache::read_k(int32_t layer, int32_t block, int32_t slot, float* out) const {
  if (!k_transposed()) return read_by_heads(layer, block, 0, slot, out);
  const size_t es = element_bytes(), row = k_row_bytes();
  const uint8_t* in = slot_ptr(layer, block, 0, 0) + static_cast<size_t>(slot) * es;
  for (int32_t i = 0; i < kv_dim_; ++i)
    kernels::dequantize_row(kv_tensor_type(type_), in + i * row, out + i, 1);
}

void KvCache::read_v(int32_t layer, int32_t block, int32_t slot, float* out) const {
  read_by_heads(layer, block, 1, slot, out);
}

// Blocks [0, n) of a layer are one run (the layout in kv_cache.h).
size_t KvCache::prefault(int32_t layer, int32_t n_blocks) {
  const int32_t group = layers_[layer].local ? n_local_blocks_ : n_blocks_;
  const int32_t n = std::clamp(n_blocks, 0, group);
  if (n == 0) return 0;
  const size_t bytes = static_cast<size_t>(n) * 2 * block_size_ * vector_bytes_;
  std::memset(slot_ptr(layer, 0, 0, 0), 0, bytes);
  return bytes;
}

// A layer's block (K then V) is one contiguous run, copied whole: neither K (transposed or
// held by heads) nor V (held by heads) keeps a slot's bytes together. The slots from
// `slots` on are not yet written in `to`'s request, which writes them before it reads them.
void KvCache::copy_slots(int32_t from, int32_t to, int32_t slots) {
  if (slots <= 0 || from == to) return;
  if (from < 0 || from >= n_blocks_ || to < 0 || to >= n_blocks_ || slots > block_size_) {
    throw std::out_of_range("KvCache::copy_slots: block or slot count out of range");
  }
  // A local layer's slots live in a block of the local group, whose id is not `from`'s;
  // the scheduler makes no copies for models with sliding-window layers.
  if (has_local_group()) throw std::logic_error("KvCache::copy_slots: a local group");
  for (int32_t layer = 0; layer < n_layer_; ++layer)
    std::memcpy(slot_ptr(layer, to, 0, 0), slot_ptr(layer, from, 0, 0),
                2 * static_cast<size_t>(block_size_) * vector_bytes_);
}

// kv_dim floats into the stored type: F16/BF16 round to nearest even (runner/util/
// float16.h, the one converter); Q8_0 as ggml's quantize_row_q8_0_ref does it.
void KvCache::encode(const float* x, uint8_t* out) const {
  switch (type_) {
    case KvType::kF32:
      std::memcpy(out, x, sizeof(float) * kv_dim_);
      return;
    case KvType::kF16:  // the vector forms of half_from_float and bfloat_from_float
      kernels::to_half(x, reinterpret_cast<uint16_t*>(out), kv_dim_);
      return;
    case KvType::kBf16:
      kernels::to_bfloat(x, reinterpret_cast<uint16_t*>(out), kv_dim_);
      return;
    case KvType::kQ8_0:
      for (int32_t b = 0; b * gguf::kQ8_0BlockSize < kv_dim_; ++b) {
        const float* xb = x + b * gguf::kQ8_0BlockSize;
        const int n = std::min(gguf::kQ8_0BlockSize, kv_dim_ - b * gguf::kQ8_0BlockSize);
        float amax = 0.0f;
        for (int j = 0; j < n; ++j) amax = std::max(amax, std::fabs(xb[j]));
        const float d = amax / 127.0f;
        const float inverse = d != 0.0f ? 1.0f / d : 0.0f;
        gguf::BlockQ8_0 q{};
        q.d = half_from_float(d);
        for (int j = 0; j < n; ++j) q.qs[j] = static_cast<int8_t>(std::round(xb[j] * inverse));
        std::memcpy(out + b * sizeof(q), &q, sizeof(q));
      }
      return;
  }
}

}  // namespace tandem
