#include "runner/device/device.h"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <utility>

namespace tandem {

using Clock = std::chrono::steady_clock;

struct PendingStep::Slot {
  uint64_t sequence = 0;
  bool chained = false;
  // Every row samples one token (none verifies drafts), so a step may be chained from this one.
  bool all_sample = true;
  size_t rows = 0;
  bool has_successor = false;  // scheduler thread only
  // Worker-side from launch on: a chained step's plan is built on the worker from prev's.
  StepPlan plan;
  std::shared_ptr<Slot> prev;  // chained: whose tokens feed this step; dropped once used
  // chained: the rows' block tables where they grew since prev (empty: prev's tables)
  std::vector<std::vector<int32_t>> kv_blocks;
  std::vector<std::vector<int32_t>> kv_local_blocks;  // likewise, the local group's tables
  // Written by the worker before `done` is released; read-only afterwards.
  std::vector<int32_t> tokens;
  // Only the scheduler reads these (finalize moves them out); a successor reads tokens.
  std::vector<RowLogprobs> logprobs;
  std::vector<std::vector<RowLogprobs>> prompt_logprobs;
  std::vector<std::vector<int64_t>> pooled;
  std::vector<int32_t> accepted;
  std::vector<std::vector<RowLogprobs>> draft_logprobs;
  std::exception_ptr error;
  double seconds = 0;           // the worker's time on the step, written before `done`
  double modelled_seconds = 0;  // the executor's own figure for it, where it models one
  // Asynchronous executors: this step took its inputs on the device from a step that then
  // failed, so its own result means nothing (worker thread only).
  bool inputs_failed = false;
  std::atomic<bool> done{false};
};

PendingStep::PendingStep() = default;
PendingStep::PendingStep(PendingStep&&) noexcept = default;
PendingStep& PendingStep::operator=(PendingStep&&) noexcept = default;
PendingStep::~PendingStep() = default;
uint64_t PendingStep::sequence() const { return slot_ ? slot_->sequence : 0; }
bool PendingStep::chained() const { return slot_ && slot_->chained; }
size_t PendingStep::row_count() const { return slot_ ? slot_->rows : 0; }

namespace {

inline void cpu_relax() { __builtin_ia32_pause(); }

// Spins until done() or `budget` has passed; returns done()'s last value. Between bursts
// of pause it yields: when the machine is oversubscribed (2 vCPUs shared with the compute
// pool and the I/O thread), the thread being waited for may need this very core.
template <typename Done>
bool spin_until(Done done, std::chrono::microseconds budget) {
  if (budget.count() <= 0) return done();
  const auto deadline = Clock::now() + budget;
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (done()) return true;
      cpu_relax();
    }
    if (Clock::now() >= deadline) return done();
    std::this_thread::yield();
  }
}

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

struct Device::Worker {
  using Slot = PendingStep::Slot;

  Worker(std::unique_ptr<StepExecutor> exec, DeviceOptions opts)
      : executor(std::move(exec)), options(opts) {
    thread = std::thread([this] { loop(); });
  }

  ~Worker() {
    {
      std::lock_guard lock(mutex);
      stopping = true;
    }
    stop_requested.store(true, std::memory_order_release);
    work_cv.notify_one();
    thread.join();
  }

  void push(std::shared_ptr<Slot> slot) {
    bool wake;
    {
      std::lock_guard lock(mutex);
      queue.push_back(std::move(slot));
      queued.fetch_add(1, std::memory_order_release);
      wake = worker_sleeping;
    }
    if (wake) work_cv.notify_one();
  }

  void wait_done(Slot& slot) {
    auto done = [&] { return slot.done.load(std::memory_order_acquire); };
    if (spin_until(done, options.spin)) return;
    std::unique_lock lock(mutex);
    while (!done()) {
      finalizer_sleeping = true;
      done_cv.wait(lock);
      finalizer_sleeping = false;
    }
  }

