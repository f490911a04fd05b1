// ThreadPool: workers wait for a job by spinning on a generation counter, and after
// kSpinBeforeSleep of idleness block on it with a futex (std::atomic::wait), so a
// busy forward pass pays ~0.5 us per job while an idle server sleeps.
#include "runner/util/thread_pool.h"

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

// A job is over when all its tasks are done, not when every worker has looked at it:
// a worker the hypervisor has descheduled must not hold up a job the others finished.
// So a worker claims a task by compare-and-swap on `claim`, a word that holds the job's
// generation next to the next task index; a worker still holding an older generation
// fails the swap and claims nothing. The job's fields are atomics read before that
// swap and validated by it (the submitter closes the claim word before it rewrites
// them, and its release stores of them pair with the workers' acquire loads).
struct ThreadPool::State {
  static constexpr uint64_t kClosed = 0xffffffffu;  // task index meaning "no claims"

  int n_threads = 1;
  std::vector<std::thread> workers;

  // Written once per job by the submitter, read by every worker: one cache line.
  alignas(64) std::atomic<uint32_t> generation{0};  // 32 bits: atomic::wait is a bare futex
  std::atomic<const std::function<void(int64_t)>*> task_fn{nullptr};
  std::atomic<const std::function<void(int, int)>*> thread_fn{nullptr};  // run_on_all
  std::atomic<int64_t> n_tasks{0};
  // Read-modify-written by every thread: each on its own line, away from the above.
  alignas(64) std::atomic<uint64_t> claim{kClosed};  // generation << 32 | next task index
  alignas(64) std::atomic<int64_t> tasks_done{0};
  alignas(64) std::atomic<int> sleepers{0};
  std::atomic<bool> stopping{false};

  std::mutex error_mutex;
  std::exception_ptr error;

  // Claims and runs tasks of job `gen` until none are left (one at most in run_on_all
  // mode, where each thread runs fn once).
  void run_tasks(uint32_t gen) {
    // Acquire: if any of these is already the next job's, the claim load below sees
    // that job's closed claim word (stored before them) and we claim nothing.
    const auto* fn = task_fn.load(std::memory_order_acquire);
    const auto* per_thread = thread_fn.load(std::memory_order_acquire);
    const int64_t n = n_tasks.load(std::memory_order_acquire);
    const void* outer = tls_running_pool;
    tls_running_pool = this;
    uint64_t word = claim.load(std::memory_order_acquire);
    while ((word >> 32) == gen && static_cast<int64_t>(word & 0xffffffffu) < n) {
      if (!claim.compare_exchange_weak(word, word + 1, std::memory_order_acq_rel,
                                       std::memory_order_acquire)) {
        continue;
      }
      const int64_t task = static_cast<int64_t>(word & 0xffffffffu);
      try {
        if (per_thread != nullptr) {
          (*per_thread)(static_cast<int>(task), n_threads);
        } else {
          (*fn)(task);
        }
      } catch (...) {
        std::lock_guard lock(error_mutex);
        if (!error) error = std::current_exception();
      }
      tasks_done.fetch_add(1, std::memory_order_release);
      if (per_thread != nullptr) break;
      word = claim.load(std::memory_order_acquire);
    }
    tls_running_pool = outer;
  }

  void worker_loop() {
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
      run_tasks(gen);
    }
  }

  // Publishes a job, takes part in it, and returns once all its tasks are done.
  void run_job(const std::function<void(int64_t)>* fn,
               const std::function<void(int, int)>* per_thread, int64_t n) {
    const uint32_t gen = generation.load(std::memory_order_relaxed) + 1;
    // Close claims first, so that a worker still on an older job cannot validate the
    // fields written next (their release stores publish the close along with them).
    claim.store(static_cast<uint64_t>(gen) << 32 | kClosed, std::memory_order_relaxed);
    task_fn.store(fn, std::memory_order_release);
    thread_fn.store(per_thread, std::memory_order_release);
    n_tasks.store(n, std::memory_order_release);
    tasks_done.store(0, std::memory_order_relaxed);
    claim.store(static_cast<uint64_t>(gen) << 32, std::memory_order_release);
    generation.store(gen, std::memory_order_seq_cst);
    if (sleepers.load(std::memory_order_seq_cst) > 0) generation.notify_all();
    run_tasks(gen);
    // Spin: the others finish within microseconds. Yield now and then in case one of
    // them was preempted mid-task (more threads than free cores).
    for (int spins = 1; tasks_done.load(std::memory_order_acquire) != n; ++spins) {
      cpu_relax();
      if (spins % 1024 == 0) std::this_thread::yield();
    }
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
    state_->workers.emplace_back([s = state_.get()] { s->worker_loop(); });
  }
}

ThreadPool::~ThreadPool() {
  state_->stopping.store(true, std::memory_order_release);
  state_->generation.fetch_add(1, std::memory_order_seq_cst);  // no claims open: nothing runs
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
  if (static_cast<uint64_t>(n_tasks) >= State::kClosed)
    throw std::length_error("ThreadPool::parallel_for: too many tasks");
  state_->run_job(&fn, nullptr, n_tasks);
}

void ThreadPool::run_on_all(const std::function<void(int thread, int n_threads)>& fn) {
  if (state_->workers.empty()) {
    fn(0, 1);
    return;
  }
  if (tls_running_pool == state_.get()) {
    throw std::logic_error("ThreadPool::run_on_all called from inside one of its own jobs");
  }
  state_->run_job(nullptr, &fn, state_->n_threads);
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
