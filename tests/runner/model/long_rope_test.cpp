// phi3 128k's LongRoPE (law 7): rope_factors_long/short.weight divide the RoPE
// frequencies, the long ones when the served context exceeds
// rope.scaling.original_context_length (llama.cpp's get_rope_factors), and
// rope.scaling.attn_factor scales cos and sin. Checked against the double-precision
// reference for both choices, and the choice against the served context.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "runner/device/cpu_executor.h"
#include "runner/model/forward.h"
#include "runner/model/make_model.h"
#include "tests/common/test_models.h"
#include "tests/common/test_support.h"
#include "tests/runner/model/reference_model.h"

namespace tandem::testing::TANDEM_UNITY_ID {
namespace {

using gguf::TensorType;

// A forward pass over a model served at `served` tokens, with 16 F32 KV blocks.
struct Served {
  Served(const std::filesystem::path& path, int32_t served)
      : model(Model::load(path)),
        pool(2),
        kv(model->config().n_layer, model->config().kv_dim(), 16, KvType::kF32,
           model->config().head_dim),
        forward(*model, kv, pool, served) {
    blocks.resize(16);
    std::iota(blocks.begin(), blocks.end(), 0);
  }

  // The logits after `tokens`, prefilled from position 0.
  std::vector<float> logits(const std::vector<int32_t>& tokens) {
    ForwardRow row{tokens, 0, blocks, true};
    std::span<float> out = forward.run({&row, 1});
    return {out.begin(), out.end()};
  }

