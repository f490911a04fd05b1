// The device: a worker thread that runs steps on a StepExecutor (the model half), and
// the lazy step API the scheduler drives (launch, launch_chained, finalize).
// Steps run on the worker in launch order. launch/launch_chained/finalize must be called
// from one thread (the scheduler's); counters() and set_active() may be called from any.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "protocol/pooling.h"
#include "protocol/sampling_params.h"
#include "runner/grammar/matcher.h"
#include "runner/sampler/sampler.h"

namespace tandem {

// The first `slots` KV slots of block `from` copied into block `to` (every layer, K and V),
// before the step computes anything. n choices: a member's copy of the leader's partly
// filled prompt block, which no choice may share (each writes its own next positions).
struct KvSlotCopy {
  int32_t from = -1;
  int32_t to = -1;
  int32_t slots = 0;  // 0: nothing to copy
};

struct StepRow {
  uint64_t request_id = 0;
  std::vector<int32_t> tokens;  // a prompt chunk (prefill) or one token (decode)
  int32_t position = 0;         // position of tokens[0] in the sequence
  // The request's block table (ids into the device's KV pool), covering at least
  // position + tokens.size() positions.
  std::vector<int32_t> kv_blocks;
  // With a local (sliding-window) block group (DeviceInfo::kv_local_blocks > 0): the
  // local layers' table, indexed the same way, kv_blocks' length at least. kNoBlock
  // marks a block dropped out of the window: no query of this row may reach it. Empty
  // without a local group.
  std::vector<int32_t> kv_local_blocks;
  // Done before the step's rows run; the source slots were written by an earlier step.
  KvSlotCopy kv_copy;
  SamplingParams sampling;
  // A token sampled at a position below this one may not be an EOG or stop_token_ids id
  // (min_tokens: the prompt's length plus min_tokens). Absolute, so it holds along a chain.
  int32_t stop_banned_until = 0;
  // The penalties' history (sampler.h's RowHistory): the prompt, set only for
  // repetition_penalty, and the tokens generated before this row's input is fed, set for
  // any penalty. A chained step appends the token its previous step sampled, on the worker,
  // so the counts include the token that the host has not seen yet.
  std::shared_ptr<const std::vector<int32_t>> penalty_prompt;
  std::vector<int32_t> penalty_output;
  // With sampling.prompt_logprobs >= 0: the prompt token that follows this chunk when the
  // chunk does not end the prompt (the last token's logits score it).
  int32_t next_prompt_token = -1;
  bool sample = true;  // false for a prefill chunk that does not end the prompt: no token drawn
  // Speculative decoding (a decode row only): tokens[1..] are drafts proposed for the
  // positions after tokens[0]. The row samples after each of its tokens in turn, as
  // successive decode steps would (same position keys, same history), and stops at the
  // first draft that differs from the token sampled before it: StepResult::accepted says
  // how many drafts matched, and tokens holds the token sampled after the last of them.
  // The KV of the drafts past the accepted ones is written but means nothing; the
  // scheduler writes over it. Only an executor whose DeviceInfo::verifies gets such rows.
  bool verify = false;
  // Embeddings: the chunk's states this pooling reads (protocol/pooling.h), summed into
  // StepResult::pooled. The scheduler sets it only on the chunks that hold them (cls: the
  // one at position 0; last: the one that ends the prompt).
  Pooling pooling = Pooling::kNone;
  // Structured output: the request's matcher, owned by the device worker from submission
  // on. A sampling row's token is drawn under its mask and then advances it, inside the
  // step, so a chained step finds it already at the token it feeds; rows that do not
  // sample leave it alone. The scheduler only hands the pointer from step to step.
  std::shared_ptr<grammar::Matcher> grammar;
  // The sampler's state (Mirostat's mu, adaptive-p's average: SamplerState), like the
  // grammar owned by the worker from submission on: a sampling row's draw reads and
  // advances it inside the step.
  std::shared_ptr<SamplerState> sampler_state;
};

struct StepPlan {
  std::vector<StepRow> rows;
};

inline constexpr int32_t kNoToken = -1;
inline constexpr int32_t kNoBlock = -1;  // a local table's block dropped out of the window

struct StepResult {
  std::vector<int32_t> tokens;  // tokens[i] for rows[i]; kNoToken where !sample
  // logprobs[i] for rows[i] that sample with sampling.logprobs >= 0; empty when no row asks.
  std::vector<RowLogprobs> logprobs;
  // prompt_logprobs[i]: with sampling.prompt_logprobs >= 0, one entry per token of the chunk
  // that has a successor in the prompt (the successor's log-probability given the prefix);
  // empty when no row asks.
  std::vector<std::vector<RowLogprobs>> prompt_logprobs;
  // pooled[i] for rows[i] with a pooling: the fixed-point sum of the states it pools
  // (add_to_pooled), n_embd entries, then how many of their values were not finite; empty
  // elsewhere, and empty when no row pools.
  std::vector<std::vector<int64_t>> pooled;
  // Set by Device::finalize: how long the device worker spent on the step (the executor's
  // run; for an asynchronous executor, from its submit to its collect). The scheduler paces
  // prompt chunks with it. An executor that models its time instead of spending it (the
  // scheduler tests' simulated devices) sets it, > 0, and the device keeps that.
  double seconds = 0;
  // accepted[i]: for a verify row, the drafts it accepted (its tokens[1 .. accepted] are
  // the next tokens, and tokens[i] the one after them); 0 elsewhere; empty when no row
  // verifies. draft_logprobs[i]: the accepted drafts' entries, in order, for a verify row
  // that asks for logprobs (logprobs[i] stays the last token's).
  std::vector<int32_t> accepted;
  std::vector<std::vector<RowLogprobs>> draft_logprobs;
};

struct DeviceInfo {
  int32_t vocab_size = 0;
  int32_t context_length = 0;
  int32_t kv_block_size = 16;
  int32_t kv_blocks = 0;  // size of the device's KV pool, in blocks
  std::vector<int32_t> eog_ids;
  // Whether the executor runs verify rows (StepRow::verify): the scheduler drafts only then.
  bool verifies = false;
  // Whether the executor returns pooled hidden states (StepRow::pooling), and their width.
  bool pools = false;
  int32_t embedding_size = 0;
  std::string kv_type = "none";    // the KV cache's element type (kv_cache.h's names)
  int64_t kv_bytes_per_token = 0;  // the global group's layers, K and V; 0 where nothing is stored
  // The local (sliding-window) group: its layers keep only the window of each sequence,
  // in a pool of their own. 0 blocks: no local group (every layer is global).
  int32_t kv_local_blocks = 0;
  int32_t sliding_window = 0;            // a local layer's query at p sees keys p - window < j
  int64_t kv_local_bytes_per_token = 0;  // the local layers, per position of a local block
  // KV positions whose pages the executor wrote at startup (CpuExecutorOptions::
  // kv_prefault_tokens), and the seconds that took.
  int64_t kv_prefaulted_tokens = 0;
  double kv_prefault_seconds = 0;
};

// The local (sliding-window) blocks one sequence may hold at once: the window behind a
// chunk's first query and the chunk, ceil((window + max_step_tokens) / block_size), and
// one more where they straddle a boundary. Executors size their local group from it, and
// the scheduler refuses a group that cannot hold one sequence.
inline int32_t local_blocks_per_sequence(int32_t window, int32_t max_step_tokens,
                                         int32_t block_size) {
  return static_cast<int32_t>((int64_t{window} + max_step_tokens + block_size - 1) / block_size +
                              1);
}

// The model half of a device: runs one step synchronously, on the device worker thread.
// execute() writes one token per row into `tokens` (kNoToken where !sample); it may throw,
// and the step's finalize() then rethrows.
class StepExecutor {
 public:
  virtual ~StepExecutor() = default;
  virtual DeviceInfo info() const = 0;
  virtual void execute(const StepPlan& plan, std::span<int32_t> tokens) = 0;
  // execute() with the log-probabilities the rows ask for. Executors that compute none
  // (the simulated one) leave result's logprobs empty.
  virtual void execute_step(const StepPlan& plan, StepResult& result) {
    execute(plan, result.tokens);
  }

