// A matmul's activation preparation (BF16 rounding, or quantizing for the integer path),
// shared by the matmul's tasks. Internal to runner/kernels/ (kernels.cpp, quant_dispatch.cpp).
#pragma once

#include <immintrin.h>

#include <atomic>
#include <cstdint>

namespace tandem::kernels::detail {

// From this many rows, a matmul's tasks prepare the activations together (BF16 rounding,
// or quantizing them for the integer path); below it the submitting thread does it alone.
// At 8 rows the submitter quantizing alone took 2.6% of an n = 8 run's samples while the
// other thread spun (`perf` of bench_choices --only n, Q4_K_M); shared from 4 rows (it was
// 16), a Q4_K_M 8-row step measured 1.5-3% faster, BF16 level (docs/performance.md).
constexpr int64_t kRowsToSharePrep = 4;

// Preparing a matmul's activations, shared by its tasks: `work` over units [begin, end)
// (rows or blocks, each independent of the others). Each task first claims and does
// chunks of units until none are left, then waits for the chunks other tasks are still
// doing. A chunk is only ever waited on while a running task works on it, so this cannot
// deadlock, even where the pool runs the tasks one after another.
struct SharedPrep {
  static constexpr int kChunks = 4;
  void (*work)(const void* ctx, int64_t begin, int64_t end) = nullptr;  // null: done
  const void* ctx = nullptr;
  int64_t n_units = 0;
  std::atomic<int> next{0}, done{0};

  // The work to do: by the tasks together where `shared`, at once on this thread otherwise.
  void start(void (*what)(const void*, int64_t, int64_t), const void* context, int64_t units,
             bool shared) {
    work = what;
    ctx = context;
    n_units = units;
    if (shared) return;
    work(ctx, 0, n_units);
    work = nullptr;
  }
  void help_and_wait() {
    if (work == nullptr) return;
    for (int c = next.fetch_add(1, std::memory_order_relaxed); c < kChunks;
         c = next.fetch_add(1, std::memory_order_relaxed)) {
      work(ctx, n_units * c / kChunks, n_units * (c + 1) / kChunks);
      done.fetch_add(1, std::memory_order_release);
    }
    while (done.load(std::memory_order_acquire) < kChunks) _mm_pause();
  }
};

}  // namespace tandem::kernels::detail
