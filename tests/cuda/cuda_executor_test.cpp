// The GPU executor driven directly: a CUDA graph replays a decode step with the same tokens
// as plain launches; a chained step fed on the device gives the tokens a step fed by the
// host gives; a step that outgrows the buffers runs; bad plans are refused before anything
// is enqueued.
#include <gtest/gtest.h>

#include <numeric>

#include "runner/device/device.h"
#include "tests/common/test_models.h"
#include "tests/common/test_support.h"
#include "tests/cuda/cuda_test_support.h"

namespace tandem::testing::TANDEM_UNITY_ID {
namespace {

constexpr int32_t kRows = 4;

std::unique_ptr<StepExecutor> executor(const std::filesystem::path& path, bool graphs,
                                       bool dependent_launch = true) {
  CudaExecutorOptions o;
  o.kv_tokens = 1024;
  o.graphs = graphs;
  o.dependent_launch = dependent_launch;
  o.max_sequences = 2;  // smaller than the steps below: the buffers must grow
  o.max_step_tokens = 8;
  return make_cuda_executor(Model::load(path), o);
}

StepPlan prefill() {
  StepPlan plan;
  for (int32_t r = 0; r < kRows; ++r) {
    StepRow row;
    row.tokens.assign(5 + 3 * r, 40 + r);
    row.kv_blocks.resize(8);
    std::iota(row.kv_blocks.begin(), row.kv_blocks.end(), 8 * r);
    row.sampling.seed = 77 + r;
    row.sampling.temperature = r == 0 ? 0.0f : 0.9f;
    row.sampling.top_k = r == 2 ? 10 : 0;
    plan.rows.push_back(row);
  }
  return plan;
}

// Tokens of `steps` decode steps after the prefill, fed by the host (or, with
// device_inputs, by the device) through the asynchronous interface, one step ahead.
std::vector<std::vector<int32_t>> decode(StepExecutor& exec, int steps, bool device_inputs) {
  StepPlan plan = prefill();
  StepResult first;
  exec.execute_step(plan, first);
  std::vector<std::vector<int32_t>> out{first.tokens};
  for (int s = 0; s < steps; ++s) {
    for (int32_t r = 0; r < kRows; ++r) {
      StepRow& row = plan.rows[r];
      row.position += static_cast<int32_t>(row.tokens.size());
      row.tokens.assign(1, device_inputs ? kNoToken : out.back()[r]);
    }
    StepResult result;
    if (device_inputs) {
      exec.submit(plan, true);
      exec.collect(result);
    } else {
      exec.execute_step(plan, result);
    }
    out.push_back(result.tokens);
  }
  return out;
}

// The plain executor launches each kernel after the last has ended; the other starts each
// while the last finishes (dependent launch), in graphs and in plain launches.
TEST(CudaExecutor, GraphsAndDeviceFedStepsGiveThePlainLaunchesTokens) {
  TANDEM_REQUIRE_GPU();
  ScratchDir dir;
  const auto path = write_tiny_llama(dir.path(), gguf::TensorType::kF16, 3);
  auto plain = executor(path, false, false);
  auto overlapped = executor(path, false, true);
  auto graphed = executor(path, true);
  const auto expected = decode(*plain, 12, false);
  EXPECT_EQ(decode(*overlapped, 12, false), expected);
  EXPECT_EQ(decode(*graphed, 12, false), expected);
  EXPECT_EQ(decode(*graphed, 12, true), expected);
  double busy = 0, gap = 0;
  ASSERT_TRUE(graphed->device_timing(busy, gap));
  EXPECT_GT(busy, 0.0);
  EXPECT_GE(gap, 0.0);  // device-fed steps were timed
}

TEST(CudaExecutor, RefusesABadPlanAndRunsTheNextOne) {
  TANDEM_REQUIRE_GPU();
  ScratchDir dir;
  auto exec = executor(write_tiny_llama(dir.path(), gguf::TensorType::kF16, 3), true);
  StepPlan bad = prefill();
  bad.rows[1].tokens[0] = 1 << 20;
  StepResult result;
  EXPECT_THROW(exec->execute_step(bad, result), std::invalid_argument);
  bad = prefill();
  bad.rows[2].kv_blocks.clear();
  EXPECT_THROW(exec->execute_step(bad, result), std::invalid_argument);
  StepPlan good = prefill();
  exec->execute_step(good, result);
  EXPECT_EQ(result.tokens.size(), static_cast<size_t>(kRows));
  for (int32_t t : result.tokens) EXPECT_GE(t, 0);
}

TEST(CudaExecutor, TheDeviceRefusesWithOneLineWhereItCannotRun) {
  if (cuda_unavailable_reason().empty()) GTEST_SKIP() << "a GPU is present";
  ScratchDir dir;
  EXPECT_THROW(executor(write_tiny_llama(dir.path(), gguf::TensorType::kF16, 3), true),
               CudaUnavailable);
}

}  // namespace
}  // namespace tandem::testing::TANDEM_UNITY_ID
