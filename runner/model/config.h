// The hyperparameters of a decoder-only transformer (llama, mistral, qwen2, qwen3, phi3,
// gemma2, gemma3), read from a GGUF file's metadata. A plain value; from_gguf validates
// it so the forward pass can trust every field. The families differ only in the named
// choices below; the forward pass applies each as one step.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/pooling.h"
#include "runner/gguf/gguf.h"

namespace tandem {

// How RoPE pairs up the dimensions of a head: llama.cpp's GGUF files store llama's Q/K
// permuted for adjacent pairs (x[2i], x[2i+1]); the others use NeoX halves (x[i], x[i+d/2]).
enum class RopeStyle { kAdjacentPairs, kNeox };

// The feed-forward gate's activation: silu(gate) * up, or gelu_tanh(gate) * up (gemma).
enum class Activation { kSilu, kGeluTanh };

// RoPE angles of one layer: theta_i = position * scale * base^(-2i/n_rot) / factor_i,
// where factor_i comes from the model's factor tensors when it has them (Model::
// rope_freq_factors); cos and sin are then multiplied by ModelConfig::rope_attn_factor.
struct RopeParams {
  float base = 10000.0f;
  float scale = 1.0f;  // linear scaling: 1 / rope.scaling.factor
};

struct ModelConfig {
  std::string architecture;  // general.architecture
  int32_t n_embd = 0;        // hidden size
  int32_t n_layer = 0;
  int32_t n_head = 0;
  int32_t n_head_kv = 0;
  int32_t head_dim = 0;  // attention.key_length, else n_embd / n_head
  int32_t n_ff = 0;
  int32_t n_vocab = 0;
  int32_t context_length = 0;
  int32_t n_rot = 0;  // dimensions of a head that RoPE rotates (<= head_dim)
  float rms_eps = 1e-5f;
  RopeStyle rope_style = RopeStyle::kAdjacentPairs;
  RopeParams rope;                 // global-attention layers
  RopeParams rope_local;           // sliding-window layers (gemma3 uses another base there)
  bool rope_freq_factors = false;  // rope_freqs.weight divides the frequencies (llama 3)
  // phi3's LongRoPE (the 128k variants): rope_factors_long/short.weight divide the
  // frequencies, the long ones when the served context exceeds rope_original_context.
  bool rope_long_short_factors = false;
  int32_t rope_original_context = 0;  // rope.scaling.original_context_length, else context
  float rope_attn_factor = 1.0f;      // rope.scaling.attn_factor: scales RoPE's cos and sin

  bool qkv_bias = false;       // qwen2
  bool qk_norm = false;        // qwen3, gemma3: per-head RMSNorm of q and k before RoPE
  bool fused_qkv = false;      // phi3: one attn_qkv tensor
  bool fused_gate_up = false;  // phi3: ffn_up holds [gate; up]
  bool post_norms = false;     // gemma2/3: RMSNorm of attention and FFN outputs
  Activation activation = Activation::kSilu;
  float embed_scale = 1.0f;        // gemma: sqrt(n_embd)
  float attn_scale = 0.0f;         // scale of q.k: 1 / sqrt(head_dim) unless a family says
  float attn_softcap = 0.0f;       // gemma: scores = cap * tanh(scores / cap); 0 = none
  float final_softcap = 0.0f;      // gemma: the same on the logits
  int32_t sliding_window = 0;      // a local layer's query at p sees keys at p - window < j
  std::vector<bool> local_layers;  // per layer: attends through the window (gemma2/3)
  // {arch}.pooling_type as written (embedding models: Qwen3-Embedding's 3, last; e5's 1,
  // mean; a reranker's 4, rank); -1 where the file has none (a generative model).
  int64_t pooling_type = -1;
  // The pooling that type names where tandem serves it (1 mean, 2 cls, 3 last); nullopt
  // for none, rank and the rest.
  std::optional<Pooling> pooling() const {
    if (pooling_type < 1 || pooling_type > 3) return std::nullopt;
    return static_cast<Pooling>(pooling_type);
  }

  int32_t q_dim() const { return n_head * head_dim; }
  int32_t kv_dim() const { return n_head_kv * head_dim; }
  bool is_local_layer(int32_t layer) const {
    return sliding_window > 0 && layer >= 0 && static_cast<size_t>(layer) < local_layers.size() &&
           local_layers[static_cast<size_t>(layer)];
  }
  const RopeParams& rope_of(int32_t layer) const {
    return is_local_layer(layer) ? rope_local : rope;
  }

  // Throws gguf::GgufError naming the problem (unsupported architecture or metadata that
  // would change the outputs and is not implemented, a missing or inconsistent value).
  static ModelConfig from_gguf(const gguf::File& file);
};

// The N of a layer tensor's name ("blk.N.attn_q.weight"), or -1 for any other name.
int tensor_layer(std::string_view name);

}  // namespace tandem
