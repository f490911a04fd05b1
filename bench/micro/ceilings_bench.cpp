// The machine's ceilings (runner/kernels/ceilings.h): the peak of F32 FMA, BF16 dot
// (vdpbf16ps), AMX BF16 (tdpbf16ps, where the CPU has it), int8 dot (vpdpbusd) and AMX int8
// (tdpbssd, where the CPU has it) on 1 and all
// threads, and the read bandwidth from memory with 1 and all threads. Each figure is a counter of
// its own benchmark; run with
// --benchmark_repetitions=5 --benchmark_report_aggregates_only=true for medians.
#include <benchmark/benchmark.h>

#include "runner/kernels/ceilings.h"

namespace {

void BM_Ceilings(benchmark::State& state) {
  tandem::ThreadPool pool(static_cast<int>(state.range(0)));
  tandem::kernels::MachineCeilings c;
  for (auto _ : state) c = tandem::kernels::measure_ceilings(pool, 0.2);
  state.counters["f32_fma_GFLOPs"] = c.f32_fma_gflops;
  state.counters["bf16_dot_GFLOPs"] = c.bf16_dot_gflops;
  state.counters["amx_bf16_GFLOPs"] = c.amx_bf16_gflops;
  state.counters["int8_dot_GOPs"] = c.int8_dot_gops;
  state.counters["amx_int8_GOPs"] = c.amx_int8_gops;
  state.counters["read_GBps_1thread"] = c.read_gbps_one_thread;
  state.counters["read_GBps_all"] = c.read_gbps_all_threads;
}
BENCHMARK(BM_Ceilings)->Arg(1)->Arg(2)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace
BENCHMARK_MAIN();