  // --- worker thread ---

  std::shared_ptr<Slot> take() {
    if (queued.load(std::memory_order_acquire) == taken) {
      begin_wait();
      spin_until(
          [&] {
            return queued.load(std::memory_order_acquire) != taken ||
                   stop_requested.load(std::memory_order_acquire);
          },
          options.spin);
    }
    std::shared_ptr<Slot> slot;
    {
      std::unique_lock lock(mutex);
      while (queue.empty() && !stopping) {
        worker_sleeping = true;
        work_cv.wait(lock);
        worker_sleeping = false;
      }
      if (queue.empty()) return nullptr;
      slot = std::move(queue.front());
      queue.pop_front();
    }
    ++taken;
    end_wait();
    return slot;
  }

  // A chained step's plan, built from prev's (which moves along the chain: prev's plan is
  // the worker's alone). Each row is fed prev's token for it, or kNoToken with
  // device_inputs (the executor reads it from its own memory).
  void prepare_chained(Slot& slot, bool device_inputs) {
    Slot& prev = *slot.prev;  // ran (or was submitted) before this one: launch order
    if (prev.error) {
      slot.error = std::make_exception_ptr(
          std::runtime_error("the step this chained step continues failed"));
      slot.prev.reset();
      return;
    }
    slot.plan = std::move(prev.plan);
    for (size_t i = 0; i < slot.plan.rows.size(); ++i) {
      StepRow& row = slot.plan.rows[i];
      const int32_t fed = device_inputs ? kNoToken : prev.tokens[i];
      row.position += static_cast<int32_t>(row.tokens.size());
      // The penalties count the token fed now, which the host has not processed yet
      // (device_inputs never carries penalties: can_chain_on_device says no).
      if (row.sampling.has_output_penalties()) row.penalty_output.push_back(fed);
      row.tokens.assign(1, fed);
      row.next_prompt_token = -1;
      row.kv_copy = {};  // done once, by the step that first carried it
      row.sample = true;
      row.pooling = Pooling::kNone;  // a chained step decodes: nothing left to pool
      if (i < slot.kv_blocks.size()) row.kv_blocks = std::move(slot.kv_blocks[i]);
      if (i < slot.kv_local_blocks.size()) row.kv_local_blocks = std::move(slot.kv_local_blocks[i]);
    }
    slot.prev.reset();
  }

  void store(Slot& slot, StepResult& result) {
    slot.modelled_seconds = result.seconds;
    slot.tokens = std::move(result.tokens);
    slot.logprobs = std::move(result.logprobs);
    slot.prompt_logprobs = std::move(result.prompt_logprobs);
    slot.pooled = std::move(result.pooled);
    slot.accepted = std::move(result.accepted);
    slot.draft_logprobs = std::move(result.draft_logprobs);
  }

  // Counts the step and hands it to finalize().
  void publish(Slot& slot, Clock::duration busy) {
    slot.seconds = slot.modelled_seconds > 0 ? slot.modelled_seconds : seconds(busy);
    {
      std::lock_guard lock(stats_mutex);
      stats.busy_seconds += seconds(busy);
      ++stats.steps;
      if (slot.chained) ++stats.chained_steps;
    }
    slot.done.store(true, std::memory_order_release);
    bool wake;
    {
      std::lock_guard lock(mutex);
      wake = finalizer_sleeping;
    }
    if (wake) done_cv.notify_one();
  }

  void run(Slot& slot) {
    if (slot.chained) prepare_chained(slot, false);
    const auto start = Clock::now();
    if (!slot.error) {
      StepResult result;
      result.tokens.assign(slot.plan.rows.size(), kNoToken);
      try {
        executor->execute_step(slot.plan, result);
        store(slot, result);
      } catch (...) {
        slot.error = std::current_exception();
      }
    }
    publish(slot, Clock::now() - start);
  }

