#include "runner/kernels/ceilings.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

#include "runner/kernels/kernels.h"
#include "runner/kernels/peaks.h"

namespace tandem::kernels {
namespace {

using Clock = std::chrono::steady_clock;
using PeakLoop = int64_t (*)(int64_t iterations, float* sink);

double since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Runs `loop` on every thread of the pool at once, in rounds of a fixed size, until
// `seconds` have passed; returns the summed rate in giga-operations per second.
double peak_rate(ThreadPool& pool, PeakLoop loop, double seconds) {
  constexpr int64_t kRound = 1 << 16;
  float sink = 0;
  loop(kRound, &sink);  // warm up: clocks and caches
  std::atomic<int64_t> ops{0};
  const Clock::time_point start = Clock::now();
  pool.run_on_all([&](int, int) {
    float local_sink = 0;
    int64_t local_ops = 0;
    while (since(start) < seconds) local_ops += loop(kRound, &local_sink);
    ops += local_ops;
    if (local_sink == 1.2345f) std::fputs("", stderr);  // keeps the results alive
  });
  return static_cast<double>(ops.load()) / since(start) / 1e9;
}

// Reads `bytes` of `data` split over `threads` of the pool (the others idle), repeatedly
// until `seconds` have passed; returns the fastest pass's GB/s. A ceiling is what the
// machine can give, and on these shared VMs a pass now and then runs far slower (other
// guests' traffic), which a mean of the passes counted against it: a ceiling measured low
// puts a decode nearer its floor than it is (docs/performance.md, 2026-12-02, second
// session).
double read_rate(ThreadPool& pool, const uint8_t* data, int64_t bytes, int threads,
                 double seconds) {
  const int64_t share = bytes / threads / 64 * 64;
  std::atomic<uint64_t> sum{0};
  double fastest = 0;
  const Clock::time_point start = Clock::now();
  do {
    const Clock::time_point pass = Clock::now();
    pool.run_on_all([&](int thread, int) {
      if (thread < threads) sum += detail::read_sum_avx2(data + thread * share, share);
    });
    fastest = std::max(fastest, static_cast<double>(share) * threads / since(pass) / 1e9);
  } while (since(start) < seconds);
  if (sum.load() == 12345) std::fputs("", stderr);  // keeps the reads alive
  return fastest;
}

}  // namespace

MachineCeilings measure_ceilings(ThreadPool& pool, double seconds, int64_t buffer_bytes) {
  MachineCeilings c;
  c.threads = pool.size();
  const Isa isa = detected_isa();
  const bool avx512 = isa != Isa::kAvx2;
  c.f32_fma_gflops =
      peak_rate(pool, avx512 ? detail::peak_fma_avx512 : detail::peak_fma_avx2, seconds);
  // The BF16 dot wherever the CPU has it, also where the kernels prefer F32 FMAs to it.
  if (hardware_isa() >= Isa::kAvx512Bf16)
    c.bf16_dot_gflops = peak_rate(pool, detail::peak_bf16_dot_avx512, seconds);
  if (isa == Isa::kAmx) c.amx_bf16_gflops = peak_rate(pool, detail::peak_amx_bf16, seconds);
  c.int8_dot_gops = peak_rate(
      pool, quant_uses_vnni() ? detail::peak_int8_dot_avx512 : detail::peak_int8_dot_avx2, seconds);
  if (quant_uses_amx()) c.amx_int8_gops = peak_rate(pool, detail::peak_amx_int8, seconds);

  buffer_bytes = buffer_bytes / 64 * 64;
  std::unique_ptr<uint8_t[], void (*)(uint8_t*)> buffer(
      static_cast<uint8_t*>(std::aligned_alloc(64, static_cast<size_t>(buffer_bytes))),
      [](uint8_t* p) { std::free(p); });
  if (!buffer) throw std::bad_alloc();
  std::memset(buffer.get(), 1, static_cast<size_t>(buffer_bytes));  // commit the pages
  c.read_gbps_one_thread = read_rate(pool, buffer.get(), buffer_bytes, 1, seconds);
  // One thread is all the threads: the same figure, not a second (noisy) measurement, so
  // that the line printed and the fractions divided by it agree.
  c.read_gbps_all_threads = pool.size() > 1
                                ? read_rate(pool, buffer.get(), buffer_bytes, pool.size(), seconds)
                                : c.read_gbps_one_thread;
  return c;
}

double peak_gflops(const MachineCeilings& c, Peak peak) {
  if (peak == Peak::kAmxBf16 && c.amx_bf16_gflops > 0) return c.amx_bf16_gflops;
  if (peak == Peak::kBf16Dot && c.bf16_dot_gflops > 0) return c.bf16_dot_gflops;
  if (peak == Peak::kInt8Dot && c.int8_dot_gops > 0) return c.int8_dot_gops;
  return c.f32_fma_gflops;
}

const char* peak_name(Peak peak) {
  switch (peak) {
    case Peak::kBf16Dot:
      return "BF16 dot";
    case Peak::kInt8Dot:
      return "int8 dot";
    case Peak::kAmxBf16:
      return "AMX BF16";
    case Peak::kF32Fma:
      break;
  }
  return "F32 FMA";
}

std::string describe(const MachineCeilings& c) {
  char amx[48] = "", amx_int8[48] = "";
  if (c.amx_bf16_gflops > 0)
    std::snprintf(amx, sizeof amx, ", AMX BF16 %.0f GFLOP/s", c.amx_bf16_gflops);
  if (c.amx_int8_gops > 0)
    std::snprintf(amx_int8, sizeof amx_int8, ", AMX int8 %.0f GOP/s", c.amx_int8_gops);
  // With one thread the two read figures are one measurement (measure_ceilings): said once.
  char reads[96];
  if (c.threads > 1) {
    std::snprintf(reads, sizeof reads, "%.1f GB/s (1 thread) %.1f GB/s (%d threads)",
                  c.read_gbps_one_thread, c.read_gbps_all_threads, c.threads);
  } else {
    std::snprintf(reads, sizeof reads, "%.1f GB/s", c.read_gbps_one_thread);
  }
  char line[360];
  std::snprintf(line, sizeof line,
                "ceilings (%d thread%s): F32 FMA %.0f GFLOP/s, BF16 dot %.0f GFLOP/s%s, int8 dot "
                "%.0f GOP/s%s, memory read %s",
                c.threads, c.threads == 1 ? "" : "s", c.f32_fma_gflops, c.bf16_dot_gflops, amx,
                c.int8_dot_gops, amx_int8, reads);
  return line;
}

}  // namespace tandem::kernels
