// Metadata that changes the math, read as llama.cpp reads it (src/llama-model.cpp's
// load_hparams, llama-context.cpp's RoPE scaling): honoured, or refused by name, never
// silently ignored. Each case writes a header and reads ModelConfig::from_gguf.
#include <gtest/gtest.h>

#include <functional>

#include "runner/model/config.h"
#include "runner/model/make_model.h"
#include "tests/common/test_support.h"

namespace tandem::testing::TANDEM_UNITY_ID {
namespace {

// A header of `arch` with tiny's widths (hidden 64, 4 heads, FFN 128) and `layers` layers,
// plus the embedding that from_gguf reads the vocabulary from; `edit` adds the keys a case
// is about.
gguf::File header(const ScratchDir& dir, const std::string& arch, uint32_t layers,
                  const std::function<void(gguf::Writer&)>& edit) {
  gguf::Writer w;
  w.add_string("general.architecture", arch);
  w.add_uint32(arch + ".context_length", 512);
  w.add_uint32(arch + ".embedding_length", 64);
  w.add_uint32(arch + ".block_count", layers);
  w.add_uint32(arch + ".feed_forward_length", 128);
  w.add_uint32(arch + ".attention.head_count", 4);
  w.add_float32(arch + ".attention.layer_norm_rms_epsilon", 1e-6f);
  edit(w);
  w.add_tensor("token_embd.weight", gguf::TensorType::kF32, {64, 8},
               make_model::encode_weights(gguf::TensorType::kF32, std::vector<float>(512, 0)));
  const auto path = dir.file(arch + ".gguf");
  w.write(path);
  return gguf::File::open(path);
}

ModelConfig config_of(const std::string& arch, uint32_t layers,
                      const std::function<void(gguf::Writer&)>& edit) {
  ScratchDir dir;
  return ModelConfig::from_gguf(header(dir, arch, layers, edit));
}

std::string error_of(const std::string& arch, const std::function<void(gguf::Writer&)>& edit) {
  try {
    config_of(arch, 2, edit);
  } catch (const gguf::GgufError& e) {
    return e.what();
  }
  return "(loaded)";
}

// Gemma 2 files converted before the softcapping keys existed hold neither; llama.cpp then
// caps at its defaults, 50 and 30, as the model was trained.
TEST(ConfigMetadata, Gemma2WithoutTheCapKeysCapsAt50And30) {
  const ModelConfig c = config_of("gemma2", 2, [](gguf::Writer&) {});
  EXPECT_FLOAT_EQ(c.attn_softcap, 50.0f);
  EXPECT_FLOAT_EQ(c.final_softcap, 30.0f);
  const ModelConfig given = config_of("gemma2", 2, [](gguf::Writer& w) {
    w.add_float32("gemma2.attn_logit_softcapping", 20.0f);
    w.add_float32("gemma2.final_logit_softcapping", 0.0f);  // 0: no cap
  });
  EXPECT_FLOAT_EQ(given.attn_softcap, 20.0f);
  EXPECT_FLOAT_EQ(given.final_softcap, 0.0f);
}

// Gemma 3's configuration has no caps (null); a file that sets them is honoured, as
// transformers' Gemma3 applies them, rather than ignored.
TEST(ConfigMetadata, Gemma3CapsOnlyWhereItsFileSays) {
  const ModelConfig none = config_of("gemma3", 2, [](gguf::Writer&) {});
  EXPECT_FLOAT_EQ(none.attn_softcap, 0.0f);
  EXPECT_FLOAT_EQ(none.final_softcap, 0.0f);
  const ModelConfig capped = config_of(
      "gemma3", 2, [](gguf::Writer& w) { w.add_float32("gemma3.final_logit_softcapping", 0.5f); });
  EXPECT_FLOAT_EQ(capped.final_softcap, 0.5f);
}

TEST(ConfigMetadata, SlidingWindowPatternComesFromTheFileElseTheFamily) {
  const auto window = [](gguf::Writer& w, const std::string& arch) {
    w.add_uint32(arch + ".attention.sliding_window", 16);
  };
  const ModelConfig gemma3 = config_of("gemma3", 7, [&](gguf::Writer& w) { window(w, "gemma3"); });
  for (int32_t l = 0; l < 7; ++l) EXPECT_EQ(gemma3.is_local_layer(l), l % 6 != 5) << l;
  const ModelConfig period3 = config_of("gemma3", 7, [&](gguf::Writer& w) {
    window(w, "gemma3");
    w.add_uint32("gemma3.attention.sliding_window_pattern", 3);
  });
  for (int32_t l = 0; l < 7; ++l) EXPECT_EQ(period3.is_local_layer(l), l % 3 != 2) << l;
  const ModelConfig flags = config_of("gemma2", 3, [&](gguf::Writer& w) {
    window(w, "gemma2");
    w.add(std::string("gemma2.attention.sliding_window_pattern"),
          gguf::Value{gguf::ValueType::kArray,
                      gguf::Array{gguf::ValueType::kBool,
                                  {gguf::Value{gguf::ValueType::kBool, false},
                                   gguf::Value{gguf::ValueType::kBool, true},
                                   gguf::Value{gguf::ValueType::kBool, true}}}});
  });
  EXPECT_EQ(flags.local_layers, (std::vector<bool>{false, true, true}));
  EXPECT_NE(error_of("gemma2",
                     [](gguf::Writer& w) {
                       w.add(std::string("gemma2.attention.sliding_window_pattern"),
                             gguf::Value{gguf::ValueType::kArray,
                                         gguf::Array{gguf::ValueType::kBool,
                                                     {gguf::Value{gguf::ValueType::kBool, true}}}});
                     })
                .find("holds 1 flags for 2 layers"),
            std::string::npos);
}

// llama.cpp: the type defaults to linear, rope.scaling.factor wins over the older
// rope.scale_linear, a factor of 0 is none, and type none never scales.
TEST(ConfigMetadata, RopeScalingCombinesItsKeysAsLlamaCppDoes) {
  const auto scale = [](const std::function<void(gguf::Writer&)>& edit) {
    return config_of("llama", 1, edit).rope.scale;
  };
  EXPECT_FLOAT_EQ(scale([](gguf::Writer&) {}), 1.0f);
  EXPECT_FLOAT_EQ(scale([](gguf::Writer& w) { w.add_float32("llama.rope.scaling.factor", 4); }),
                  0.25f);
  EXPECT_FLOAT_EQ(scale([](gguf::Writer& w) { w.add_float32("llama.rope.scale_linear", 2); }),
                  0.5f);
  EXPECT_FLOAT_EQ(scale([](gguf::Writer& w) {
                    w.add_string("llama.rope.scaling.type", "linear");
                    w.add_float32("llama.rope.scaling.factor", 4);
                    w.add_float32("llama.rope.scale_linear", 2);
                  }),
                  0.25f);
  EXPECT_FLOAT_EQ(scale([](gguf::Writer& w) {
                    w.add_string("llama.rope.scaling.type", "none");
                    w.add_float32("llama.rope.scale_linear", 4);
                  }),
                  1.0f);
  EXPECT_FLOAT_EQ(scale([](gguf::Writer& w) { w.add_float32("llama.rope.scaling.factor", 0); }),
                  1.0f);
}

TEST(ConfigMetadata, RefusesWhatLlamaCppRefuses) {
  EXPECT_NE(
      error_of("llama", [](gguf::Writer& w) { w.add_uint32("llama.rope.dimension_count", 8); })
          .find("llama.rope.dimension_count = 8 differs from the head size 16"),
      std::string::npos);
  ScratchDir dir;
  gguf::Writer w;
  w.add_string("general.architecture", "qwen2");
  w.add_uint32("qwen2.context_length", 512);
  w.add_uint32("qwen2.embedding_length", 64);
  w.add_uint32("qwen2.block_count", 1);
  w.add_uint32("qwen2.feed_forward_length", 128);
  w.add_uint32("qwen2.attention.head_count", 4);
  w.write(dir.file("no-eps.gguf"));
  try {
    ModelConfig::from_gguf(gguf::File::open(dir.file("no-eps.gguf")));
    ADD_FAILURE() << "loaded";
  } catch (const gguf::GgufError& e) {
    EXPECT_NE(std::string(e.what()).find("missing qwen2.attention.layer_norm_rms_epsilon"),
              std::string::npos)
        << e.what();
  }
}

// Embedding models' converters write how states pool (llama.cpp's LLAMA_POOLING_TYPE:
// Qwen3-Embedding's 3, last) and, for bidirectional encoders, attention.causal false, which
// no kernel here computes: refused by name rather than run causally.
TEST(ConfigMetadata, PoolingTypeIsReadAndBidirectionalAttentionRefused) {
  EXPECT_FALSE(config_of("qwen3", 2, [](gguf::Writer&) {}).pooling().has_value());
  const auto pooling = [](uint32_t type) {
    return config_of("qwen3", 2, [&](gguf::Writer& w) { w.add_uint32("qwen3.pooling_type", type); })
        .pooling();
  };
  EXPECT_EQ(pooling(1), Pooling::kMean);
  EXPECT_EQ(pooling(2), Pooling::kCls);
  EXPECT_EQ(pooling(3), Pooling::kLast);
  EXPECT_FALSE(pooling(0).has_value());  // none: the server's default applies
  // A reranker's rank (4) is not served, but generation never reads it: the file loads,
  // the type kept for /v1/embeddings to refuse.
  const ModelConfig rank =
      config_of("qwen3", 2, [](gguf::Writer& w) { w.add_uint32("qwen3.pooling_type", 4); });
  EXPECT_FALSE(rank.pooling().has_value());
  EXPECT_EQ(rank.pooling_type, 4);
  EXPECT_NE(error_of("qwen3", [](gguf::Writer& w) { w.add_string("qwen3.pooling_type", "last"); })
                .find("qwen3.pooling_type must be an integer"),
            std::string::npos);
  EXPECT_NE(error_of("qwen2", [](gguf::Writer& w) { w.add_bool("qwen2.attention.causal", false); })
                .find("bidirectional attention is not supported"),
            std::string::npos);
  EXPECT_EQ(error_of("qwen2", [](gguf::Writer& w) { w.add_bool("qwen2.attention.causal", true); }),
            "(loaded)");
}

}  // namespace
}  // namespace tandem::testing::TANDEM_UNITY_ID