  void loop() {
    if (executor->asynchronous()) return loop_async();
    while (auto slot = take()) run(*slot);
  }

  // --- asynchronous executors (StepExecutor::submit) ---

  // Submits a step; false (the step carrying the error) when submit threw.
  bool submit(Slot& slot, bool device_inputs) {
    if (slot.error) return false;
    try {
      executor->submit(slot.plan, device_inputs);
      return true;
    } catch (...) {
      slot.error = std::current_exception();
      return false;
    }
  }

  void collect(Slot& slot, Clock::time_point submitted) {
    StepResult result;  // slot.plan may have moved on to a chained successor already
    result.tokens.assign(slot.rows, kNoToken);
    try {
      executor->collect(result);
      store(slot, result);
    } catch (...) {
      slot.error = std::current_exception();
    }
    if (slot.inputs_failed && !slot.error)
      slot.error = std::make_exception_ptr(
          std::runtime_error("the step this chained step continues failed"));
    publish(slot, Clock::now() - submitted);
  }

  // Waits until a launch is queued (true) or the step in flight has finished (false),
  // whichever comes first; the device keeps running meanwhile.
  bool launch_before_ready() {
    for (;;) {
      if (queued.load(std::memory_order_acquire) != taken) return true;
      if (executor->ready()) return false;
      for (int i = 0; i < 64; ++i) cpu_relax();
      std::this_thread::yield();
    }
  }

  // One step stays in flight on the device while the next is enqueued behind it: a chained
  // successor whose rows can take their tokens on the device is submitted before its
  // predecessor is collected, so the device never waits for the host in between.
  void loop_async() {
    std::shared_ptr<Slot> in_flight;
    Clock::time_point in_flight_since;
    for (;;) {
      if (in_flight && !launch_before_ready()) {
        collect(*in_flight, in_flight_since);
        in_flight.reset();
        continue;
      }
      std::shared_ptr<Slot> slot = take();
      if (!slot) break;
      const bool on_device = slot->chained && in_flight && slot->prev == in_flight &&
                             executor->can_chain_on_device(in_flight->plan);
      if (!on_device && in_flight) {
        collect(*in_flight, in_flight_since);
        in_flight.reset();
      }
      if (slot->chained) prepare_chained(*slot, on_device);
      const auto now = Clock::now();
      if (!submit(*slot, on_device)) {
        if (in_flight) collect(*in_flight, in_flight_since);
        in_flight.reset();
        publish(*slot, Clock::duration{});
        continue;
      }
      if (in_flight) {
        collect(*in_flight, in_flight_since);
        slot->inputs_failed = in_flight->error != nullptr;
      }
      in_flight = std::move(slot);
      in_flight_since = now;
    }
    if (in_flight) collect(*in_flight, in_flight_since);
  }

  void begin_wait() {
    std::lock_guard lock(stats_mutex);
    waiting = true;
    idle_since = Clock::now();
  }

  void end_wait() {
    std::lock_guard lock(stats_mutex);
    if (waiting && active) stats.idle_seconds += seconds(Clock::now() - idle_since);
    waiting = false;
  }

  void set_active(bool value) {
    std::lock_guard lock(stats_mutex);
    if (value == active) return;
    const auto now = Clock::now();
    if (waiting) {
      if (value) {
        idle_since = now;
      } else {
        stats.idle_seconds += seconds(now - idle_since);
      }
    }
    active = value;
  }

  std::unique_ptr<StepExecutor> executor;
  DeviceOptions options;

  std::mutex mutex;
  std::condition_variable work_cv;  // the worker waits here for a launch
  std::condition_variable done_cv;  // finalize waits here for a step
  std::deque<std::shared_ptr<Slot>> queue;
  bool worker_sleeping = false;
  bool finalizer_sleeping = false;
  bool stopping = false;
  std::atomic<uint64_t> queued{0};  // launches so far; the worker spins on it
  std::atomic<bool> stop_requested{false};
  uint64_t taken = 0;  // worker thread only