  // Executors whose device runs apart from the worker thread (a GPU) also split a step in
  // two, so that the worker enqueues step N+1 before it waits for step N:
  // - submit() enqueues the step's work and returns at once. With device_inputs, the
  //   plan's rows are those of the step submitted just before, in order, and each is fed
  //   the token that step sampled for it, read from the device's own memory (the rows'
  //   tokens hold kNoToken); the host has not seen those tokens yet.
  // - ready() says whether the oldest submitted step has finished; collect() waits for it
  //   and writes its result (either may throw, for that step).
  // At most two steps are submitted and not yet collected.
  virtual bool asynchronous() const { return false; }
  virtual void submit(const StepPlan& plan, bool device_inputs);
  virtual bool ready() { return true; }
  virtual void collect(StepResult& result);
  // Whether the successor of a step with these rows may take its inputs on the device:
  // false when a row needs its sampled token on the host first (a grammar to advance,
  // penalties to count).
  virtual bool can_chain_on_device(const StepPlan& /*plan*/) const { return false; }
  // Time measured on the device itself (events around each step), where the executor has
  // a device of its own; false where it has none (the CPU's busy time is the worker's).
  // Called from any thread.
  virtual bool device_timing(double& busy_seconds, double& chained_gap_median_us) const {
    (void)busy_seconds, (void)chained_gap_median_us;
    return false;
  }
};

struct DeviceOptions {
  // How long a waiting thread (the worker waiting for a launch, the scheduler waiting in
  // finalize) spins, yielding between bursts, before it blocks on a condition variable.
  // On a quiet VM a spin hands off in ~0.5 us and a condition-variable wake costs ~13 us;
  // once the 2 vCPUs are oversubscribed (compute pool, I/O, other processes) a pure spin
  // waits for the descheduled peer (milliseconds in bench/micro/handoff_bench), so the spin
  // yields and is short. Blocking afterwards keeps an idle server off the cores.
  std::chrono::microseconds spin{20};
};

// What the device has done. Idle time counts only while the scheduler has said it is
// active (has requests): the worker waited for a launch that the host had not made yet.
struct DeviceCounters {
  double busy_seconds = 0;  // inside StepExecutor::execute
  double idle_seconds = 0;  // waiting for a launch while active
  uint64_t steps = 0;       // steps executed, chained ones included
  uint64_t chained_steps = 0;
  // From an asynchronous executor's own clock (StepExecutor::device_timing), else -1: the
  // time its device spent running steps, and the median time it sat idle between a step
  // and the chained step after it.
  double device_busy_seconds = -1;
  double chained_gap_median_us = -1;
};

// A launched step. Move-only; valid until destroyed (finalize does not invalidate it, so a
// chained step may still be launched from it).
class PendingStep {
 public:
  PendingStep();
  PendingStep(PendingStep&&) noexcept;
  PendingStep& operator=(PendingStep&&) noexcept;
  ~PendingStep();
  explicit operator bool() const { return slot_ != nullptr; }
  uint64_t sequence() const;  // launch order, from 1
  bool chained() const;
  size_t row_count() const;

