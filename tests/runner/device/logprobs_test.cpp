// Log-probabilities out of the CPU executor: prompt tokens' (echo) and generated tokens',
// against the double-precision reference forward, and independent of the batch (law 2)
// and of how the prompt is chunked.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "runner/device/cpu_executor.h"
#include "tests/common/test_models.h"
#include "tests/common/test_support.h"
#include "tests/runner/model/reference_model.h"

namespace tandem::testing::TANDEM_UNITY_ID {
namespace {

std::vector<double> log_softmax(const std::vector<double>& logits) {
  const double top = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (double x : logits) sum += std::exp(x - top);
  std::vector<double> out;
  for (double x : logits) out.push_back(x - top - std::log(sum));
  return out;
}

std::vector<int32_t> blocks(int32_t first, int32_t n) {
  std::vector<int32_t> b(n);
  std::iota(b.begin(), b.end(), first);
  return b;
}

StepRow prompt_row(uint64_t id, std::vector<int32_t> tokens, int32_t position,
                   std::vector<int32_t> kv, int32_t next, bool sample) {
  StepRow row;
  row.request_id = id;
  row.tokens = std::move(tokens);
  row.position = position;
  row.kv_blocks = std::move(kv);
  row.sampling.temperature = 0.0f;
  row.sampling.logprobs = 4;
  row.sampling.prompt_logprobs = 4;
  row.next_prompt_token = next;
  row.sample = sample;
  return row;
}

const std::vector<int32_t> kPrompt = {1, 17, 42, 99, 3, 250, 7, 64, 12};

// Runs kPrompt in two chunks (5 + 4), the first alongside another request's row; returns
// the prompt entries and the generated token's.
std::pair<std::vector<RowLogprobs>, RowLogprobs> score(CpuExecutor& exec, bool with_neighbour) {
  std::vector<RowLogprobs> prompt;
  StepPlan first;
  first.rows.push_back(
      prompt_row(1, {kPrompt.begin(), kPrompt.begin() + 5}, 0, blocks(0, 2), kPrompt[5], false));
  if (with_neighbour) {
    StepRow other = prompt_row(2, {5, 6, 7, 8, 9, 10, 11}, 0, blocks(8, 2), -1, true);
    other.sampling.prompt_logprobs = -1;
    first.rows.push_back(other);
  }
  StepResult r1;
  r1.tokens.assign(first.rows.size(), kNoToken);
  exec.execute_step(first, r1);
  prompt = r1.prompt_logprobs.at(0);
  StepPlan second;
  second.rows.push_back(
      prompt_row(1, {kPrompt.begin() + 5, kPrompt.end()}, 5, blocks(0, 2), -1, true));
  StepResult r2;
  r2.tokens.assign(1, kNoToken);
  exec.execute_step(second, r2);
  for (const RowLogprobs& e : r2.prompt_logprobs.at(0)) prompt.push_back(e);
  return {prompt, r2.logprobs.at(0)};
}

// F32 KV: the bound against the reference is the forward pass's own, not the cache's.
CpuExecutorOptions options(int threads) {
  CpuExecutorOptions o;
  o.threads = threads;
  o.kv_tokens = 256;
  o.kv_type = KvType::kF32;
  return o;
}

TEST(ExecutorLogprobs, PromptAndGeneratedLogprobsMatchTheReferenceForward) {
  ScratchDir dir;
  const auto path = write_tiny_llama(dir.path(), gguf::TensorType::kF32);
  ReferenceModel reference(path);
  CpuExecutor exec(Model::load(path), options(2));
  const auto [prompt, generated] = score(exec, true);
  ASSERT_EQ(prompt.size(), kPrompt.size() - 1);  // every token but the first is scored
  // Bound: logits agree with the reference within 2e-5 (forward_test); the log-softmax
  // adds the float log-sum-exp's few ulps: 1e-4 in all.
  for (size_t j = 0; j + 1 < kPrompt.size(); ++j) {
    const std::vector<double> want =
        log_softmax(reference.logits({kPrompt.begin(), kPrompt.begin() + j + 1}));
    EXPECT_EQ(prompt[j].chosen.id, kPrompt[j + 1]);
    EXPECT_NEAR(prompt[j].chosen.logprob, want[kPrompt[j + 1]], 1e-4) << j;
    ASSERT_EQ(prompt[j].top.size(), 4u);
    std::vector<int32_t> order(want.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int32_t a, int32_t b) { return want[a] > want[b]; });
    for (size_t i = 0; i < 4; ++i) {
      EXPECT_EQ(prompt[j].top[i].id, order[i]) << j << " " << i;
      EXPECT_NEAR(prompt[j].top[i].logprob, want[order[i]], 1e-4);
    }
  }
  const std::vector<double> last = log_softmax(reference.logits(kPrompt));
  EXPECT_NEAR(generated.chosen.logprob, last[generated.chosen.id], 1e-4);
  // Greedy: the chosen token is the most likely one.
  EXPECT_EQ(generated.top[0].id, generated.chosen.id);
}

TEST(ExecutorLogprobs, APromptsLogprobsDoNotDependOnTheBatchOrTheChunking) {
  ScratchDir dir;
  const auto path = write_tiny_llama(dir.path(), gguf::TensorType::kF32);
  CpuExecutor batched(Model::load(path), options(2));
  CpuExecutor alone(Model::load(path), options(1));
  const auto [a, ga] = score(batched, true);
  const auto [b, gb] = score(alone, false);
  // One chunk, one thread.
  StepPlan whole;
  whole.rows.push_back(prompt_row(1, kPrompt, 0, blocks(0, 2), -1, true));
  StepResult rw;
  rw.tokens.assign(1, kNoToken);
  CpuExecutor single(Model::load(path), options(1));
  single.execute_step(whole, rw);
  const std::vector<RowLogprobs>& c = rw.prompt_logprobs.at(0);
  ASSERT_EQ(a.size(), b.size());
  ASSERT_EQ(a.size(), c.size());
  for (size_t j = 0; j < a.size(); ++j) {
    EXPECT_EQ(a[j].chosen.logprob, b[j].chosen.logprob) << j;  // bit for bit
    EXPECT_EQ(a[j].chosen.logprob, c[j].chosen.logprob) << j;
    for (size_t i = 0; i < a[j].top.size(); ++i) {
      EXPECT_EQ(a[j].top[i].id, c[j].top[i].id);
      EXPECT_EQ(a[j].top[i].logprob, c[j].top[i].logprob);
    }
  }
  EXPECT_EQ(ga.chosen.logprob, gb.chosen.logprob);
  EXPECT_EQ(ga.chosen.logprob, rw.logprobs.at(0).chosen.logprob);
}

// n choices: a member copies the leader's partly filled prompt block (StepRow::kv_copy) and
// computes only the prompt's last token; its next token and logprobs are the leader's bit
// for bit, for every KV element type (the copy moves the stored bytes, whatever they are).
TEST(ExecutorKvCopy, AMemberThatCopiesTheLeadersPartialBlockScoresAsTheLeader) {
  ScratchDir dir;
  const auto path = write_tiny_llama(dir.path(), gguf::TensorType::kF32);
  for (KvType type : {KvType::kF32, KvType::kF16, KvType::kBf16}) {
    CpuExecutorOptions o = options(2);
    o.kv_type = type;
    CpuExecutor exec(Model::load(path), o);
    StepRow leader = prompt_row(1, kPrompt, 0, {0}, -1, true);
    leader.sampling.prompt_logprobs = -1;
    StepPlan first;
    first.rows.push_back(leader);
    StepResult r1;
    r1.tokens.assign(1, kNoToken);
    exec.execute_step(first, r1);

    const auto before_last = static_cast<int32_t>(kPrompt.size()) - 1;
    StepRow member = prompt_row(2, {kPrompt.back()}, before_last, {5}, -1, true);
    member.sampling.prompt_logprobs = -1;
    member.kv_copy = {0, 5, before_last};
    StepPlan second;
    second.rows.push_back(member);
    StepResult r2;
    r2.tokens.assign(1, kNoToken);
    exec.execute_step(second, r2);

    ASSERT_EQ(r2.tokens[0], r1.tokens[0]) << kv_type_name(type);
    const RowLogprobs& a = r1.logprobs.at(0);
    const RowLogprobs& b = r2.logprobs.at(0);
    EXPECT_EQ(a.chosen.logprob, b.chosen.logprob) << kv_type_name(type);
    ASSERT_EQ(a.top.size(), b.top.size());
    for (size_t i = 0; i < a.top.size(); ++i) {
      EXPECT_EQ(a.top[i].id, b.top[i].id);
      EXPECT_EQ(a.top[i].logprob, b.top[i].logprob);
    }
  }
}

}  // namespace
}  // namespace tandem::testing::TANDEM_UNITY_ID
