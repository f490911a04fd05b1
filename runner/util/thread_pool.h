// The compute pool the device worker drives: a fixed set of threads that run
// parallel_for jobs. Workers spin briefly between jobs (a forward pass issues
// hundreds of small jobs, and waking a sleeping vCPU costs ~13 us here) and then
// block, so an idle server burns no core. Only one thread may submit at a time
// (the device worker); the submitting thread takes part in the work.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

namespace tandem {

class ThreadPool {
 public:
  // n_threads counts the submitting thread: n_threads = 1 runs everything inline.
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const;

  // Runs fn(task) for task in [0, n_tasks), spread over the threads; returns when all
  // are done. Which thread runs which task is unspecified, so fn must make results
  // independent of that (kernels split over output features for this reason).
  void parallel_for(int64_t n_tasks, const std::function<void(int64_t task)>& fn);

  // Convenience: runs fn(thread_index, n_threads) once on every thread.
  void run_on_all(const std::function<void(int thread, int n_threads)>& fn);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// The default thread count: the cores this process may run on.
int default_thread_count();

}  // namespace tandem
