// The phase profile (forward_profile.h): a profiled pass gives the same logits and tokens
// as an unprofiled one, every phase a step runs is charged, and the phases are pieces of
// the step (their sum never exceeds the wall time around the runs).
#include "runner/model/forward_profile.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <numeric>
#include <set>
#include <string>

#include "runner/device/cpu_executor.h"
#include "runner/model/forward.h"
#include "tests/common/test_models.h"
#include "tests/common/test_support.h"

namespace tandem::testing::TANDEM_UNITY_ID {
namespace {

using Clock = std::chrono::steady_clock;

std::vector<float> copy(std::span<float> s) { return {s.begin(), s.end()}; }

// A prompt of 9 tokens (one chunk, then a decode step) on its own pool and cache.
struct Pass {
  explicit Pass(const Model& model)
      : pool(2),
        kv(model.config().n_layer, model.config().kv_dim(), 8, KvType::kF16,
           model.config().head_dim),
        forward(model, kv, pool) {}
  std::vector<std::vector<float>> run() {
    std::vector<int32_t> blocks(8);
    std::iota(blocks.begin(), blocks.end(), 0);
    const std::vector<int32_t> prompt = {1, 17, 42, 99, 3, 250, 7, 8, 9};
    const int32_t next = 11;
    const ForwardRow prefill{prompt, 0, blocks, true};
    const ForwardRow decode{{&next, 1}, static_cast<int32_t>(prompt.size()), blocks, true};
    return {copy(forward.run({&prefill, 1})), copy(forward.run({&decode, 1}))};
  }
  ThreadPool pool;
  KvCache kv;
  ForwardPass forward;
};

// One sampled step of a 5-token prompt (KV block 1, T = 0.7, seed 9) on a fresh executor
// with `o` (two threads and 256 KV positions set here): its token, and the executor's info.
int32_t sample_once(const std::filesystem::path& path, CpuExecutorOptions o,
                    DeviceInfo* info = nullptr) {
  o.threads = 2;
  o.kv_tokens = 256;
  CpuExecutor exec(Model::load(path), o);
  if (info != nullptr) *info = exec.info();
  StepPlan plan;
  StepRow row;
  row.request_id = 1;
  row.tokens = {1, 17, 42, 99, 3};
  row.kv_blocks = {1};
  row.sampling.temperature = 0.7f;
  row.sampling.seed = 9;
  plan.rows.push_back(row);
  std::vector<int32_t> tokens(1);
  exec.execute(plan, tokens);
  return tokens[0];
}

TEST(ForwardProfile, PhasesHaveDistinctNames) {
  std::set<std::string> names;
  for (int i = 0; i < kForwardPhaseCount; ++i)
    names.insert(forward_phase_name(static_cast<ForwardPhase>(i)));
  EXPECT_EQ(names.size(), static_cast<size_t>(kForwardPhaseCount));
  EXPECT_EQ(names.count("?"), 0u);
}

TEST(ForwardProfile, ChargesEveryPhaseOfTheStepsAndChangesNoLogit) {
  ScratchDir dir;
  const auto model = Model::load(write_tiny_llama(dir.path(), gguf::TensorType::kF32));
  Pass plain(*model), timed(*model);
  ForwardProfile profile;
  timed.forward.set_profile(&profile);
  const auto expected = plain.run();
  const Clock::time_point start = Clock::now();
  const auto got = timed.run();
  const double wall = std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_EQ(got, expected);  // bit for bit: the clock reads touch no value
  EXPECT_EQ(profile.steps, 2);
  for (int i = 0; i < kForwardPhaseCount; ++i) {
    const auto phase = static_cast<ForwardPhase>(i);
    if (phase == ForwardPhase::kSample) {
      EXPECT_EQ(profile.seconds[i], 0.0) << "the forward pass samples nothing";
    } else {
      EXPECT_GT(profile.seconds[i], 0.0) << forward_phase_name(phase);
    }
  }
  EXPECT_LE(profile.total(), wall);

  // Detached, a pass adds nothing more.
  const ForwardProfile before = profile;
  timed.forward.set_profile(nullptr);
  EXPECT_EQ(timed.run(), expected);
  EXPECT_EQ(profile.steps, before.steps);
  EXPECT_EQ(profile.seconds, before.seconds);
  profile.clear();
  EXPECT_EQ(profile.steps, 0);
  EXPECT_EQ(profile.total(), 0.0);
}

TEST(ForwardProfile, AnExecutorChargesItsSamplerAndSamplesTheSameTokens) {
  ScratchDir dir;
  const auto path = write_tiny_llama(dir.path(), gguf::TensorType::kF32);
  ForwardProfile profile;
  auto run = [&](ForwardProfile* p) {
    CpuExecutorOptions o;
    o.profile = p;
    return sample_once(path, o);
  };
  const int32_t plain = run(nullptr);
  EXPECT_EQ(run(&profile), plain);
  EXPECT_EQ(profile.steps, 1);
  EXPECT_GT(profile.seconds[static_cast<int>(ForwardPhase::kSample)], 0.0);
  EXPECT_GT(profile.seconds[static_cast<int>(ForwardPhase::kGateUp)], 0.0);
}

// CpuExecutorOptions::kv_prefault_tokens: the cache's first blocks written at startup, the
// positions reported in whole blocks and clamped to the cache, and the same tokens.
TEST(KvPrefault, AnExecutorWritesItsFirstBlocksAtStartAndSamplesTheSameTokens) {
  ScratchDir dir;
  const auto path = write_tiny_llama(dir.path(), gguf::TensorType::kF32);
  auto run = [&](int64_t prefault, DeviceInfo* info) {
    CpuExecutorOptions o;
    o.kv_prefault_tokens = prefault;
    return sample_once(path, o, info);
  };
  DeviceInfo none, some, all;
  const int32_t plain = run(0, &none);
  EXPECT_EQ(none.kv_prefaulted_tokens, 0);
  EXPECT_EQ(run(20, &some), plain);
  EXPECT_EQ(some.kv_prefaulted_tokens, 32);  // two blocks of 16
  EXPECT_GE(some.kv_prefault_seconds, 0.0);
  EXPECT_EQ(run(1 << 20, &all), plain);
  EXPECT_EQ(all.kv_prefaulted_tokens, static_cast<int64_t>(all.kv_blocks) * all.kv_block_size);
}

}  // namespace
}  // namespace tandem::testing::TANDEM_UNITY_ID
