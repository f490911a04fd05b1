// The device worker with an asynchronous executor (device.h's submit/collect, as the GPU
// executor implements them): a chained step whose rows can take their tokens on the device
// is submitted before its predecessor is collected; one whose rows the host must see first
// (can_chain_on_device false) waits for it. Both give the tokens a synchronous run gives.
#include <gtest/gtest.h>

#include <atomic>
#include <deque>
#include <mutex>
#include <string>

#include "runner/device/device.h"

namespace tandem::testing::TANDEM_UNITY_ID {
namespace {

// Each row's token is a function of its input token and position; a device-fed row's input
// is the token this executor sampled for it last. ready() holds the oldest step back until
// the test releases it, so the order of calls is the test's to decide.
class FakeAsyncExecutor : public StepExecutor {
 public:
  explicit FakeAsyncExecutor(std::vector<std::string>* log, std::atomic<bool>* release,
                             std::mutex* mutex)
      : log_(log), release_(release), mutex_(mutex) {}
  DeviceInfo info() const override {
    DeviceInfo d;
    d.vocab_size = 256;
    d.context_length = 1024;
    d.kv_blocks = 64;
    return d;
  }
  static int32_t token(int32_t input, int32_t position) {
    return (input * 31 + position * 7) % 251;
  }
  void execute(const StepPlan& plan, std::span<int32_t> tokens) override {
    for (size_t i = 0; i < plan.rows.size(); ++i) {
      const StepRow& r = plan.rows[i];
      tokens[i] = token(r.tokens.back(), r.position + static_cast<int32_t>(r.tokens.size()) - 1);
    }
  }
  bool asynchronous() const override { return true; }
  void submit(const StepPlan& plan, bool device_inputs) override {
    note("submit " + std::to_string(plan.rows.size()) + (device_inputs ? " device" : " host"));
    std::vector<int32_t> out(plan.rows.size());
    for (size_t i = 0; i < plan.rows.size(); ++i) {
      const StepRow& r = plan.rows[i];
      const int32_t input = device_inputs ? last_.at(i) : r.tokens.back();
      if (device_inputs) {
        EXPECT_EQ(r.tokens, std::vector<int32_t>{kNoToken});
      }
      out[i] = token(input, r.position + static_cast<int32_t>(r.tokens.size()) - 1);
    }
    last_ = out;
    queue_.push_back(out);
  }
  bool ready() override { return release_->load(); }
  void collect(StepResult& result) override {
    note("collect");
    result.tokens = queue_.front();
    queue_.pop_front();
  }
  bool can_chain_on_device(const StepPlan& plan) const override {
    for (const StepRow& r : plan.rows)
      if (r.sampling.presence_penalty != 0) return false;  // the host must count its tokens
    return true;
  }

 private:
  void note(std::string s) {
    std::lock_guard lock(*mutex_);
    log_->push_back(std::move(s));
  }
  std::vector<std::string>* log_;
  std::atomic<bool>* release_;
  std::mutex* mutex_;
  std::vector<int32_t> last_;
  std::deque<std::vector<int32_t>> queue_;
};

StepPlan two_rows(float presence) {
  StepPlan plan;
  for (int32_t r = 0; r < 2; ++r) {
    StepRow row;
    row.request_id = static_cast<uint64_t>(r + 1);
    row.tokens = {10 + r, 20 + r, 30 + r};
    row.sampling.presence_penalty = presence;
    plan.rows.push_back(row);
  }
  return plan;
}

// Tokens of the prefill and two chained decode steps, fed as DESIGN.md says.
std::vector<std::vector<int32_t>> expected_tokens() {
  std::vector<std::vector<int32_t>> out(3, std::vector<int32_t>(2));
  for (int32_t r = 0; r < 2; ++r) {
    out[0][r] = FakeAsyncExecutor::token(30 + r, 2);
    out[1][r] = FakeAsyncExecutor::token(out[0][r], 3);
    out[2][r] = FakeAsyncExecutor::token(out[1][r], 4);
  }
  return out;
}

struct ChainRun {
  std::vector<std::string> log;
  std::vector<std::vector<int32_t>> tokens;
};

ChainRun run_chain(float presence) {
  ChainRun run;
  std::atomic<bool> release{false};
  std::mutex mutex;
  {
    Device device(std::make_unique<FakeAsyncExecutor>(&run.log, &release, &mutex));
    PendingStep first = device.launch(two_rows(presence));
    PendingStep second = device.launch_chained(first);
    PendingStep third = device.launch_chained(second);
    release.store(true);
    for (PendingStep* s : {&first, &second, &third})
      run.tokens.push_back(device.finalize(*s).tokens);
  }
  return run;
}

TEST(AsyncDevice, AChainedStepIsSubmittedBeforeItsPredecessorIsCollected) {
  const ChainRun run = run_chain(0.0f);
  EXPECT_EQ(run.tokens, expected_tokens());
  const std::vector<std::string> order = {"submit 2 host",   "submit 2 device", "collect",
                                          "submit 2 device", "collect",         "collect"};
  EXPECT_EQ(run.log, order);
}

TEST(AsyncDevice, RowsTheHostMustSeeWaitForTheirPredecessor) {
  const ChainRun run = run_chain(0.5f);
  EXPECT_EQ(run.tokens, expected_tokens());
  const std::vector<std::string> order = {"submit 2 host", "collect",       "submit 2 host",
                                          "collect",       "submit 2 host", "collect"};
  EXPECT_EQ(run.log, order);
}

}  // namespace
}  // namespace tandem::testing::TANDEM_UNITY_ID
