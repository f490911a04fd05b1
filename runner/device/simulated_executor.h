// A stand-in model for tests and for measuring the scheduler alone: deterministic fake
// logits, a configurable latency per step and a configurable KV geometry. A row's token is
// a pure function of (its last input token, its position) and, when temperature > 0, its
// seed: it never depends on the batch, so the laws hold for it as for the real model.
// A row with a grammar gets the drawn token if allowed, else the next allowed id.
// It also checks the KV bookkeeping it is given (block tables in range and covering the
// row, and every earlier position of the row still holding what this request wrote).
#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <vector>

#include "runner/device/device.h"

namespace tandem {

struct SimulatedDeviceConfig {
  int32_t vocab_size = 512;
  int32_t context_length = 2048;
  int32_t kv_block_size = 16;
  int32_t kv_blocks = 4096;
  std::vector<int32_t> eog_ids = {1};
  // Chance that a sampled token is the first EOG id (unless the row's ignore_eos bans it).
  double eos_probability = 0.01;
  // Tokens drawn besides EOG; empty: every id in [0, vocab_size) that is not an EOG id.
  std::vector<int32_t> alphabet;
  // Time each step takes: fixed plus per row. The worker sleeps until the step's end
  // (or spins, when spin_latency: more exact for short steps, but it holds a core).
  std::chrono::nanoseconds step_latency{0};
  std::chrono::nanoseconds row_latency{0};
  bool spin_latency = false;
  // Track what every KV slot holds and verify reads; costs a little. A slot holds a
  // position, a token and a hash chained over every earlier slot of its sequence, so
  // blocks shared between requests with the same prefix (the prefix cache) pass, and a
  // block overwritten by another sequence, or freed too early and reused, fails.
  bool verify_kv = true;
  // A local (sliding-window) block group (device.h): with kv_local_blocks > 0 rows carry
  // a local table too, whose blocks inside each query's window of sliding_window
  // positions must hold the same slots as the global table's (so a local block freed
  // early and reused fails), and whose blocks outside it may be dropped.
  int32_t kv_local_blocks = 0;
  int32_t sliding_window = 0;
};

class SimulatedExecutor : public StepExecutor {
 public:
  explicit SimulatedExecutor(SimulatedDeviceConfig config);
  DeviceInfo info() const override;
  void execute(const StepPlan& plan, std::span<int32_t> tokens) override;
  // Runs verify rows (StepRow::verify) too, which execute() refuses.
  void execute_step(const StepPlan& plan, StepResult& result) override;

  // The token drawn for a row whose last input token is `last` at position `position`
  // (the position of `last`). Tests use it to compute expected outputs. ban_stop: the
  // row's min_tokens is not reached, so no EOG is drawn.
  int32_t next_token(int32_t last, int32_t position, const SamplingParams& sampling,
                     bool ban_stop = false) const;

 private:
  void run(const StepPlan& plan, std::span<int32_t> tokens, std::vector<int32_t>* accepted);
  int32_t verify(const StepRow& row, int32_t& accepted);
  void verify_and_write_kv(const StepRow& row);
  void verify_and_write_local_kv(const StepRow& row);
  void copy_kv(const StepRow& row);
  int32_t constrain(grammar::Matcher& matcher, int32_t drawn);

  SimulatedDeviceConfig config_;
  std::vector<int32_t> alphabet_;
  struct KvSlot {
    int32_t position = -1;
    int32_t token = -1;
    uint64_t chain = 0;  // hash of (the previous slot's chain, token, position)
  };
  std::vector<KvSlot> kv_;
  std::vector<KvSlot> local_kv_;
  std::vector<uint32_t> mask_;  // a constrained row's grammar mask
};

}  // namespace tandem
