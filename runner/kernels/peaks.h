// Internal to runner/kernels/ceilings.cpp: the per-ISA loops that run one instruction
// back to back on independent accumulators, so the rate is the core's throughput.
// Each runs `iterations` rounds and returns the operations done (flops or int ops), and
// writes a value derived from the results to `sink` so that nothing is optimized away.
#pragma once

#include <cstdint>

namespace tandem::kernels::detail {

int64_t peak_fma_avx2(int64_t iterations, float* sink);         // ymm vfmadd231ps
int64_t peak_fma_avx512(int64_t iterations, float* sink);       // zmm vfmadd231ps
int64_t peak_bf16_dot_avx512(int64_t iterations, float* sink);  // zmm vdpbf16ps
int64_t peak_amx_bf16(int64_t iterations, float* sink);         // tdpbf16ps (amx/matmul.cpp)
int64_t peak_amx_int8(int64_t iterations, float* sink);         // tdpbssd (amx/quant_matmul.cpp)
int64_t peak_int8_dot_avx512(int64_t iterations, float* sink);  // zmm vpdpbusd (AVX512-VNNI)
// ymm vpmaddubsw + vpmaddwd + vpaddd: the quantized kernels' step where VNNI is absent.
int64_t peak_int8_dot_avx2(int64_t iterations, float* sink);
// Sums n bytes (n a multiple of 64) with 256-bit loads; the sum keeps the reads alive.
uint64_t read_sum_avx2(const uint8_t* data, int64_t n);

}  // namespace tandem::kernels::detail
