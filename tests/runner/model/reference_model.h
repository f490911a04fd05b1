// A reference forward pass for the GGUF families tandem runs (llama, mistral, qwen2,
// qwen3, phi3, gemma2, gemma3), written for clarity in double
// precision: no KV cache, no batching, no threads, its own dequantization. The fast
// path's logits are checked against it (law 7). Slow; use it on tiny models only.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "runner/gguf/gguf.h"

namespace tandem::testing {

class ReferenceModel {
 public:
  // served_context picks phi3's LongRoPE factors as llama.cpp does (0: the model's
  // context).
  explicit ReferenceModel(const std::filesystem::path& gguf_path, int64_t served_context = 0);

  // Logits (n_vocab) of the last token of `tokens`, positions 0..tokens.size()-1.
  std::vector<double> logits(const std::vector<int32_t>& tokens) const;
  // Every position's last hidden state after the output norm (what embeddings pool).
  std::vector<std::vector<double>> hidden_states(const std::vector<int32_t>& tokens) const;
  int32_t n_vocab() const { return n_vocab_; }

 private:
  using Matrix = std::vector<double>;  // row-major [n_out][n_in]
  struct Layer {
    std::vector<double> attn_norm, ffn_norm, q_bias, k_bias, v_bias;
    std::vector<double> q_norm, k_norm, post_attn_norm, post_ffn_norm;  // empty if absent
    Matrix wq, wk, wv, wo, w_gate, w_up, w_down;
    double rope_base = 10000, rope_scale = 1;
    int32_t window = 0;  // sliding window; 0 = attends to all earlier tokens
  };
  std::vector<double> matvec(const Matrix& w, const std::vector<double>& x, int64_t n_out) const;
  void read_hparams(const gguf::File& f);
  void read_rope_factors(const gguf::File& f, int64_t served_context);
  Layer read_layer(const gguf::File& f, int32_t l) const;
  std::vector<double> attend(const Layer& L, const std::vector<std::vector<double>>& q,
                             const std::vector<std::vector<double>>& k,
                             const std::vector<std::vector<double>>& v, int64_t t) const;

  int32_t n_embd_ = 0, n_layer_ = 0, n_head_ = 0, n_head_kv_ = 0, head_dim_ = 0, n_ff_ = 0;
  double activation(double gate) const;
  static double soft_cap(double x, double cap);

  int32_t n_vocab_ = 0, n_rot_ = 0, swa_pattern_ = 0, window_ = 0;
  double rope_base_ = 10000, rope_base_local_ = 10000, rope_scale_ = 1, rope_scale_local_ = 1;
  double eps_ = 1e-5, embed_scale_ = 1, attn_softcap_ = 0, final_softcap_ = 0;
  bool neox_ = false, gelu_ = false, gemma_ = false;
  std::vector<double> rope_freqs_;  // divisors of the RoPE frequencies, or empty
  double rope_attn_factor_ = 1;     // multiplies RoPE's cos and sin
  Matrix embd_, out_;
  std::vector<double> out_norm_;
  std::vector<Layer> layers_;
};

}  // namespace tandem::testing
