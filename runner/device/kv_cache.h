// The paged KV cache's storage: a pool of fixed-size blocks of token slots, each
// holding every layer's K and V vectors for that token, in one element type (KvType).
// Which block belongs to which request is the scheduler's business (it passes block
// tables in each StepPlan); this class only maps (layer, block, slot) to memory and
// converts F32 vectors into the stored type. Not thread-safe by itself: the forward pass
// writes a row's slots before any thread reads them in the same step.
//
// Sliding-window layers (gemma2/3's local layers) may keep their K and V in a second block
// group of the same block size: a query there never sees a key more than a window back,
// so a sequence needs only the blocks of its window in that group, and the scheduler
// frees the rest as the sequence advances (its own table, StepRow::kv_local_blocks).
// Without a local group every layer lives in the one group, as before.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "runner/gguf/gguf.h"
#include "runner/util/huge_pages.h"

namespace tandem {

// The element type of the cached K and V vectors. F16 is the default (as vLLM's and
// llama.cpp's): half the bytes of F32, so a decode step reads half the KV. Q8_0 is
// ggml's block of 32 int8 values with an F16 scale, and needs head_dim % 32 == 0.
enum class KvType : uint8_t { kF32, kF16, kBf16, kQ8_0 };

const char* kv_type_name(KvType type);                  // "f32", "f16", "bf16", "q8_0"
std::optional<KvType> parse_kv_type(std::string_view);  // the names above
gguf::TensorType kv_tensor_type(KvType type);           // the same encoding as a GGUF type
// Bytes one K (or V) vector of kv_dim elements takes.
size_t kv_vector_bytes(KvType type, int64_t kv_dim);
// Byte offset of element `index` in a stored vector; for Q8_0 `index` is a multiple of 32.
size_t kv_element_offset(KvType type, int64_t index);

class KvCache {
 public:
  static constexpr int32_t kDefaultBlockSize = 16;

  // Throws std::invalid_argument for a non-positive dimension, or Q8_0 with a head size
  // that is not a multiple of 32 (a head must start on a block). local_layers[l] marks
  // the layers kept in the local group of n_local_blocks blocks; with n_local_blocks 0
  // (or no layer marked) there is no local group.
  KvCache(int32_t n_layer, int32_t kv_dim, int32_t n_blocks, KvType type = KvType::kF16,
          int32_t head_dim = 0, int32_t block_size = kDefaultBlockSize,
          const std::vector<bool>& local_layers = {}, int32_t n_local_blocks = 0);

  int32_t n_layer() const { return n_layer_; }
  int32_t n_blocks() const { return n_blocks_; }              // the global group's
  int32_t n_local_blocks() const { return n_local_blocks_; }  // 0: no local group
  bool has_local_group() const { return n_local_blocks_ > 0; }
  // Whether `layer` reads and writes through the local group (and its block table).
  bool is_local(int32_t layer) const { return layers_[layer].local; }
  int32_t n_local_layers() const { return n_local_layers_; }
  int32_t block_size() const { return block_size_; }
  int32_t kv_dim() const { return kv_dim_; }
  int32_t head_dim() const { return head_dim_; }  // vectors are held by heads of this size
  KvType type() const { return type_; }
  size_t bytes() const { return n_bytes_; }
  // Bytes a K or V vector of one slot takes.
  size_t slot_stride() const { return vector_bytes_; }
  // Bytes of one KV head's part of a slot's vector, and between consecutive slots of that
  // head's part in a block (they lie one after another: see v_head).
  size_t head_bytes() const { return head_bytes_; }

  // Whether a block's K vectors are stored transposed (F32, F16 and BF16; not Q8_0, whose
  // values come in blocks of 32 along a vector): element i of slot s at element
  // i * block_size() + s of the block's K, so the keys' element i lie side by side and
  // attention scores a block's keys one per vector lane, with no horizontal sums
  // (kernels::dot_keys). Vectors that are not transposed, V always and K for Q8_0, are
  // held by KV head (v_head, k_head).
  bool k_transposed() const { return type_ != KvType::kQ8_0; }
  // A block's K of one layer: transposed as above, or (Q8_0) held by heads.
  const uint8_t* k_block(int32_t layer, int32_t block) const {
    return slot_ptr(layer, block, 0, 0);
  }
  // Bytes between a key's element i and i + 1 in a transposed K block.
  size_t k_row_bytes() const { return static_cast<size_t>(block_size_) * element_bytes(); }
  // One KV head's stored values of one token slot of one layer: a block's V holds
  // [KV head][slot][head_dim elements], so a head's values for the block's positions are
  // one run of head_bytes() a slot, and the heads' runs follow each other. Attention reads
  // a block's vectors head by head: slot-major vectors made each head's pass a stride
  // through the block, which read slower from memory even with the next block prefetched
  // (one thread's walk, bench_attention: f32 20.3 -> 25.2 GB/s, bf16 16.6 -> 18.6, f16
  // 17.2 -> 17.8; a plain read 33; docs/performance.md).
  const uint8_t* v_head(int32_t layer, int32_t block, int32_t kv_head, int32_t slot) const {
    return head_ptr(layer, block, 1, kv_head, slot);
  }
  // The same for K, only where !k_transposed() (Q8_0).
  const uint8_t* k_head(int32_t layer, int32_t block, int32_t kv_head, int32_t slot) const {
    return head_ptr(layer, block, 0, kv_head, slot);
  }
  // The K or V vector of a slot widened to kv_dim floats, whatever the layout (tests, tools).
  void read_k(int32_t layer, int32_t block, int32_t slot, float* out) const;
  void read_v(int32_t layer, int32_t block, int32_t slot, float* out) const;
  // Converts kv_dim floats of k and of v into the stored type, into one slot.
  void store(int32_t layer, int32_t block, int32_t slot, const float* k, const float* v);

