// ThreadPool dispatch cost: a parallel_for whose tasks do nothing (what each of the
// ~200 jobs of a forward pass pays on top of its work; the caller may finish both tasks
// itself), a run_on_all (every worker must take part: the full handoff round trip),
// and the first job after the workers went to sleep (a step after an idle spell).
#include <benchmark/benchmark.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "runner/thread_pool.h"

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

// The first job after an idle spell long enough for the workers to block on the futex.
void BM_ParallelForAfterIdle(benchmark::State& state) {
  tandem::ThreadPool pool(static_cast<int>(state.range(0)));
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
BENCHMARK(BM_ParallelForAfterIdle)->Arg(2)->UseManualTime()->Iterations(300);

}  // namespace

BENCHMARK_MAIN();
