// The GPU executor's step flattening (runner/cuda/step_staging.h), on any machine: the
// per-token arrays, the logit rows, the fused sampler's rows and their edits in the CPU
// sampler's order, the rows left to the host, and the plans it refuses.
#include "runner/cuda/step_staging.h"

#include <gtest/gtest.h>

#include <numeric>

namespace tandem::cuda::TANDEM_UNITY_ID {
namespace {

const std::vector<int32_t> kEog = {2, 7};

StagingLimits limits() {
  StagingLimits l;
  l.vocab_size = 100;
  l.context_length = 256;
  l.kv_blocks = 32;
  l.block_size = 16;
  l.eog_ids = kEog;
  return l;
}

StepRow row(std::vector<int32_t> tokens, int32_t position, std::vector<int32_t> blocks) {
  StepRow r;
  r.tokens = std::move(tokens);
  r.position = position;
  r.kv_blocks = std::move(blocks);
  return r;
}

TEST(StepStaging, FlattensTokensTablesLogitRowsAndSamplerRows) {
  StepPlan plan;
  plan.rows.push_back(row({5, 6, 7}, 0, {3, 9}));  // a prefill chunk that does not sample
  plan.rows.back().sample = false;
  plan.rows.push_back(row({11}, 20, {4, 5, 6}));  // a decode row with bias and bans
  StepRow& d = plan.rows.back();
  d.sampling.seed = 99;
  d.sampling.temperature = 0.5f;
  d.sampling.top_k = 3;
  d.sampling.min_p = 0.1f;
  d.sampling.logit_bias = {{40, 2.5f}};
  d.sampling.stop_token_ids = {9};
  d.stop_banned_until = 30;  // position 21 < 30: EOG and stop ids banned
  StepStaging s;
  stage_step(plan, false, limits(), s);

  EXPECT_EQ(s.token, (std::vector<int32_t>{5, 6, 7, 11}));
  EXPECT_EQ(s.position, (std::vector<int32_t>{0, 1, 2, 20}));
  // Tables trimmed to the blocks each row reaches: 1 block for positions 0-2, 2 for 20.
  EXPECT_EQ(s.tables, (std::vector<int32_t>{3, 4, 5}));
  EXPECT_EQ(s.table_start, (std::vector<int32_t>{0, 0, 0, 1}));
  EXPECT_EQ(s.logit_source, (std::vector<int32_t>{3}));
  ASSERT_EQ(s.sample_rows.size(), 1u);
  const SampleRow& r = s.sample_rows[0];
  EXPECT_EQ(r.logits_row, 0);
  EXPECT_EQ(r.seed, 99u);
  EXPECT_EQ(r.position, 21);
  EXPECT_EQ(r.top_k, 3);
  EXPECT_FLOAT_EQ(r.log_min_p, std::log(0.1f));
  EXPECT_EQ(s.sampled_row, (std::vector<size_t>{1}));
  ASSERT_EQ(r.edits_end - r.edits_begin, 4);  // the bias, then EOG 2 and 7, then stop id 9
  EXPECT_EQ(s.edits[0].id, 40);
  EXPECT_FLOAT_EQ(s.edits[0].bias, 2.5f);
  EXPECT_EQ(s.edits[1].id, 2);
  EXPECT_EQ(s.edits[2].id, 7);
  EXPECT_EQ(s.edits[3].id, 9);
  EXPECT_LE(s.edits[3].bias, -100.0f);
  EXPECT_TRUE(s.host_rows.empty());
  EXPECT_FALSE(s.decode_only);
}

TEST(StepStaging, PenaltiesLogprobsAndEchoGoToTheHostAndDecodeStepsAreGraphShaped) {
  StepPlan plan;
  plan.rows.push_back(row({1}, 4, {0}));
  plan.rows.push_back(row({2}, 9, {1}));
  plan.rows.back().sampling.presence_penalty = 0.5f;
  plan.rows.back().penalty_output = {3, 4};
  StepStaging s;
  stage_step(plan, false, limits(), s);
  EXPECT_TRUE(s.decode_only);
  ASSERT_EQ(s.host_rows.size(), 1u);
  EXPECT_EQ(s.host_rows[0].row, 1u);
  EXPECT_EQ(s.host_rows[0].first_logit, 1);
  EXPECT_EQ(s.host_rows[0].penalty_output, (std::vector<int32_t>{3, 4}));
  EXPECT_EQ(s.sample_rows.size(), 2u);  // the device samples it too; the host's token wins

  plan.rows[0].tokens = {1, 2, 3};
  plan.rows[0].sampling.prompt_logprobs = 2;  // echo: a logit row per token
  stage_step(plan, false, limits(), s);
  EXPECT_FALSE(s.decode_only);
  EXPECT_EQ(s.logit_source, (std::vector<int32_t>{0, 1, 2, 3}));
  ASSERT_EQ(s.host_rows.size(), 2u);
  EXPECT_EQ(s.host_rows[0].logit_rows, 3);
  EXPECT_EQ(s.sample_rows[0].logits_row, 2);
  EXPECT_EQ(s.sample_rows[1].logits_row, 3);
}

// The fused kernel has no infill step: such a row's logits go to the host Sampler, and a
// chained successor waits for its token (can_chain_on_device is sampled_on_host's "no").
TEST(StepStaging, InfillRowsAreSampledOnTheHost) {
  StepPlan plan;
  plan.rows.push_back(row({1}, 4, {0}));
  plan.rows.push_back(row({2}, 9, {1}));
  plan.rows.back().sampling.infill = true;
  plan.rows.back().sampling.top_k = 40;
  StepStaging s;
  stage_step(plan, false, limits(), s);
  EXPECT_FALSE(sampled_on_host(plan.rows[0]));
  EXPECT_TRUE(sampled_on_host(plan.rows[1]));
  ASSERT_EQ(s.host_rows.size(), 1u);
  EXPECT_EQ(s.host_rows[0].row, 1u);
  EXPECT_TRUE(s.host_rows[0].sampling.infill);
  EXPECT_EQ(s.host_rows[0].position, 10);
  // So are llama.cpp's chain orders, which the device's sampler does not take.
  StepRow late = row({3}, 2, {2});
  late.sampling.temperature_last = true;
  EXPECT_TRUE(sampled_on_host(late));
  late.sampling.temperature_last = false;
  late.sampling.min_p_last = true;
  EXPECT_TRUE(sampled_on_host(late));
  // And Mirostat, whose state the host Sampler advances (the host row carries it).
  StepPlan mirostat;
  mirostat.rows.push_back(row({3}, 2, {2}));
  mirostat.rows.back().sampling.mirostat = 2;
  mirostat.rows.back().sampler_state = std::make_shared<SamplerState>();
  EXPECT_TRUE(sampled_on_host(mirostat.rows.back()));
  stage_step(mirostat, false, limits(), s);
  ASSERT_EQ(s.host_rows.size(), 1u);
  EXPECT_EQ(s.host_rows[0].sampler_state, mirostat.rows.back().sampler_state);
}

TEST(StepStaging, RefusesTokensPositionsAndTablesThatDoNotFit) {
  StepStaging s;
  auto refuses = [&](StepRow r, const char* what) {
    StepPlan plan;
    plan.rows.push_back(std::move(r));
    EXPECT_THROW(stage_step(plan, false, limits(), s), std::invalid_argument) << what;
  };
  refuses(row({100}, 0, {0}), "a token outside the vocabulary");
  refuses(row({1}, 256, {0}), "a position past the context");
  refuses(row({1}, 16, {0}), "a table that does not cover the row");
  refuses(row({1}, 0, {32}), "a block outside the pool");
  refuses(row({}, 0, {0}), "no tokens");
  // A device-fed row's placeholder token is not checked.
  StepPlan plan;
  plan.rows.push_back(row({kNoToken}, 3, {0}));
  EXPECT_NO_THROW(stage_step(plan, true, limits(), s));
}

}  // namespace
}  // namespace tandem::cuda::TANDEM_UNITY_ID