  // Writes zeros over blocks [0, n_blocks) of `layer` (of its group, n_blocks clamped to
  // the group's size), so that their pages are mapped before a step needs them; returns the
  // bytes written. A fresh process's first write to a page faults, and on the VMs measured
  // here that costs about 2.4 ms a MiB (the host backs the page too): a 128-token request
  // on a fresh 2 GiB cache spent about 0.1 s of its prompt step and 0.1 s of its decode
  // there, 367 against 511 tok/s (docs/performance.md).
  // Blocks hold nothing a step reads before it writes it, so zeros change no result; call
  // it before any step, as llama.cpp clears its KV buffer when it makes a context.
  size_t prefault(int32_t layer, int32_t n_blocks);
  // Copies slots [0, slots) of block `from` into block `to`, in every layer, K and V.
  // Not for a cache with a local group (throws std::logic_error).
  void copy_slots(int32_t from, int32_t to, int32_t slots);

  // Bytes one token takes in the cache (all layers, K and V).
  static size_t bytes_per_token(int32_t n_layer, int32_t kv_dim, KvType type = KvType::kF16) {
    return static_cast<size_t>(n_layer) * 2 * kv_vector_bytes(type, kv_dim);
  }
  // Bytes one token position of a group's block takes: the global group's (every layer
  // when there is no local group) and the local group's (0 without one).
  size_t global_bytes_per_token() const {
    return bytes_per_token(n_layer_ - n_local_layers_, kv_dim_, type_);
  }
  size_t local_bytes_per_token() const {
    return has_local_group() ? bytes_per_token(n_local_layers_, kv_dim_, type_) : 0;
  }

 private:
  // Layout of each group: [layer of the group][block][K|V][slot][kv_dim elements] in
  // size; a transposed K's bytes hold [kv_dim elements][slot], the others' [KV
  // head][slot][head_dim elements] (v_head). which 0 is K, 1 V; slot 0: the block's start.
  uint8_t* slot_ptr(int32_t layer, int32_t block, int32_t which, int32_t slot) const {
    return layers_[layer].base +
           ((static_cast<size_t>(block) * 2 + which) * block_size_ + slot) * vector_bytes_;
  }
  uint8_t* head_ptr(int32_t layer, int32_t block, int32_t which, int32_t kv_head,
                    int32_t slot) const {
    return slot_ptr(layer, block, which, 0) +
           (static_cast<size_t>(kv_head) * block_size_ + slot) * head_bytes_;
  }
  // A slot's vector in the stored type to its heads' runs, and back widened.
  void store_by_heads(int32_t layer, int32_t block, int32_t which, int32_t slot, const float* x);
  void read_by_heads(int32_t layer, int32_t block, int32_t which, int32_t slot, float* out) const;
  void encode(const float* x, uint8_t* out) const;
  size_t element_bytes() const { return type_ == KvType::kF32 ? 4 : 2; }  // not for Q8_0

  struct LayerPlace {
    uint8_t* base = nullptr;  // the layer's first block in its group
    bool local = false;
  };

  int32_t n_layer_;
  int32_t kv_dim_;
  int32_t n_blocks_;
  int32_t n_local_blocks_;
  int32_t n_local_layers_ = 0;
  int32_t block_size_;
  int32_t head_dim_ = 0;
  KvType type_;
  size_t vector_bytes_;
  size_t head_bytes_;  // one KV head's part of a vector
  size_t n_bytes_;
  // On huge pages (a batch's slots are scattered over it), left uninitialized: the OS
  // commits pages as steps first write them, so a large --kv-tokens costs nothing until it
  // is used. Slots are always written before read.
  LargeBytes data_;
  std::vector<LayerPlace> layers_;
};

}  // namespace tandem
