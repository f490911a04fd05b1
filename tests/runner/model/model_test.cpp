// Loading models: configuration from metadata, tied heads, and clear one-line errors
// for files that are valid GGUF but not a model tandem can run.
#include "runner/model/model.h"

#include <gtest/gtest.h>

#include "runner/model/make_model.h"
#include "tests/common/test_models.h"
#include "tests/common/test_support.h"

namespace tandem::testing::TANDEM_UNITY_ID {
namespace {

std::string load_error(const std::filesystem::path& path) {
  try {
    Model::load(path);
  } catch (const gguf::GgufError& e) {
    return e.what();
  }
  return "";
}

// The metadata of a llama model with tiny's widths (hidden 64, FFN 128, context 512).
gguf::Writer llama_header(uint32_t layers, uint32_t heads) {
  gguf::Writer w;
  w.add_string("general.architecture", "llama");
  w.add_uint32("llama.context_length", 512);
  w.add_uint32("llama.embedding_length", 64);
  w.add_uint32("llama.block_count", layers);
  w.add_uint32("llama.feed_forward_length", 128);
  w.add_uint32("llama.attention.head_count", heads);
  w.add_float32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  return w;
}

TEST(Model, ReadsTheConfigurationFromMetadata) {
  ScratchDir dir;
  auto model = Model::load(write_tiny_llama(dir.path(), gguf::TensorType::kF16));
  const ModelConfig& c = model->config();
  EXPECT_EQ(c.architecture, "llama");
  EXPECT_EQ(c.n_embd, 64);
  EXPECT_EQ(c.n_layer, 2);
  EXPECT_EQ(c.n_head, 4);
  EXPECT_EQ(c.n_head_kv, 2);
  EXPECT_EQ(c.head_dim, 16);
  EXPECT_EQ(c.n_ff, 128);
  EXPECT_EQ(c.n_vocab, 258);
  EXPECT_EQ(c.rope_style, RopeStyle::kAdjacentPairs);
  EXPECT_FALSE(c.qkv_bias);
  EXPECT_FALSE(model->tied_embeddings());
}

TEST(Model, Qwen2UsesNeoxRopeQkvBiasAndTiedEmbeddings) {
  ScratchDir dir;
  auto model = Model::load(write_tiny_qwen2(dir.path(), gguf::TensorType::kF32));
  EXPECT_EQ(model->config().rope_style, RopeStyle::kNeox);
  EXPECT_TRUE(model->config().qkv_bias);
  EXPECT_TRUE(model->tied_embeddings());
  EXPECT_EQ(model->layers()[0].qkv_bias.size(), 64u + 2 * 32u);
}

TEST(Model, RejectsAnUnsupportedArchitectureByName) {
  ScratchDir dir;
  gguf::Writer w;
  w.add_string("general.architecture", "gptj");
  auto path = dir.file("gptj.gguf");
  w.write(path);
  std::string err = load_error(path);
  EXPECT_NE(err.find("unsupported architecture 'gptj'"), std::string::npos) << err;
}

TEST(Model, EscapesAnArchitectureWithRawBytes) {
  // Printed as a C string, an embedded NUL would end the message at "unsupported
  // architecture 'll".
  ScratchDir dir;
  gguf::Writer w;
  w.add_string("general.architecture", std::string("ll\0ama\n", 7));
  auto path = dir.file("nul.gguf");
  w.write(path);
  std::string err = load_error(path);
  EXPECT_NE(err.find("unsupported architecture 'll\\x00ama\\x0a' (supported:"), std::string::npos)
      << err;
  EXPECT_EQ(err.find('\0'), std::string::npos);
}

TEST(Model, NamesAMissingTensor) {
  ScratchDir dir;
  auto shape = *make_model::find_model_shape("tiny");
  gguf::Writer w = llama_header(/*layers=*/2, /*heads=*/4);
  w.add_uint32("llama.attention.head_count_kv", 2);
  for (const auto& t : make_model::plan_tensors(shape, 258)) {
    if (t.name == "blk.1.ffn_up.weight") continue;
    uint64_t n = 1;
    for (auto d : t.dims) n *= d;
    w.add_tensor(t.name, gguf::TensorType::kF32, t.dims,
                 make_model::encode_weights(gguf::TensorType::kF32, std::vector<float>(n, 0.5f)));
  }
  auto path = dir.file("missing.gguf");
  w.write(path);
  std::string err = load_error(path);
  EXPECT_NE(err.find("missing tensor 'blk.1.ffn_up.weight'"), std::string::npos) << err;
}

// tiny's llama tensors (2 layers, 2 KV heads) plus `extra`, each 0.5.
std::filesystem::path tiny_with(const ScratchDir& dir, const std::string& name,
                                const std::vector<make_model::PlannedTensor>& extra) {
  auto shape = *make_model::find_model_shape("tiny");
  gguf::Writer w = llama_header(/*layers=*/2, /*heads=*/4);
  w.add_uint32("llama.attention.head_count_kv", 2);
  auto tensors = make_model::plan_tensors(shape, 258);
  tensors.insert(tensors.end(), extra.begin(), extra.end());
  for (const auto& t : tensors) {
    uint64_t n = 1;
    for (auto d : t.dims) n *= d;
    w.add_tensor(t.name, gguf::TensorType::kF32, t.dims,
                 make_model::encode_weights(gguf::TensorType::kF32, std::vector<float>(n, 0.5f)));
  }
  auto path = dir.file(name);
  w.write(path);
  return path;
}

// llama.cpp's llama graph adds the Q/K/V biases a file has ("llamafied" Qwen), each alone;
// a tensor the forward pass would not read is refused by name, as llama.cpp refuses a
// file with tensors it did not create, rather than run a model without it.
TEST(Model, LlamaReadsQkvBiasesAndRefusesTensorsItWouldNotUse) {
  ScratchDir dir;
  std::vector<make_model::PlannedTensor> biases;
  for (int layer = 0; layer < 2; ++layer)
    for (auto [name, n] : {std::pair{"attn_q.bias", 64}, {"attn_k.bias", 32}, {"attn_v.bias", 32}})
      biases.push_back({"blk." + std::to_string(layer) + "." + name, {static_cast<uint64_t>(n)}});
  auto model = Model::load(tiny_with(dir, "biased.gguf", biases));
  EXPECT_TRUE(model->config().qkv_bias);
  EXPECT_EQ(model->layers()[1].qkv_bias, std::vector<float>(128, 0.5f));

  std::string err = load_error(tiny_with(dir, "out-bias.gguf", {{"blk.1.attn_output.bias", {64}}}));
  EXPECT_NE(err.find("tensor 'blk.1.attn_output.bias' is not used by llama"), std::string::npos)
      << err;
  // Each bias on its own, as llama.cpp adds each a layer has: the missing part is zeros.
  biases.pop_back();  // blk.1.attn_v.bias
  auto partial = Model::load(tiny_with(dir, "partial.gguf", biases));
  std::vector<float> expected(96, 0.5f);
  expected.resize(128, 0.0f);
  EXPECT_EQ(partial->layers()[1].qkv_bias, expected);
  EXPECT_EQ(partial->layers()[0].qkv_bias, std::vector<float>(128, 0.5f));
}

TEST(Model, NamesAMisshapenTensor) {
  ScratchDir dir;
  gguf::Writer w = llama_header(/*layers=*/1, /*heads=*/4);
  std::vector<float> embd(64 * 10, 0.1f), norm(64, 1.0f), q(64 * 63, 0.1f);
  w.add_tensor("token_embd.weight", gguf::TensorType::kF32, {64, 10},
               make_model::encode_weights(gguf::TensorType::kF32, embd));
  w.add_tensor("blk.0.attn_norm.weight", gguf::TensorType::kF32, {64},
               make_model::encode_weights(gguf::TensorType::kF32, norm));
  w.add_tensor("blk.0.attn_q.weight", gguf::TensorType::kF32, {64, 63},
               make_model::encode_weights(gguf::TensorType::kF32, q));
  auto path = dir.file("misshapen.gguf");
  w.write(path);
  std::string err = load_error(path);
  EXPECT_NE(err.find("'blk.0.attn_q.weight' has shape [64, 63], expected [64, 64]"),
            std::string::npos)
      << err;
}

TEST(Model, RejectsHeadCountsThatDoNotDivide) {
  ScratchDir dir;
  gguf::Writer w = llama_header(/*layers=*/1, /*heads=*/5);
  auto path = dir.file("heads.gguf");
  w.write(path);
  std::string err = load_error(path);
  EXPECT_NE(err.find("not a multiple of head_count"), std::string::npos) << err;
}

// Metadata that changes the outputs is implemented or refused, never ignored.
TEST(Model, RefusesRopeScalingItDoesNotImplementNamingTheKey) {
  ScratchDir dir;
  gguf::Writer w = llama_header(/*layers=*/1, /*heads=*/4);
  w.add_string("llama.rope.scaling.type", "yarn");
  w.add_float32("llama.rope.scaling.factor", 4.0f);
  auto path = dir.file("yarn.gguf");
  w.write(path);
  std::string err = load_error(path);
  EXPECT_NE(err.find("llama.rope.scaling.type = 'yarn' is not supported"), std::string::npos)
      << err;
}

TEST(Model, ReadsLinearRopeScaling) {
  ScratchDir dir;
  gguf::Writer w = llama_header(/*layers=*/1, /*heads=*/4);
  w.add_string("llama.rope.scaling.type", "linear");
  w.add_float32("llama.rope.scaling.factor", 4.0f);
  gguf::File file = [&] {
    auto path = dir.file("linear.gguf");
    w.add_tensor("token_embd.weight", gguf::TensorType::kF32, {64, 8},
                 make_model::encode_weights(gguf::TensorType::kF32, std::vector<float>(512, 0)));
    w.write(path);
    return gguf::File::open(path);
  }();
  const ModelConfig c = ModelConfig::from_gguf(file);
  EXPECT_FLOAT_EQ(c.rope.scale, 0.25f);
  EXPECT_FLOAT_EQ(c.rope_local.scale, 0.25f);
}

TEST(Model, Gemma3HasFiveLocalLayersToOneGlobalWithTheirOwnRope) {
  TANDEM_REQUIRE_SHARED();
  auto model = Model::load(*shared_dir() / "models/families/gemma3-tiny-s777-f16.gguf");
  const ModelConfig& c = model->config();
  EXPECT_EQ(c.head_dim, 64);
  EXPECT_EQ(c.q_dim(), 256);
  EXPECT_TRUE(c.qk_norm && c.post_norms);
  EXPECT_EQ(c.activation, Activation::kGeluTanh);
  EXPECT_EQ(c.sliding_window, 40);
  for (int32_t l = 0; l < c.n_layer; ++l) EXPECT_EQ(c.is_local_layer(l), l % 6 != 5) << l;
  EXPECT_FLOAT_EQ(c.rope_of(0).base, 10000.0f);
  EXPECT_FLOAT_EQ(c.rope_of(0).scale, 1.0f);
  EXPECT_FLOAT_EQ(c.rope_of(5).base, 1e6f);
  EXPECT_FLOAT_EQ(c.rope_of(5).scale, 0.125f);
}

}  // namespace
}  // namespace tandem::testing::TANDEM_UNITY_ID
