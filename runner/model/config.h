// The hyperparameters of a Llama-family model, read from a GGUF file's metadata.
// A plain value; from_gguf validates it so the forward pass can trust every field.
#pragma once

#include <cstdint>
#include <string>

#include "runner/gguf/gguf.h"

namespace tandem {

// How RoPE pairs up the dimensions of a head: llama.cpp's GGUF files store llama's Q/K
// permuted for adjacent pairs (x[2i], x[2i+1]); qwen2 uses NeoX halves (x[i], x[i+d/2]).
enum class RopeStyle { kAdjacentPairs, kNeox };

struct ModelConfig {
  std::string architecture;  // "llama" or "qwen2"
  int32_t n_embd = 0;        // hidden size
  int32_t n_layer = 0;
  int32_t n_head = 0;
  int32_t n_head_kv = 0;
  int32_t head_dim = 0;  // n_embd / n_head
  int32_t n_ff = 0;
  int32_t n_vocab = 0;
  int32_t context_length = 0;
  int32_t n_rot = 0;  // dimensions of a head that RoPE rotates (<= head_dim)
  float rope_base = 10000.0f;
  float rms_eps = 1e-5f;
  RopeStyle rope_style = RopeStyle::kAdjacentPairs;
  bool qkv_bias = false;  // qwen2

  int32_t kv_dim() const { return n_head_kv * head_dim; }

  // Throws gguf::GgufError naming the problem (unsupported architecture, a missing or
  // inconsistent hyperparameter).
  static ModelConfig from_gguf(const gguf::File& file);
};

}  // namespace tandem
