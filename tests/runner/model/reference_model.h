// A reference forward pass for Llama-family GGUF models, written for clarity in double
// precision: no KV cache, no batching, no threads, its own dequantization. The fast
// path's logits are checked against it (law 7). Slow; use it on tiny models only.
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

namespace tandem::testing {

class ReferenceModel {
 public:
  explicit ReferenceModel(const std::filesystem::path& gguf_path);

  // Logits (n_vocab) of the last token of `tokens`, positions 0..tokens.size()-1.
  std::vector<double> logits(const std::vector<int32_t>& tokens) const;
  int32_t n_vocab() const { return n_vocab_; }

 private:
  using Matrix = std::vector<double>;  // row-major [n_out][n_in]
  struct Layer {
    std::vector<double> attn_norm, ffn_norm, q_bias, k_bias, v_bias;
    Matrix wq, wk, wv, wo, w_gate, w_up, w_down;
  };
  std::vector<double> matvec(const Matrix& w, const std::vector<double>& x, int64_t n_out) const;

  int32_t n_embd_ = 0, n_layer_ = 0, n_head_ = 0, n_head_kv_ = 0, head_dim_ = 0, n_ff_ = 0;
  int32_t n_vocab_ = 0, n_rot_ = 0;
  double rope_base_ = 10000, eps_ = 1e-5;
  bool neox_ = false;
  Matrix embd_, out_;
  std::vector<double> out_norm_;
  std::vector<Layer> layers_;
};

}  // namespace tandem::testing
