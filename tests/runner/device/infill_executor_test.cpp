// The infill step through the CPU executor: CpuExecutorOptions' token pieces and end-of-turn
// id reach every pool thread's Sampler (sampler.h, step 5), on a tiny model's real logits.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "runner/device/cpu_executor.h"
#include "runner/sampler/token_pieces.h"
#include "tests/common/test_models.h"
#include "tests/common/test_support.h"

namespace tandem::testing::TANDEM_UNITY_ID {
namespace {

const std::vector<int32_t> kPrompt = {1, 17, 42, 99, 3, 250, 7, 64, 12};

CpuExecutorOptions options(std::vector<int32_t> eog, std::shared_ptr<const TokenPieces> pieces,
                           int32_t eot) {
  CpuExecutorOptions o;
  o.threads = 2;
  o.kv_tokens = 256;
  o.kv_type = KvType::kF32;
  o.eog_ids = std::move(eog);
  o.token_pieces = std::move(pieces);
  o.eot_id = eot;
  return o;
}

// The prompt's next token, three rows at once (the pool's threads each sample some).
std::vector<int32_t> next_tokens(CpuExecutor& exec, SamplingParams params, uint64_t seed) {
  StepPlan plan;
  for (int32_t r = 0; r < 3; ++r) {
    StepRow row;
    row.request_id = static_cast<uint64_t>(r + 1);
    row.tokens = kPrompt;
    row.kv_blocks = std::vector<int32_t>(1);
    std::iota(row.kv_blocks.begin(), row.kv_blocks.end(), r);
    row.sampling = params;
    row.sampling.seed = seed + static_cast<uint64_t>(r);
    plan.rows.push_back(row);
  }
  StepResult result;
  result.tokens.assign(plan.rows.size(), kNoToken);
  exec.execute_step(plan, result);
  return result.tokens;
}

TEST(ExecutorInfill, PiecesAndTheEndOfTurnReachEveryThreadsSampler) {
  ScratchDir dir;
  const auto path = write_tiny_llama(dir.path(), gguf::TensorType::kF32);
  // The 20 likeliest tokens after the prompt; the two end ids lie outside them.
  SamplingParams probe;
  probe.temperature = 0.0f;
  probe.logprobs = 20;
  StepPlan plan;
  StepRow row;
  row.tokens = kPrompt;
  row.kv_blocks = {0};
  row.sampling = probe;
  plan.rows.push_back(row);
  StepResult first;
  first.tokens.assign(1, kNoToken);
  CpuExecutor probe_exec(Model::load(path), options({}, nullptr, -1));
  probe_exec.execute_step(plan, first);
  const int32_t vocab = probe_exec.info().vocab_size;
  std::set<int32_t> top;
  for (const TokenLogprob& t : first.logprobs.at(0).top) top.insert(t.id);
  ASSERT_EQ(top.size(), 20u);
  std::vector<int32_t> ends;
  for (int32_t id = vocab - 1; ends.size() < 2; --id)
    if (!top.count(id)) ends.push_back(id);
  const int32_t argmax = first.tokens[0];

  // Every piece "a": each token is a prefix of every other, so the likeliest absorbs all of
  // top_k's mass and is certain, whatever the seed.
  auto same = std::make_shared<TokenPieces>();
  for (int32_t id = 0; id < vocab; ++id) same->push_back("a");
  CpuExecutor merging(Model::load(path), options(ends, same, ends[1]));
  SamplingParams infill;
  infill.infill = true;
  infill.top_k = 20;
  infill.temperature = 4.0f;
  for (uint64_t seed = 0; seed < 5; ++seed) {
    for (int32_t token : next_tokens(merging, infill, seed * 7)) EXPECT_EQ(token, argmax);
  }
  // No pieces: 20 tokens flattened by T = 4 all fall under 0.2, so the answer is the
  // end-of-turn id given (the second end id, not the first).
  CpuExecutor plain(Model::load(path), options(ends, nullptr, ends[1]));
  for (uint64_t seed = 0; seed < 5; ++seed) {
    for (int32_t token : next_tokens(plain, infill, seed * 7)) EXPECT_EQ(token, ends[1]);
  }
  // Without infill the same rows draw among the 20.
  SamplingParams sampled = infill;
  sampled.infill = false;
  std::set<int32_t> drawn;
  for (uint64_t seed = 0; seed < 5; ++seed) {
    for (int32_t token : next_tokens(plain, sampled, seed * 7)) drawn.insert(token);
  }
  EXPECT_GT(drawn.size(), 3u);
}

}  // namespace
}  // namespace tandem::testing::TANDEM_UNITY_ID
