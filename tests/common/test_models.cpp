#include "tests/common/test_models.h"

#include <algorithm>

#include "runner/model/make_model.h"

namespace tandem::testing {

std::filesystem::path write_tiny_llama(const std::filesystem::path& dir, gguf::TensorType dtype,
                                       uint64_t seed) {
  make_model::MakeModelOptions o;
  o.shape = "tiny";
  o.dtype = dtype;
  o.seed = seed;
  o.out = dir / ("tiny-llama-" + std::string(gguf::type_name(dtype)) + ".gguf");
  make_model::write_random_model(o);
  return o.out;
}

std::filesystem::path write_tiny_qwen2(const std::filesystem::path& dir, gguf::TensorType dtype,
                                       uint64_t seed, int64_t heads) {
  make_model::ModelShape shape = *make_model::find_model_shape("tiny");
  if (heads > 0) {
    shape.heads = heads;
    shape.kv_heads = std::max<int64_t>(1, heads / 2);
  }
  shape.tied_embeddings = true;
  shape.rope_base = 1000000.0;
  const uint64_t vocab = 300;
  gguf::Writer w;
  w.add_string("general.architecture", "qwen2");
  w.add_uint32("qwen2.context_length", static_cast<uint32_t>(shape.context));
  w.add_uint32("qwen2.embedding_length", static_cast<uint32_t>(shape.hidden));
  w.add_uint32("qwen2.block_count", static_cast<uint32_t>(shape.layers));
  w.add_uint32("qwen2.feed_forward_length", static_cast<uint32_t>(shape.ffn));
  w.add_uint32("qwen2.attention.head_count", static_cast<uint32_t>(shape.heads));
  w.add_uint32("qwen2.attention.head_count_kv", static_cast<uint32_t>(shape.kv_heads));
  w.add_float32("qwen2.rope.freq_base", static_cast<float>(shape.rope_base));
  w.add_float32("qwen2.attention.layer_norm_rms_epsilon", 1e-6f);

  auto add = [&](const std::string& name, std::vector<uint64_t> dims, bool norm) {
    uint64_t n = 1;
    for (uint64_t d : dims) n *= d;
    std::vector<float> values =
        norm ? std::vector<float>(n, 1.0f) : make_model::random_weights(seed, name, n);
    gguf::TensorType type = norm ? gguf::TensorType::kF32 : dtype;
    std::vector<uint8_t> bytes = make_model::encode_weights(type, values);
    w.add_tensor(name, type, std::move(dims), bytes);
  };
  for (const auto& t : make_model::plan_tensors(shape, vocab)) add(t.name, t.dims, t.is_norm);
  const uint64_t kv = static_cast<uint64_t>(shape.kv_heads * shape.head_dim());
  for (int64_t l = 0; l < shape.layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    // Biases are F32 in real qwen2 files; random values make them matter.
    auto bias = [&](const std::string& name, uint64_t n) {
      std::vector<float> v = make_model::random_weights(seed, p + name, n);
      for (float& x : v) x *= 10;  // ~N(0, 0.2): large enough to move the logits
      w.add_tensor(p + name, gguf::TensorType::kF32, {n},
                   make_model::encode_weights(gguf::TensorType::kF32, v));
    };
    bias("attn_q.bias", static_cast<uint64_t>(shape.hidden));
    bias("attn_k.bias", kv);
    bias("attn_v.bias", kv);
  }
  auto path = dir / ("tiny-qwen2-" + std::string(gguf::type_name(dtype)) + "-h" +
                     std::to_string(shape.heads) + ".gguf");
  w.write(path);
  return path;
}

}  // namespace tandem::testing
