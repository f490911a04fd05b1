// A decoder-only transformer (see config.h for the families) loaded from GGUF: the configuration,
// and the weights repacked for this CPU's kernels (Q/K/V fused into one matrix, gate/up into
// another). The GGUF file stays mapped for the token embedding, which is read one row at a time.
// Immutable after load; safe to share between threads.
#pragma once

#include <filesystem>
#include <memory>
#include <vector>

#include "runner/gguf/gguf.h"
#include "runner/kernels/kernels.h"
#include "runner/model/config.h"

namespace tandem {

struct LayerWeights {
  std::vector<float> attn_norm;       // n_embd
  kernels::PackedWeights qkv;         // n_embd -> [q (q_dim) | k (kv_dim) | v (kv_dim)]
  std::vector<float> qkv_bias;        // qwen2: the three biases concatenated; else empty
  std::vector<float> q_norm, k_norm;  // qk_norm: head_dim each; else empty
  kernels::PackedWeights attn_out;    // q_dim -> n_embd
  std::vector<float> post_attn_norm;  // post_norms: n_embd; else empty
  std::vector<float> ffn_norm;        // n_embd
  std::vector<float> post_ffn_norm;   // post_norms: n_embd; else empty
  kernels::PackedWeights gate_up;     // n_embd -> [gate (n_ff) | up (n_ff)]
  kernels::PackedWeights down;        // n_ff -> n_embd
  // Each packed matrix's GGUF sources (into the mapped file), in packing order, for
  // executors that keep weights in a layout of their own (the CUDA executor).
  std::vector<kernels::WeightSource> qkv_sources, attn_out_sources, gate_up_sources, down_sources;
};

class Model {
 public:
  // Maps, validates and repacks; throws gguf::GgufError with a one-line message naming
  // the problem (bad file, unsupported architecture, missing or misshapen tensor).
  static std::unique_ptr<Model> load(const std::filesystem::path& path);
  static std::unique_ptr<Model> load(gguf::File file);

  const ModelConfig& config() const { return config_; }
  const gguf::File& file() const { return file_; }
  const std::vector<LayerWeights>& layers() const { return layers_; }
  const std::vector<float>& output_norm() const { return output_norm_; }
  // The n_rot / 2 divisors of the RoPE frequencies when serving sequences of up to
  // served_context tokens, or empty (llama.cpp's get_rope_factors): rope_freqs.weight
  // (llama 3), else phi3's rope_factors_long.weight when served_context exceeds
  // rope.scaling.original_context_length and rope_factors_short.weight when not.
  const std::vector<float>& rope_freq_factors(int32_t served_context) const;
  const kernels::PackedWeights& output() const { return output_; }
  const kernels::WeightSource& output_source() const { return output_source_; }
  const gguf::TensorInfo& token_embedding() const { return *token_embd_; }
  bool tied_embeddings() const { return tied_; }

  // Writes token `id`'s embedding (n_embd floats) to out. id must be in [0, n_vocab).
  void embed(int32_t id, float* out) const;

  size_t packed_bytes() const;  // memory taken by the repacked weights

  // What one token costs the matmuls: the weight bytes a decode step streams (every packed
  // matrix once, whatever the batch), the multiply-adds as flops (2 per weight), and the
  // instruction most of those bytes run on, whose peak bounds batched steps. The output
  // head's share is apart: only a row whose logits are needed pays its flops, and only a
  // step with such a row reads its bytes (a mid-prompt chunk does neither).
  struct TokenWork {
    double weight_bytes = 0;  // every packed matrix, the head included
    double flops = 0;         // through the layers and the head
    double head_bytes = 0;
    double head_flops = 0;
    kernels::Peak peak = kernels::Peak::kF32Fma;
  };
  TokenWork work_per_token() const;

  // Calls fn(matrix) for every packed matrix a decode step multiplies by: the output head,
  // then each layer's qkv, attn_out, gate_up and down.
  template <class Fn>
  void for_each_packed(Fn&& fn) const {
    fn(output_);
    for (const LayerWeights& w : layers_) {
      fn(w.qkv);
      fn(w.attn_out);
      fn(w.gate_up);
      fn(w.down);
    }
  }

 private:
  explicit Model(gguf::File file) : file_(std::move(file)) {}
  gguf::File file_;
  ModelConfig config_;
  std::vector<LayerWeights> layers_;
  std::vector<float> output_norm_;
  std::vector<float> rope_freq_factors_;       // rope_freqs.weight, or empty
  std::vector<float> rope_long_, rope_short_;  // LongRoPE's factors, or empty
  kernels::PackedWeights output_;              // output.weight, or token_embd.weight when tied
  kernels::WeightSource output_source_;
  bool tied_ = false;
  const gguf::TensorInfo* token_embd_ = nullptr;
};

}  // namespace tandem
