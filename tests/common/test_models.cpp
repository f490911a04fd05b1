#include "tests/common/test_models.h"

#include <algorithm>
#include <cmath>

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

std::filesystem::path write_tiny_phi3_long_rope(const std::filesystem::path& dir,
                                                gguf::TensorType dtype, uint64_t seed) {
  const make_model::ModelShape shape = *make_model::find_model_shape("tiny");
  const auto hidden = static_cast<uint64_t>(shape.hidden), ff = static_cast<uint64_t>(shape.ffn);
  const auto kv = static_cast<uint64_t>(shape.kv_heads * shape.head_dim());
  const uint64_t vocab = 300, half_rot = static_cast<uint64_t>(shape.head_dim() / 2);
  const double attn_factor =
      std::sqrt(1 + std::log(double{kTinyPhi3Context} / kTinyPhi3OriginalContext) /
                        std::log(double{kTinyPhi3OriginalContext}));
  gguf::Writer w;
  w.add_string("general.architecture", "phi3");
  w.add_uint32("phi3.context_length", kTinyPhi3Context);
  w.add_uint32("phi3.rope.scaling.original_context_length", kTinyPhi3OriginalContext);
  w.add_float32("phi3.rope.scaling.attn_factor", static_cast<float>(attn_factor));
  w.add_uint32("phi3.embedding_length", static_cast<uint32_t>(hidden));
  w.add_uint32("phi3.block_count", static_cast<uint32_t>(shape.layers));
  w.add_uint32("phi3.feed_forward_length", static_cast<uint32_t>(ff));
  w.add_uint32("phi3.attention.head_count", static_cast<uint32_t>(shape.heads));
  w.add_uint32("phi3.attention.head_count_kv", static_cast<uint32_t>(shape.kv_heads));
  w.add_uint32("phi3.rope.dimension_count", static_cast<uint32_t>(shape.head_dim()));
  w.add_float32("phi3.attention.layer_norm_rms_epsilon", 1e-5f);

  // scale: q and k four times larger make the attention scores 16 times sharper, so the
  // RoPE angles (and the factors chosen) move the logits well above the test bounds.
  auto add = [&](const std::string& name, std::vector<uint64_t> dims, bool norm,
                 float scale = 1.0f) {
    uint64_t n = 1;
    for (uint64_t d : dims) n *= d;
    std::vector<float> values =
        norm ? std::vector<float>(n, 1.0f) : make_model::random_weights(seed, name, n);
    for (float& v : values) v *= scale;
    const gguf::TensorType type = norm ? gguf::TensorType::kF32 : dtype;
    w.add_tensor(name, type, std::move(dims), make_model::encode_weights(type, values));
  };
  // Short factors near 1 (Phi-3's are 1-3), long ones growing to ~25 (Phi-3's reach ~60).
  std::vector<float> short_factors(half_rot), long_factors(half_rot);
  for (uint64_t i = 0; i < half_rot; ++i) {
    short_factors[i] = 1.0f + 0.1f * static_cast<float>(i);
    long_factors[i] = 1.0f + 3.5f * static_cast<float>(i * i) / 7.0f;
  }
  w.add_tensor("rope_factors_long.weight", gguf::TensorType::kF32, {half_rot},
               make_model::encode_weights(gguf::TensorType::kF32, long_factors));
  w.add_tensor("rope_factors_short.weight", gguf::TensorType::kF32, {half_rot},
               make_model::encode_weights(gguf::TensorType::kF32, short_factors));
  add("token_embd.weight", {hidden, vocab}, false);
  add("output_norm.weight", {hidden}, true);
  add("output.weight", {hidden, vocab}, false);
  for (int64_t l = 0; l < shape.layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    add(p + "attn_norm.weight", {hidden}, true);
    add(p + "attn_qkv.weight", {hidden, hidden + 2 * kv}, false, 4.0f);
    add(p + "attn_output.weight", {hidden, hidden}, false);
    add(p + "ffn_norm.weight", {hidden}, true);
    add(p + "ffn_up.weight", {hidden, 2 * ff}, false);
    add(p + "ffn_down.weight", {ff, hidden}, false);
  }
  auto path = dir / ("tiny-phi3-long-rope-" + std::string(gguf::type_name(dtype)) + ".gguf");
  w.write(path);
  return path;
}

}  // namespace tandem::testing
