// ThreadPool dispatch cost: a parallel_for whose tasks do nothing (what each of the
// ~200 jobs of a forward pass pays on top of its work; the caller may finish both tasks
// itself), a run_on_all (every worker must take part: the full handoff round trip),
// and the first job after the workers went to sleep (a step after an idle spell).
#include <benchmark/benchmark.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "runner/util/thread_pool.h"

namespace {

void BM_ParallelForRoundTrip(benchmark::State& state) {
  tandem::ThreadPool pool(static_cast<int>(state.range(0)));
  std::atomic<int64_t> sink{0};
  for (auto _ : state) {
    pool.parallel_for(pool.size(),
                      [&](int64_t t) { sink.fetch_add(t, std::memory_order_relaxed); });
  }
  benchmark::DoNotOptimize(sink.load());
}
BENCHMARK(BM_ParallelForRoundTrip)->Arg(1)->Arg(2)->UseRealTime();

// run_on_all waits for every worker, so this is the full handoff round trip: publish,
// the spinning worker sees it, runs, and reports back.
void BM_RunOnAllRoundTrip(benchmark::State& state) {
  tandem::ThreadPool pool(static_cast<int>(state.range(0)));
  std::atomic<int64_t> sink{0};
  for (auto _ : state) {
    pool.run_on_all([&](int t, int) { sink.fetch_add(t, std::memory_order_relaxed); });
  }
  benchmark::DoNotOptimize(sink.load());
}
BENCHMARK(BM_RunOnAllRoundTrip)->Arg(2)->UseRealTime();

// Busy work of about `us` microseconds (a stand-in for a slice of a matmul).
void spin_for_us(double us) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double, std::micro>(us);
  while (std::chrono::steady_clock::now() < end) {
  }
}

// The first job after an idle spell long enough for the workers to block on the
// futex: 8 tasks of 5 us. With the worker woken at once it takes ~20 us on 2 threads;
// the caller alone would take 40 us (parallel_for never waits for a sleeping worker,
// it only loses its help). The second figure is run_on_all, which must wait for the
// worker to wake: the wake-up latency itself.
void BM_FirstJobAfterIdle(benchmark::State& state) {
  tandem::ThreadPool pool(2);
  for (auto _ : state) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    const auto start = std::chrono::steady_clock::now();
    pool.parallel_for(8, [](int64_t) { spin_for_us(5); });
    state.SetIterationTime(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
}
BENCHMARK(BM_FirstJobAfterIdle)->UseManualTime()->Iterations(300)->Unit(benchmark::kMicrosecond);

void BM_RunOnAllAfterIdle(benchmark::State& state) {
  tandem::ThreadPool pool(2);
  std::atomic<int64_t> sink{0};
  for (auto _ : state) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    const auto start = std::chrono::steady_clock::now();
    pool.run_on_all([&](int t, int) { sink.fetch_add(t, std::memory_order_relaxed); });
    state.SetIterationTime(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  benchmark::DoNotOptimize(sink.load());
}
BENCHMARK(BM_RunOnAllAfterIdle)->UseManualTime()->Iterations(300)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
