// ThreadPool: workers wait for a job by spinning on a generation counter, and after
// kSpinBeforeSleep of idleness block on it with a futex (std::atomic::wait), so a
// busy forward pass pays ~0.5 us per job while an idle server sleeps.
#include "runner/thread_pool.h"

#include <sched.h>

#include <atomic>
#include <chrono>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

namespace tandem {
namespace {

using Clock = std::chrono::steady_clock;

// How long a worker spins after its last job before it blocks. Long enough to span
// the gaps between the ~200 jobs of one forward pass and between back-to-back steps.
constexpr auto kSpinBeforeSleep = std::chrono::microseconds(150);

inline void cpu_relax() { __builtin_ia32_pause(); }

// The pool whose job the current thread is running, so that a nested parallel_for
// runs inline instead of waiting on itself.
thread_local const void* tls_running_pool = nullptr;

}  // namespace

struct ThreadPool::State {
  int n_threads = 1;
  std::vector<std::thread> workers;

  // The published job. Written by the submitter before it bumps `generation`
  // (release) and read by workers after they observe the bump (acquire).
  const std::function<void(int64_t)>* task_fn = nullptr;
  const std::function<void(int, int)>* thread_fn = nullptr;
  int64_t n_tasks = 0;

  std::atomic<int64_t> next_task{0};
  std::atomic<uint32_t> generation{0};  // 32 bits: std::atomic::wait is a bare futex
  std::atomic<int> workers_done{0};     // workers that finished the current job
  std::atomic<int> sleepers{0};
  std::atomic<bool> stopping{false};

  std::mutex error_mutex;
  std::exception_ptr error;

  void run_tasks(int thread_index) {
    const void* outer = tls_running_pool;
    tls_running_pool = this;
    try {
      if (thread_fn != nullptr) {
        (*thread_fn)(thread_index, n_threads);
      } else {
        for (int64_t t = next_task.fetch_add(1, std::memory_order_relaxed); t < n_tasks;
             t = next_task.fetch_add(1, std::memory_order_relaxed)) {
          (*task_fn)(t);
        }
      }
    } catch (...) {
      std::lock_guard lock(error_mutex);
      if (!error) error = std::current_exception();
    }
    tls_running_pool = outer;
  }

  void worker_loop(int thread_index) {
    uint32_t seen = 0;
    for (;;) {
      uint32_t gen = generation.load(std::memory_order_acquire);
      if (gen == seen) {
        auto idle_since = Clock::now();
        for (int spins = 1; (gen = generation.load(std::memory_order_acquire)) == seen; ++spins) {
          cpu_relax();
          if (spins % 256 != 0 || Clock::now() - idle_since < kSpinBeforeSleep) continue;
          // seq_cst pairs with the submitter's bump-then-read of `sleepers`: either we
          // see the new generation here or it sees us and notifies.
          sleepers.fetch_add(1, std::memory_order_seq_cst);
          generation.wait(seen, std::memory_order_seq_cst);
          sleepers.fetch_sub(1, std::memory_order_relaxed);
          idle_since = Clock::now();
        }
      }
      seen = gen;
      if (stopping.load(std::memory_order_acquire)) return;
      run_tasks(thread_index);
      workers_done.fetch_add(1, std::memory_order_release);
    }
  }

  // Publishes a job, takes part in it, and returns once every worker is done with it
  // (so the job's fields may be overwritten by the next one).
  void run_job() {
    next_task.store(0, std::memory_order_relaxed);
    workers_done.store(0, std::memory_order_relaxed);
    generation.fetch_add(1, std::memory_order_seq_cst);
    if (sleepers.load(std::memory_order_seq_cst) > 0) generation.notify_all();
    run_tasks(0);
    const int n_workers = static_cast<int>(workers.size());
    // Spin: the workers finish within microseconds of us. Yield now and then in case
    // one was preempted (more threads than free cores), so it gets the core back.
    for (int spins = 1; workers_done.load(std::memory_order_acquire) != n_workers; ++spins) {
      cpu_relax();
      if (spins % 1024 == 0) std::this_thread::yield();
    }
    task_fn = nullptr;
    thread_fn = nullptr;
    if (error) {
      std::exception_ptr e = std::exchange(error, nullptr);
      std::rethrow_exception(e);
    }
  }
};

ThreadPool::ThreadPool(int n_threads) : state_(std::make_unique<State>()) {
  if (n_threads < 1) throw std::invalid_argument("ThreadPool needs at least one thread");
  state_->n_threads = n_threads;
  state_->workers.reserve(n_threads - 1);
  for (int i = 1; i < n_threads; ++i) {
    state_->workers.emplace_back([s = state_.get(), i] { s->worker_loop(i); });
  }
}

ThreadPool::~ThreadPool() {
  state_->stopping.store(true, std::memory_order_release);
  state_->generation.fetch_add(1, std::memory_order_seq_cst);
  state_->generation.notify_all();
  for (auto& t : state_->workers) t.join();
}

int ThreadPool::size() const { return state_->n_threads; }

void ThreadPool::parallel_for(int64_t n_tasks, const std::function<void(int64_t task)>& fn) {
  if (n_tasks <= 0) return;
  // Inline when there is nobody to share with, or when called from inside one of
  // this pool's jobs (the workers are busy with the outer job).
  if (state_->workers.empty() || n_tasks == 1 || tls_running_pool == state_.get()) {
    for (int64_t t = 0; t < n_tasks; ++t) fn(t);
    return;
  }
  state_->task_fn = &fn;
  state_->n_tasks = n_tasks;
  state_->run_job();
}

void ThreadPool::run_on_all(const std::function<void(int thread, int n_threads)>& fn) {
  if (state_->workers.empty()) {
    fn(0, 1);
    return;
  }
  if (tls_running_pool == state_.get()) {
    throw std::logic_error("ThreadPool::run_on_all called from inside one of its own jobs");
  }
  state_->thread_fn = &fn;
  state_->run_job();
}

int default_thread_count() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  unsigned n = std::thread::hardware_concurrency();
  return n > 0 ? static_cast<int>(n) : 1;
}

}  // namespace tandem
