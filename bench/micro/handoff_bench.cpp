// Thread handoff between the scheduler and the device worker: what one round trip
// (hand over a step, get its tokens back) costs with a condition variable, with a
// spinning atomic, and through Device itself at several spin budgets. DeviceOptions::spin
// is chosen from these figures.
//   build-test/bench/bench_handoff --benchmark_min_time=0.3
// On the shared 2-vCPU VM with other builds running (load 3-11), a pure spin round trip
// took 4-17 ms (the peer is descheduled), a condition variable 12-40 us, and Device with a
// 20 us yielding spin 9-14 us: a short spin that yields, then blocks, is never the worst.
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <benchmark/benchmark.h>

#include "runner/device/device.h"

namespace tandem {
namespace {

void CondvarRoundTrip(benchmark::State& state) {
  std::mutex m;
  std::condition_variable to_worker, to_host;
  uint64_t sent = 0, answered = 0;
  bool stop = false;
  std::thread worker([&] {
    std::unique_lock lock(m);
    for (;;) {
      to_worker.wait(lock, [&] { return stop || sent != answered; });
      if (stop) return;
      answered = sent;
      to_host.notify_one();
    }
  });
  for (auto _ : state) {
    std::unique_lock lock(m);
    ++sent;
    to_worker.notify_one();
    to_host.wait(lock, [&] { return answered == sent; });
  }
  {
    std::lock_guard lock(m);
    stop = true;
  }
  to_worker.notify_one();
  worker.join();
}
BENCHMARK(CondvarRoundTrip)->UseRealTime();

void SpinRoundTrip(benchmark::State& state) {
  std::atomic<uint64_t> sent{0}, answered{0};
  std::atomic<bool> stop{false};
  std::thread worker([&] {
    uint64_t seen = 0;
    while (!stop.load(std::memory_order_acquire)) {
      const uint64_t s = sent.load(std::memory_order_acquire);
      if (s != seen) {
        seen = s;
        answered.store(s, std::memory_order_release);
      } else {
        __builtin_ia32_pause();
      }
    }
  });
  uint64_t n = 0;
  for (auto _ : state) {
    sent.store(++n, std::memory_order_release);
    while (answered.load(std::memory_order_acquire) != n) __builtin_ia32_pause();
  }
  stop.store(true, std::memory_order_release);
  worker.join();
}
BENCHMARK(SpinRoundTrip)->UseRealTime();

class NoWork : public StepExecutor {
 public:
  DeviceInfo info() const override { return DeviceInfo{16, 64, 16, 4, {0}}; }
  void execute(const StepPlan&, std::span<int32_t> tokens) override { tokens[0] = 1; }
};

// launch + finalize of a one-row step through Device; arg: spin budget in microseconds.
void DeviceRoundTrip(benchmark::State& state) {
  Device device(std::make_unique<NoWork>(),
                DeviceOptions{std::chrono::microseconds(state.range(0))});
  StepRow row;
  row.tokens = {1};
  row.kv_blocks = {0};
  for (auto _ : state) {
    PendingStep step = device.launch(StepPlan{{row}});
    benchmark::DoNotOptimize(device.finalize(step));
  }
}
BENCHMARK(DeviceRoundTrip)->Arg(0)->Arg(5)->Arg(20)->Arg(50)->Arg(200)->UseRealTime();

// A chained step needs no host data: launch_chained + finalize in steady state.
void DeviceChainedRoundTrip(benchmark::State& state) {
  Device device(std::make_unique<NoWork>(),
                DeviceOptions{std::chrono::microseconds(state.range(0))});
  StepRow row;
  row.tokens = {1};
  row.kv_blocks = {0, 1, 2, 3};
  PendingStep prev = device.launch(StepPlan{{row}});
  device.finalize(prev);
  for (auto _ : state) {
    PendingStep step = device.launch_chained(prev);
    benchmark::DoNotOptimize(device.finalize(step));
    prev = std::move(step);
  }
}
BENCHMARK(DeviceChainedRoundTrip)->Arg(0)->Arg(20)->Arg(50)->UseRealTime();

}  // namespace
}  // namespace tandem

BENCHMARK_MAIN();