  mutable std::mutex stats_mutex;
  DeviceCounters stats;
  bool active = false;
  bool waiting = false;
  Clock::time_point idle_since;

  std::thread thread;  // last: started once everything above exists
};

void StepExecutor::submit(const StepPlan&, bool) {
  throw std::logic_error("StepExecutor::submit: this executor is synchronous");
}

void StepExecutor::collect(StepResult&) {
  throw std::logic_error("StepExecutor::collect: this executor is synchronous");
}

Device::Device(std::unique_ptr<StepExecutor> executor, DeviceOptions options)
    : info_(executor->info()), options_(options) {
  worker_ = std::make_unique<Worker>(std::move(executor), options_);
}

Device::~Device() = default;

PendingStep Device::enqueue(std::shared_ptr<PendingStep::Slot> slot) {
  slot->sequence = next_sequence_++;
  PendingStep step;
  step.slot_ = slot;
  if (observer_) observer_({DeviceEvent::Kind::kLaunch, slot->sequence, slot->chained});
  worker_->push(std::move(slot));
  return step;
}

PendingStep Device::launch(StepPlan plan) {
  auto slot = std::make_shared<PendingStep::Slot>();
  slot->rows = plan.rows.size();
  for (const StepRow& row : plan.rows)
    slot->all_sample = slot->all_sample && row.sample && !row.verify;
  slot->plan = std::move(plan);
  return enqueue(std::move(slot));
}

PendingStep Device::launch_chained(const PendingStep& prev,
                                   std::vector<std::vector<int32_t>> kv_blocks,
                                   std::vector<std::vector<int32_t>> kv_local_blocks) {
  if (!prev.slot_) throw std::logic_error("launch_chained: no step to chain from");
  if (!prev.slot_->all_sample) {
    throw std::logic_error(
        "launch_chained: every row of the previous step must sample one token (no verify row)");
  }
  if (prev.slot_->has_successor) {
    throw std::logic_error("launch_chained: that step already has a chained successor");
  }
  prev.slot_->has_successor = true;
  auto slot = std::make_shared<PendingStep::Slot>();
  slot->chained = true;
  slot->rows = prev.slot_->rows;
  slot->prev = prev.slot_;
  slot->kv_blocks = std::move(kv_blocks);
  slot->kv_local_blocks = std::move(kv_local_blocks);
  return enqueue(std::move(slot));
}

StepResult Device::finalize(PendingStep& step) {
  if (!step.slot_) throw std::logic_error("finalize: no step");
  PendingStep::Slot& slot = *step.slot_;
  worker_->wait_done(slot);
  if (observer_) observer_({DeviceEvent::Kind::kFinalize, slot.sequence, slot.chained});
  if (slot.error) std::rethrow_exception(slot.error);
  // The tokens are copied: a chained successor may be reading them on the worker right now.
  return StepResult{slot.tokens,
                    std::move(slot.logprobs),
                    std::move(slot.prompt_logprobs),
                    std::move(slot.pooled),
                    slot.seconds,
                    std::move(slot.accepted),
                    std::move(slot.draft_logprobs)};
}

void Device::set_active(bool active) { worker_->set_active(active); }

DeviceCounters Device::counters() const {
  std::lock_guard lock(worker_->stats_mutex);
  DeviceCounters out = worker_->stats;
  if (worker_->waiting && worker_->active) {
    out.idle_seconds += seconds(Clock::now() - worker_->idle_since);
  }
  double busy = 0, gap = 0;
  if (worker_->executor->device_timing(busy, gap)) {
    out.device_busy_seconds = busy;
    out.chained_gap_median_us = gap;
  }
  return out;
}

void Device::set_event_observer(std::function<void(const DeviceEvent&)> observer) {
  observer_ = std::move(observer);
}

}  // namespace tandem