 private:
  friend class Device;
  struct Slot;
  std::shared_ptr<Slot> slot_;
};

// One event of the scheduler thread's calls, for tests that check the launch order.
struct DeviceEvent {
  enum class Kind { kLaunch, kFinalize };
  Kind kind;
  uint64_t sequence;
  bool chained;
};

class Device {
 public:
  explicit Device(std::unique_ptr<StepExecutor> executor, DeviceOptions options = {});
  ~Device();  // runs the steps still queued, then stops the worker
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  const DeviceInfo& info() const { return info_; }

  // Enqueues a step; returns at once.
  PendingStep launch(StepPlan plan);
  // Enqueues a decode step for prev's rows: each row's input is the token prev sampled for
  // it, read on the worker when the step runs (the caller never reads it), at the position
  // after prev's tokens. Every row of prev must sample. At most one chained step per prev.
  // kv_blocks, when given, holds each row's block table for this step (the scheduler grows
  // tables as sequences cross into new blocks); empty keeps prev's tables. kv_local_blocks
  // likewise for the local group's tables (grown, and dropped out of the window).
  PendingStep launch_chained(const PendingStep& prev,
                             std::vector<std::vector<int32_t>> kv_blocks = {},
                             std::vector<std::vector<int32_t>> kv_local_blocks = {});
  // Blocks until the step has run; returns its tokens, or rethrows what execute threw.
  StepResult finalize(PendingStep& step);

  // The scheduler says whether it has requests; idle time counts only while it has.
  void set_active(bool active);
  DeviceCounters counters() const;

  // Called on the calling thread at every launch and finalize (tests record the order).
  // Set before the first launch.
  void set_event_observer(std::function<void(const DeviceEvent&)> observer);

 private:
  struct Worker;
  PendingStep enqueue(std::shared_ptr<PendingStep::Slot> slot);

  DeviceInfo info_;
  DeviceOptions options_;
  std::function<void(const DeviceEvent&)> observer_;
  uint64_t next_sequence_ = 1;
  std::unique_ptr<Worker> worker_;
};

}  // namespace tandem
