// `tandem make-model`'s library: shapes, tensor plan, the deterministic weight stream,
// the encodings, the built-in vocabulary, and files that read back as generated.
#include "runner/model/make_model.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <set>

#include <gtest/gtest.h>

#include "runner/util/float16.h"
#include "tests/common/test_support.h"

namespace tandem::make_model::TANDEM_UNITY_ID {
namespace {

using ::tandem::testing::ScratchDir;

std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

std::filesystem::path write(const ScratchDir& dir, const std::string& name, std::string shape,
                            gguf::TensorType dtype, uint64_t seed = 0) {
  MakeModelOptions options;
  options.shape = std::move(shape);
  options.dtype = dtype;
  options.seed = seed;
  options.out = dir.file(name);
  write_random_model(options);
  return options.out;
}

uint64_t product(const std::vector<uint64_t>& dims) {
  uint64_t n = 1;
  for (auto d : dims) n *= d;
  return n;
}

TEST(MakeModel, ShapesHaveTheDocumentedDimensions) {
  const ModelShape* tiny = find_model_shape("tiny");
  const ModelShape* demo = find_model_shape("demo");
  const ModelShape* smol = find_model_shape("smollm2-135m");
  ASSERT_TRUE(tiny && demo && smol);
  EXPECT_EQ(find_model_shape("huge"), nullptr);
  auto row = [](const ModelShape& s) {
    return std::vector<int64_t>{s.hidden,
                                s.layers,
                                s.heads,
                                s.kv_heads,
                                s.ffn,
                                s.context,
                                static_cast<int64_t>(s.rope_base)};
  };
  EXPECT_EQ(row(*tiny), (std::vector<int64_t>{64, 2, 4, 2, 128, 512, 10000}));
  EXPECT_EQ(row(*demo), (std::vector<int64_t>{256, 4, 4, 2, 768, 2048, 10000}));
  EXPECT_EQ(row(*smol), (std::vector<int64_t>{576, 30, 9, 3, 1536, 2048, 100000}));
  EXPECT_EQ(smol->head_dim(), 64);
  EXPECT_FALSE(tiny->tied_embeddings);
  EXPECT_FALSE(demo->tied_embeddings);
  EXPECT_TRUE(smol->tied_embeddings);
}

TEST(MakeModel, PlanUsesLlamaCppNamesAndGgmlDimOrder) {
  const auto plan = plan_tensors(*find_model_shape("tiny"), 258);
  ASSERT_EQ(plan.size(), 3u + 2 * 9);
  auto find = [&](const std::string& name) -> const PlannedTensor& {
    for (const auto& t : plan) {
      if (t.name == name) return t;
    }
    throw std::runtime_error("no tensor " + name);
  };
  EXPECT_EQ(find("token_embd.weight").dims, (std::vector<uint64_t>{64, 258}));
  EXPECT_EQ(find("output.weight").dims, (std::vector<uint64_t>{64, 258}));
  EXPECT_EQ(find("output_norm.weight").dims, (std::vector<uint64_t>{64}));
  EXPECT_TRUE(find("output_norm.weight").is_norm);
  EXPECT_EQ(find("blk.1.attn_q.weight").dims, (std::vector<uint64_t>{64, 64}));
  EXPECT_EQ(find("blk.1.attn_k.weight").dims, (std::vector<uint64_t>{64, 32}));
  EXPECT_EQ(find("blk.1.attn_v.weight").dims, (std::vector<uint64_t>{64, 32}));
  EXPECT_EQ(find("blk.1.attn_output.weight").dims, (std::vector<uint64_t>{64, 64}));
  EXPECT_EQ(find("blk.1.ffn_gate.weight").dims, (std::vector<uint64_t>{64, 128}));
  EXPECT_EQ(find("blk.1.ffn_up.weight").dims, (std::vector<uint64_t>{64, 128}));
  EXPECT_EQ(find("blk.1.ffn_down.weight").dims, (std::vector<uint64_t>{128, 64}));
  EXPECT_TRUE(find("blk.0.attn_norm.weight").is_norm);
  EXPECT_TRUE(find("blk.0.ffn_norm.weight").is_norm);
  EXPECT_FALSE(find("blk.0.ffn_down.weight").is_norm);
}

TEST(MakeModel, Smollm2TiesTheOutputHeadToTheEmbedding) {
  const auto plan = plan_tensors(*find_model_shape("smollm2-135m"), 49152);
  ASSERT_EQ(plan.size(), 2u + 30 * 9);
  uint64_t params = 0;
  for (const auto& t : plan) {
    EXPECT_NE(t.name, "output.weight");
    params += product(t.dims);
  }
  EXPECT_EQ(plan[0].dims, (std::vector<uint64_t>{576, 49152}));
  EXPECT_EQ(plan.back().name, "blk.29.ffn_down.weight");
  EXPECT_EQ(params, 134515008u);  // SmolLM2-135M's parameter count
}

TEST(MakeModel, RandomWeightsDependOnlyOnSeedAndName) {
  const auto a = random_weights(7, "blk.0.attn_q.weight", 1001);
  EXPECT_EQ(a, random_weights(7, "blk.0.attn_q.weight", 1001));
  EXPECT_NE(a, random_weights(8, "blk.0.attn_q.weight", 1001));
  EXPECT_NE(a, random_weights(7, "blk.0.attn_k.weight", 1001));
  // A prefix is the same stream: a tensor's values do not depend on its length.
  const auto prefix = random_weights(7, "blk.0.attn_q.weight", 10);
  EXPECT_TRUE(std::equal(prefix.begin(), prefix.end(), a.begin()));
}

TEST(MakeModel, RandomWeightsAreNormalWithTheDocumentedSpread) {
  const auto w = random_weights(0, "token_embd.weight", 200000);
  double sum = 0, sum_sq = 0;
  int beyond_3_sigma = 0;
  for (float x : w) {
    ASSERT_TRUE(std::isfinite(x));
    sum += x;
    sum_sq += double(x) * x;
    if (std::fabs(x) > 3 * kWeightStddev) ++beyond_3_sigma;
  }
  const double mean = sum / w.size();
  const double stddev = std::sqrt(sum_sq / w.size() - mean * mean);
  EXPECT_NEAR(mean, 0.0, 0.0005);
  EXPECT_NEAR(stddev, kWeightStddev, 0.0005);
  EXPECT_NEAR(beyond_3_sigma / double(w.size()), 0.0027, 0.0008);  // a normal's tails
}

TEST(MakeModel, Q8_0EncodingFollowsGgmlsReferenceQuantizer) {
  std::vector<float> x(64);
  for (int i = 0; i < 64; ++i) x[i] = (i < 32) ? (i - 16) * 0.01f : 0.0f;
  x[5] = -0.5f;  // amax of the first block
  const auto bytes = encode_weights(gguf::TensorType::kQ8_0, x);
  ASSERT_EQ(bytes.size(), 2 * sizeof(gguf::BlockQ8_0));
  gguf::BlockQ8_0 blocks[2];
  std::memcpy(blocks, bytes.data(), bytes.size());
  EXPECT_EQ(blocks[0].d, half_from_float(0.5f / 127));
  EXPECT_EQ(blocks[0].qs[5], -127);
  EXPECT_EQ(blocks[0].qs[16], 0);
  const float d = float_from_half(blocks[0].d);
  for (int i = 0; i < 32; ++i) EXPECT_NEAR(blocks[0].qs[i] * d, x[i], d / 2 + 1e-6) << i;
  EXPECT_EQ(blocks[1].d, 0);  // an all-zero block
  for (int8_t q : blocks[1].qs) EXPECT_EQ(q, 0);
}

TEST(MakeModel, ByteLevelVocabularyIsGpt2sByteMap) {
  const auto tokens = byte_level_tokens();
  ASSERT_EQ(tokens.size(), 258u);
  EXPECT_EQ(tokens['A'], "A");
  EXPECT_EQ(tokens['!'], "!");
  EXPECT_EQ(tokens[0], "\xc4\x80");     // U+0100
  EXPECT_EQ(tokens[' '], "\xc4\xa0");   // U+0120, GPT-2's space
  EXPECT_EQ(tokens['\n'], "\xc4\x8a");  // U+010A
  EXPECT_EQ(tokens[0xff], "\xc3\xbf");  // U+00FF stands for itself
  EXPECT_EQ(tokens[0xad], "\xc5\x83");  // U+0143, the last remapped byte
  EXPECT_EQ(tokens[256], "<|bos|>");
  EXPECT_EQ(tokens[257], "<|eos|>");
  EXPECT_EQ(std::set<std::string>(tokens.begin(), tokens.end()).size(), 258u);
}

TEST(MakeModel, FileReadsBackWithTheGeneratedMetadataAndTensors) {
  ScratchDir dir;
  for (const char* dtype_name : {"f32", "f16", "bf16", "q8_0"}) {
    const gguf::TensorType dtype = *dtype_from_name(dtype_name);
    const auto path = write(dir, std::string(dtype_name) + ".gguf", "tiny", dtype, 42);
    const gguf::File file = gguf::File::open(path);
    EXPECT_EQ(file.get_string("general.architecture"), "llama");
    EXPECT_EQ(file.get_int("general.file_type"), file_type(dtype));
    EXPECT_EQ(file.get_int("llama.context_length"), 512);
    EXPECT_EQ(file.get_int("llama.embedding_length"), 64);
    EXPECT_EQ(file.get_int("llama.block_count"), 2);
    EXPECT_EQ(file.get_int("llama.feed_forward_length"), 128);
    EXPECT_EQ(file.get_int("llama.attention.head_count"), 4);
    EXPECT_EQ(file.get_int("llama.attention.head_count_kv"), 2);
    EXPECT_EQ(file.get_float("llama.rope.freq_base"), 10000.0);
    EXPECT_EQ(file.get_int("llama.rope.dimension_count"), 16);
    EXPECT_FLOAT_EQ(file.get_float("llama.attention.layer_norm_rms_epsilon"), 1e-5f);
    EXPECT_EQ(file.get_int("llama.vocab_size"), 258);
    EXPECT_EQ(file.get_string("tokenizer.ggml.model"), "gpt2");
    EXPECT_EQ(file.get_string("tokenizer.ggml.pre"), "default");
    EXPECT_EQ(file.get_string_array("tokenizer.ggml.tokens"), byte_level_tokens());
    const auto types = file.get_int_array("tokenizer.ggml.token_type");
    ASSERT_EQ(types.size(), 258u);
    EXPECT_EQ(types[0], 1);
    EXPECT_EQ(types[256], 3);
    EXPECT_EQ(types[257], 3);
    EXPECT_TRUE(file.get_string_array("tokenizer.ggml.merges").empty());
    EXPECT_EQ(file.get_int("tokenizer.ggml.bos_token_id"), 256);
    EXPECT_EQ(file.get_int("tokenizer.ggml.eos_token_id"), 257);
    EXPECT_TRUE(file.get_bool_or("tokenizer.ggml.add_bos_token", false));

    const auto plan = plan_tensors(*find_model_shape("tiny"), 258);
    ASSERT_EQ(file.tensors().size(), plan.size());
    for (size_t i = 0; i < plan.size(); ++i) {
      const gguf::TensorInfo& t = file.tensors()[i];
      EXPECT_EQ(t.name, plan[i].name);
      EXPECT_EQ(t.dims, plan[i].dims) << t.name;
      const uint64_t n = product(plan[i].dims);
      const std::vector<uint8_t> expected =
          plan[i].is_norm ? encode_weights(gguf::TensorType::kF32, std::vector<float>(n, 1.0f))
                          : encode_weights(dtype, random_weights(42, plan[i].name, n));
      EXPECT_EQ(t.type, plan[i].is_norm ? gguf::TensorType::kF32 : dtype) << t.name;
      ASSERT_EQ(t.n_bytes, expected.size()) << t.name;
      EXPECT_EQ(std::memcmp(t.data, expected.data(), t.n_bytes), 0) << dtype_name << " " << t.name;
    }
  }
}

TEST(MakeModel, DtypesEncodeTheSameWeights) {
  ScratchDir dir;
  const gguf::File f32 = gguf::File::open(write(dir, "a.gguf", "tiny", gguf::TensorType::kF32));
  const gguf::File f16 = gguf::File::open(write(dir, "b.gguf", "tiny", gguf::TensorType::kF16));
  const gguf::File bf16 = gguf::File::open(write(dir, "c.gguf", "tiny", gguf::TensorType::kBF16));
  const gguf::File q8 = gguf::File::open(write(dir, "d.gguf", "tiny", gguf::TensorType::kQ8_0));
  const auto* ref = f32.find_tensor("blk.1.ffn_up.weight");
  const auto* h = f16.find_tensor("blk.1.ffn_up.weight");
  const auto* b = bf16.find_tensor("blk.1.ffn_up.weight");
  const auto* q = q8.find_tensor("blk.1.ffn_up.weight");
  ASSERT_TRUE(ref && h && b && q);
  const auto* x = reinterpret_cast<const float*>(ref->data);
  for (uint64_t i = 0; i < ref->n_elements; ++i) {
    uint16_t h16, b16;
    std::memcpy(&h16, h->data + 2 * i, 2);
    std::memcpy(&b16, b->data + 2 * i, 2);
    ASSERT_NEAR(float_from_half(h16), x[i], std::fabs(x[i]) * 0x1p-11f + 0x1p-25f) << i;
    ASSERT_NEAR(float_from_bfloat(b16), x[i], std::fabs(x[i]) * 0x1p-8f) << i;
    gguf::BlockQ8_0 block;
    std::memcpy(&block, q->data + (i / 32) * sizeof(block), sizeof(block));
    const float d = float_from_half(block.d);
    // Half a step, plus the F16 rounding of the scale (at most 2^-11 of it) over 127 steps.
    ASSERT_NEAR(block.qs[i % 32] * d, x[i], d * (0.5f + 127 * 0x1p-11f) + 1e-6f) << i;
  }
}

TEST(MakeModel, SameSeedGivesAByteIdenticalFileAndAnotherSeedOtherWeights) {
  ScratchDir dir;
  const auto a = slurp(write(dir, "a.gguf", "tiny", gguf::TensorType::kF16, 3));
  const auto b = slurp(write(dir, "b.gguf", "tiny", gguf::TensorType::kF16, 3));
  const auto c = slurp(write(dir, "c.gguf", "tiny", gguf::TensorType::kF16, 4));
  EXPECT_EQ(a, b);
  ASSERT_EQ(a.size(), c.size());  // same layout...
  EXPECT_NE(a, c);                // ...other weights
  const gguf::File fa = gguf::File::open(dir.file("a.gguf"));
  const gguf::File fc = gguf::File::open(dir.file("c.gguf"));
  for (size_t i = 0; i < fa.tensors().size(); ++i) {
    const auto& ta = fa.tensors()[i];
    const auto& tc = fc.tensors()[i];
    const bool same = std::memcmp(ta.data, tc.data, ta.n_bytes) == 0;
    EXPECT_EQ(same, ta.name.find("norm") != std::string::npos) << ta.name;
  }
}

TEST(MakeModel, DemoShapeHasItsHeadAndLayers) {
  ScratchDir dir;
  const gguf::File file =
      gguf::File::open(write(dir, "demo.gguf", "demo", gguf::TensorType::kQ8_0));
  EXPECT_EQ(file.get_int("llama.block_count"), 4);
  EXPECT_EQ(file.get_int("llama.embedding_length"), 256);
  EXPECT_NE(file.find_tensor("output.weight"), nullptr);
  EXPECT_NE(file.find_tensor("blk.3.ffn_down.weight"), nullptr);
  EXPECT_EQ(file.find_tensor("blk.4.ffn_down.weight"), nullptr);
}

TEST(MakeModel, VocabFileTokenizerKeysAreCopied) {
  TANDEM_REQUIRE_SHARED();
  const auto vocab_path = *::tandem::testing::shared_dir() / "vocab/ggml-vocab-llama-spm.gguf";
  const gguf::File vocab = gguf::File::open(vocab_path);
  ScratchDir dir;
  MakeModelOptions options;
  options.shape = "tiny";
  options.dtype = gguf::TensorType::kQ8_0;
  options.vocab = vocab_path;
  options.out = dir.file("spm.gguf");
  write_random_model(options);
  const gguf::File file = gguf::File::open(options.out);

  const auto tokens = vocab.get_string_array("tokenizer.ggml.tokens");
  EXPECT_EQ(file.get_int("llama.vocab_size"), static_cast<int64_t>(tokens.size()));
  EXPECT_EQ(file.find_tensor("token_embd.weight")->dims,
            (std::vector<uint64_t>{64, tokens.size()}));
  int copied = 0;
  for (const auto& [key, value] : vocab.metadata()) {
    if (!key.starts_with("tokenizer.")) continue;
    ++copied;
    const gguf::Value* got = file.find(key);
    ASSERT_NE(got, nullptr) << key;
    EXPECT_EQ(got->type, value.type) << key;
  }
  EXPECT_GE(copied, 5);
  EXPECT_EQ(file.get_string("tokenizer.ggml.model"), vocab.get_string("tokenizer.ggml.model"));
  EXPECT_EQ(file.get_string_array("tokenizer.ggml.tokens"), tokens);
  EXPECT_EQ(file.get_float_array("tokenizer.ggml.scores"),
            vocab.get_float_array("tokenizer.ggml.scores"));
  EXPECT_EQ(file.get_int("tokenizer.ggml.bos_token_id"),
            vocab.get_int("tokenizer.ggml.bos_token_id"));
}

TEST(MakeModel, BadVocabFilesAreVocabErrors) {
  ScratchDir dir;
  std::ofstream(dir.file("text.gguf")) << "not a gguf file at all";
  gguf::Writer no_tokenizer;
  no_tokenizer.add_string("general.name", "x");
  no_tokenizer.write(dir.file("plain.gguf"));
  for (const char* name : {"text.gguf", "plain.gguf", "missing.gguf"}) {
    MakeModelOptions options;
    options.vocab = dir.file(name);
    options.out = dir.file("out.gguf");
    EXPECT_THROW(write_random_model(options), VocabError) << name;
    EXPECT_FALSE(std::filesystem::exists(options.out)) << name;
  }
}

}  // namespace
}  // namespace tandem::make_model::TANDEM_UNITY_ID
