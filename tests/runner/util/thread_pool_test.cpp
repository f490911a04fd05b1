#include "runner/util/thread_pool.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

namespace tandem::TANDEM_UNITY_ID {
namespace {

TEST(ThreadPool, RunsEveryTaskExactlyOnce) {
  for (int threads : {1, 2, 3, 4}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.size(), threads);
    for (int64_t n_tasks : {0, 1, 2, 3, 7, 64, 1000}) {
      std::vector<std::atomic<int>> runs(n_tasks);
      pool.parallel_for(n_tasks, [&](int64_t t) { runs[t].fetch_add(1); });
      for (int64_t t = 0; t < n_tasks; ++t) {
        ASSERT_EQ(runs[t].load(), 1)
            << "task " << t << " of " << n_tasks << ", " << threads << " threads";
      }
    }
  }
}

// Jobs of changing sizes and kinds back to back, with more threads than cores so
// that workers are often preempted and come back to a job that is already over: each
// task must still run exactly once, in its own job.
TEST(ThreadPool, ManyJobsInARowEachRunExactlyTheirOwnTasks) {
  ThreadPool pool(4);
  std::vector<std::atomic<int64_t>> out(8);
  for (int64_t job = 1; job <= 3000; ++job) {
    if (job % 7 == 0) {
      std::atomic<int> calls{0};
      pool.run_on_all([&](int, int) { calls.fetch_add(1); });
      ASSERT_EQ(calls.load(), 4) << "job " << job;
      continue;
    }
    const int64_t n_tasks = 2 + job % 7;
    for (auto& o : out) o.store(0);
    pool.parallel_for(n_tasks, [&](int64_t t) { out[t].fetch_add(job); });
    for (int64_t t = 0; t < 8; ++t)
      ASSERT_EQ(out[t].load(), t < n_tasks ? job : 0) << "job " << job;
  }
}

TEST(ThreadPool, SizeOnePoolRunsInlineOnTheCaller) {
  ThreadPool pool(1);
  const auto caller = std::this_thread::get_id();
  int runs = 0;
  pool.parallel_for(5, [&](int64_t) {
    EXPECT_EQ(std::this_thread::get_id(), caller);
    ++runs;
  });
  EXPECT_EQ(runs, 5);
}

TEST(ThreadPool, NestedParallelForRunsEveryInnerTaskOnce) {
  ThreadPool pool(3);
  std::vector<std::atomic<int>> runs(8 * 5);
  pool.parallel_for(8, [&](int64_t outer) {
    pool.parallel_for(5, [&](int64_t inner) { runs[outer * 5 + inner].fetch_add(1); });
  });
  for (auto& r : runs) EXPECT_EQ(r.load(), 1);
}

TEST(ThreadPool, RunOnAllRunsOncePerThreadWithDistinctIndices) {
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    std::mutex mutex;
    std::multiset<int> indices;
    std::set<std::thread::id> ids;
    pool.run_on_all([&](int thread, int n_threads) {
      EXPECT_EQ(n_threads, threads);
      std::lock_guard lock(mutex);
      indices.insert(thread);
      ids.insert(std::this_thread::get_id());
    });
    EXPECT_EQ(static_cast<int>(ids.size()), threads);
    ASSERT_EQ(static_cast<int>(indices.size()), threads);
    for (int i = 0; i < threads; ++i) EXPECT_EQ(indices.count(i), 1u);
  }
}

TEST(ThreadPool, ExceptionFromATaskReachesTheCallerAndThePoolStaysUsable) {
  ThreadPool pool(2);
  EXPECT_THROW(pool.parallel_for(10,
                                 [](int64_t t) {
                                   if (t == 7) throw std::runtime_error("task 7");
                                 }),
               std::runtime_error);
  std::atomic<int> runs{0};
  pool.parallel_for(10, [&](int64_t) { runs.fetch_add(1); });
  EXPECT_EQ(runs.load(), 10);
}

TEST(ThreadPool, WorkersThatWentToSleepWakeForTheNextJob) {
  ThreadPool pool(3);
  for (int round = 0; round < 3; ++round) {
    // Idle well past the spin window so the workers block on the futex; the job
    // must still reach them (this exercises the sleep path, it times nothing).
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::mutex mutex;
    std::set<std::thread::id> ids;
    pool.run_on_all([&](int, int) {
      std::lock_guard lock(mutex);
      ids.insert(std::this_thread::get_id());
    });
    EXPECT_EQ(ids.size(), 3u);
  }
}

// Workers spin only briefly after a job and then block: an idle pool costs no CPU.
// (Measures CPU time, not wall time: the assertion holds on a loaded machine.)
TEST(ThreadPool, IdlePoolBurnsNoCpu) {
  ThreadPool pool(3);
  pool.parallel_for(3, [](int64_t) {});
  auto cpu_seconds = [] {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
           static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
  };
  const double before = cpu_seconds();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const double spent = cpu_seconds() - before;
  // Spinning through the sleep would cost 2 x 300 ms; the spin window is 150 us.
  EXPECT_LT(spent, 0.05) << "an idle pool kept its workers busy";
}

TEST(ThreadPool, DefaultThreadCountIsPositive) { EXPECT_GE(default_thread_count(), 1); }

}  // namespace
}  // namespace tandem::TANDEM_UNITY_ID
