#include "runner/model/config.h"

#include <string>

namespace tandem {
namespace {

int32_t positive_int(const gguf::File& file, const std::string& key, int64_t limit) {
  int64_t v = file.get_int(key);
  if (v <= 0 || v > limit)
    throw gguf::GgufError(file.name() + ": " + key + " = " + std::to_string(v) +
                          " is out of range");
  return static_cast<int32_t>(v);
}

}  // namespace

ModelConfig ModelConfig::from_gguf(const gguf::File& file) {
  ModelConfig c;
  c.architecture = file.get_string("general.architecture");
  if (c.architecture == "llama") {
    c.rope_style = RopeStyle::kAdjacentPairs;
  } else if (c.architecture == "qwen2") {
    c.rope_style = RopeStyle::kNeox;
    c.qkv_bias = true;
  } else {
    throw gguf::GgufError(file.name() + ": unsupported architecture '" + c.architecture +
                          "' (supported: llama, qwen2)");
  }
  const std::string a = c.architecture + ".";
  constexpr int64_t kMaxDim = 1 << 20;
  c.n_embd = positive_int(file, a + "embedding_length", kMaxDim);
  c.n_layer = positive_int(file, a + "block_count", 4096);
  c.n_head = positive_int(file, a + "attention.head_count", 4096);
  c.n_head_kv = file.has(a + "attention.head_count_kv")
                    ? positive_int(file, a + "attention.head_count_kv", 4096)
                    : c.n_head;
  c.n_ff = positive_int(file, a + "feed_forward_length", kMaxDim);
  c.context_length = positive_int(file, a + "context_length", 1 << 24);
  if (c.n_embd % c.n_head != 0)
    throw gguf::GgufError(file.name() + ": embedding_length " + std::to_string(c.n_embd) +
                          " is not a multiple of head_count " + std::to_string(c.n_head));
  if (c.n_head % c.n_head_kv != 0)
    throw gguf::GgufError(file.name() + ": head_count " + std::to_string(c.n_head) +
                          " is not a multiple of head_count_kv " + std::to_string(c.n_head_kv));
  c.head_dim = c.n_embd / c.n_head;
  c.n_rot = file.has(a + "rope.dimension_count")
                ? positive_int(file, a + "rope.dimension_count", c.head_dim)
                : c.head_dim;
  if (c.n_rot % 2 != 0) throw gguf::GgufError(file.name() + ": rope.dimension_count must be even");
  c.rope_base = static_cast<float>(file.get_float_or(a + "rope.freq_base", 10000.0));
  c.rms_eps = static_cast<float>(file.get_float_or(a + "attention.layer_norm_rms_epsilon", 1e-5));
  if (!(c.rope_base > 0) || !(c.rms_eps > 0))
    throw gguf::GgufError(file.name() + ": rope.freq_base and layer_norm_rms_epsilon must be > 0");

  // The vocabulary size is the embedding's outer dimension; metadata may omit it.
  const gguf::TensorInfo* embd = file.find_tensor("token_embd.weight");
  if (!embd) throw gguf::GgufError(file.name() + ": missing tensor 'token_embd.weight'");
  if (embd->dims.size() != 2 || embd->dims[0] != static_cast<uint64_t>(c.n_embd) ||
      embd->dims[1] == 0 || embd->dims[1] > (1u << 24))
    throw gguf::GgufError(file.name() + ": tensor 'token_embd.weight' has the wrong shape");
  c.n_vocab = static_cast<int32_t>(embd->dims[1]);
  return c;
}

}  // namespace tandem
