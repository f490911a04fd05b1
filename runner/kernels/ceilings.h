// The machine's ceilings, measured on the machine at hand: the peak rate of the
// dot-product instructions the kernels use, and the read bandwidth from memory. Speeds
// mean something as a fraction of these (`tandem bench` and `generate` print it).
// Measuring takes about `seconds` per figure; call it once, from one thread.
#pragma once

#include <cstdint>
#include <string>

#include "runner/util/thread_pool.h"

namespace tandem::kernels {

// int8_dot_gops is vpdpbusd's rate (4 products and 4 adds per lane) where the quantized
// kernels use AVX512-VNNI, else that of AVX2's vpmaddubsw + vpmaddwd + vpaddd (the same 64
// operations per 256 bits).
struct MachineCeilings {
  int threads = 0;             // the pool's threads, all of them measured at once
  double f32_fma_gflops = 0;   // FMA on the widest vectors (2 flops per lane)
  double bf16_dot_gflops = 0;  // vdpbf16ps (2 products and 2 adds per lane); 0: absent
  double amx_bf16_gflops = 0;  // tdpbf16ps on AMX tiles (16 x 16 lanes of 16 pairs); 0: absent
  double int8_dot_gops = 0;    // the quantized kernels' int8 step (above)
  // tdpbssd on AMX tiles (16 x 16 lanes of 64 byte products), which the quantized batches of
  // 16 rows or more take where the CPU has AMX-INT8 (kernels.h, quant_uses_amx); 0: absent.
  // Not a Peak: a weight's decode steps stay on int8_dot's form.
  double amx_int8_gops = 0;
  // Streaming reads of a buffer far larger than the caches: the fastest pass over it.
  double read_gbps_one_thread = 0;
  double read_gbps_all_threads = 0;
};

// Measures every ceiling with the pool's threads (peaks) and with one and all threads
// (bandwidth, over `buffer_bytes` of memory).
MachineCeilings measure_ceilings(ThreadPool& pool, double seconds = 0.2,
                                 int64_t buffer_bytes = int64_t{512} << 20);

// The instruction a matmul's inner loop is built on, whose measured peak bounds it.
enum class Peak { kF32Fma, kBf16Dot, kInt8Dot, kAmxBf16 };
inline constexpr int kPeakCount = 4;

// The peak for `peak` in GFLOP/s (GOP/s for int8), or the F32 FMA peak where that
// instruction was not measured (the CPU lacks it).
double peak_gflops(const MachineCeilings& c, Peak peak);
const char* peak_name(Peak peak);  // "F32 FMA", "BF16 dot", "int8 dot", "AMX BF16"

// One line: "ceilings (2 threads): F32 FMA 150 GFLOP/s, BF16 dot 380 GFLOP/s, ..." (AMX BF16
// where measured).
std::string describe(const MachineCeilings& c);

}  // namespace tandem::kernels