  std::unique_ptr<Model> model;
  ThreadPool pool;
  KvCache kv;
  ForwardPass forward;
  std::vector<int32_t> blocks;
};

std::vector<int32_t> prompt() {
  std::vector<int32_t> p(40);
  for (int32_t i = 0; i < 40; ++i) p[i] = 1 + (i * 37) % 290;
  return p;
}

double max_difference(const std::vector<float>& a, const std::vector<double>& b) {
  double worst = 0;
  for (size_t i = 0; i < b.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
  return worst;
}

std::vector<double> widen(const std::vector<float>& v) { return {v.begin(), v.end()}; }

// F32 weights and KV: only F32 rounding separates tandem from the reference (as for the
// tiny llama and qwen2, 2e-5).
constexpr double kTolerance = 2e-5;

class LongRope : public ::testing::TestWithParam<int32_t> {};

// Prefill, then greedy decode steps, each step's logits against the reference served at
// the same context.
TEST_P(LongRope, LogitsMatchTheDoublePrecisionReference) {
  ScratchDir dir;
  const auto path = write_tiny_phi3_long_rope(dir.path(), TensorType::kF32);
  const int32_t served = GetParam();
  ReferenceModel reference(path, served);
  Served fast(path, served);
  std::vector<int32_t> seq = prompt();
  std::vector<float> logits = fast.logits(seq);
  for (int step = 0; step < 4; ++step) {
    const double error = max_difference(logits, reference.logits(seq));
    EXPECT_LE(error, kTolerance) << "step " << step;
    seq.push_back(
        static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin()));
    ForwardRow decode{{&seq.back(), 1}, static_cast<int32_t>(seq.size() - 1), fast.blocks, true};
    std::span<float> out = fast.forward.run({&decode, 1});
    logits.assign(out.begin(), out.end());
  }
}

// 64: the original context, short factors; 65 and 512 (the model's): long factors.
INSTANTIATE_TEST_SUITE_P(ServedContexts, LongRope,
                         ::testing::Values(kTinyPhi3OriginalContext, kTinyPhi3OriginalContext + 1,
                                           kTinyPhi3Context),
                         [](const auto& info) { return "ctx" + std::to_string(info.param); });

TEST(LongRopeChoice, FollowsTheServedContextAsLlamaCppDoes) {
  ScratchDir dir;
  const auto path = write_tiny_phi3_long_rope(dir.path(), TensorType::kF32);
  auto model = Model::load(path);
  const ModelConfig& c = model->config();
  EXPECT_TRUE(c.rope_long_short_factors);
  EXPECT_EQ(c.rope_original_context, kTinyPhi3OriginalContext);
  EXPECT_NEAR(c.rope_attn_factor, std::sqrt(1 + std::log(8.0) / std::log(64.0)), 1e-6);
  const std::vector<float>& short_factors = model->rope_freq_factors(kTinyPhi3OriginalContext);
  const std::vector<float>& long_factors = model->rope_freq_factors(kTinyPhi3OriginalContext + 1);
  ASSERT_EQ(short_factors.size(), static_cast<size_t>(c.n_rot / 2));
  EXPECT_FLOAT_EQ(short_factors[1], 1.1f);
  EXPECT_FLOAT_EQ(long_factors[1], 1.5f);
  EXPECT_EQ(&model->rope_freq_factors(1), &short_factors);
  EXPECT_EQ(&model->rope_freq_factors(kTinyPhi3Context), &long_factors);

  // The forward pass takes the choice once, from the served context: one past the
  // original switches every position's angles (the prompt is shorter than both), and any
  // longer served context gives the same bits.
  const std::vector<int32_t> p = prompt();
  const std::vector<float> at_original = Served(path, kTinyPhi3OriginalContext).logits(p);
  const std::vector<float> past_it = Served(path, kTinyPhi3OriginalContext + 1).logits(p);
  const std::vector<float> full = Served(path, 0).logits(p);
  EXPECT_EQ(past_it, full);
  // The two choices differ by far more than the reference bound (measured: 0.077 against
  // 2e-5), so the reference tests above tell them apart.
  EXPECT_GT(max_difference(at_original, widen(past_it)), 50 * kTolerance);
}

// --ctx-size reaches the forward pass: the executor's greedy token and its log-probability
// are those of the forward pass served at the same context, and differ between the two.
TEST(LongRopeChoice, TheExecutorServesWithItsContextsFactors) {
  ScratchDir dir;
  const auto path = write_tiny_phi3_long_rope(dir.path(), TensorType::kF32);
  std::shared_ptr<const Model> model = Model::load(path);
  const std::vector<int32_t> p = prompt();
  std::vector<float> chosen_logprobs;
  for (int32_t ctx : {kTinyPhi3OriginalContext, kTinyPhi3Context}) {
    CpuExecutorOptions options;
    options.threads = 2;
    options.context_length = ctx;
    options.kv_type = KvType::kF32;
    CpuExecutor executor(model, options);
    EXPECT_EQ(executor.info().context_length, ctx);
    StepPlan plan;
    plan.rows.emplace_back();
    plan.rows[0].tokens = p;
    plan.rows[0].kv_blocks = {0, 1, 2, 3};
    plan.rows[0].sampling.temperature = 0;
    plan.rows[0].sampling.logprobs = 0;
    StepResult result;
    executor.execute_step(plan, result);
    ASSERT_EQ(result.logprobs.size(), 1u);

    const std::vector<float> logits = Served(path, ctx).logits(p);
    const auto best = std::max_element(logits.begin(), logits.end()) - logits.begin();
    EXPECT_EQ(result.tokens[0], best) << ctx;
    double z = 0;
    for (float l : logits) z += std::exp(static_cast<double>(l) - logits[best]);
    EXPECT_NEAR(result.logprobs[0].chosen.logprob, -std::log(z), 1e-5) << ctx;
    chosen_logprobs.push_back(result.logprobs[0].chosen.logprob);
  }
  EXPECT_GT(std::abs(chosen_logprobs[0] - chosen_logprobs[1]), 1e-3);  // measured: 6.4e-3
}

TEST(LongRopeChoice, OneFactorTensorWithoutTheOtherIsRefused) {
  ScratchDir dir;
  gguf::Writer w;
  w.add_string("general.architecture", "phi3");
  w.add_uint32("phi3.context_length", 512);
  w.add_uint32("phi3.embedding_length", 64);
  w.add_uint32("phi3.block_count", 1);
  w.add_uint32("phi3.feed_forward_length", 128);
  w.add_uint32("phi3.attention.head_count", 4);
  w.add_float32("phi3.attention.layer_norm_rms_epsilon", 1e-5f);
  w.add_tensor("rope_factors_long.weight", gguf::TensorType::kF32, {8},
               make_model::encode_weights(gguf::TensorType::kF32, std::vector<float>(8, 1)));
  w.add_tensor("token_embd.weight", gguf::TensorType::kF32, {64, 8},
               make_model::encode_weights(gguf::TensorType::kF32, std::vector<float>(512, 0)));
  const auto path = dir.file("phi3.gguf");
  w.write(path);
  try {
    Model::load(path);
    ADD_FAILURE() << "loaded";
  } catch (const gguf::GgufError& e) {
    EXPECT_NE(std::string(e.what()).find("rope_factors_short.weight"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace tandem::testing::TANDEM_UNITY_ID
