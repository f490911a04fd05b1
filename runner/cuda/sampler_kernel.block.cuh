// Block-wide building blocks of the sampler kernel (one block of kThreads per row): reductions
// and a scan over fixed trees (the same bits on every run, whatever the scheduling), and the
// loop that walks a row with several loads in flight per thread.
#pragma once

#include <cstdint>

namespace tandem::cuda::block {

constexpr int kThreads = 1024;
constexpr int kWarps = kThreads / 32;  // 32: a reduction's second level is one warp
constexpr unsigned kFull = 0xffffffffu;
constexpr float kNegInf = -__builtin_huge_valf();

// An argmax candidate: id -1 exactly when v is -inf (nothing found).
struct Best {
  float v;
  int32_t id;
};

// The shared words a block-wide reduction or scan passes through.
union BlockSlots {
  Best best[kWarps];
  unsigned long long u64[kWarps];
  uint32_t u32[kWarps];
};
static_assert(kWarps == 32, "the reductions' second level reads one slot per lane of warp 0");
__device__ __forceinline__ bool beats(Best b, Best a) {
  return b.v > a.v || (b.v == a.v && b.id < a.id);
}

// ---- block-wide reductions and scans: fixed trees, so the same bits on every run ----

__device__ __forceinline__ Best shfl_xor(Best b, int o) {
  return {__shfl_xor_sync(kFull, b.v, o), __shfl_xor_sync(kFull, b.id, o)};
}
__device__ __forceinline__ Best combine(Best a, Best b) { return beats(b, a) ? b : a; }

__device__ Best reduce_best(Best v, BlockSlots& s) {
  for (int o = 16; o > 0; o >>= 1) v = combine(v, shfl_xor(v, o));
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  __syncthreads();  // the slots' previous readers are done
  if (lane == 0) s.best[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = s.best[lane];
    for (int o = 16; o > 0; o >>= 1) v = combine(v, shfl_xor(v, o));
    __syncwarp();
    if (lane == 0) s.best[0] = v;
  }
  __syncthreads();
  return s.best[0];
}

__device__ unsigned long long reduce_sum(unsigned long long v, BlockSlots& s) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(kFull, v, o);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  __syncthreads();
  if (lane == 0) s.u64[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = s.u64[lane];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(kFull, v, o);
    __syncwarp();
    if (lane == 0) s.u64[0] = v;
  }
  __syncthreads();
  return s.u64[0];
}

// The sum of v over the threads before this one.
__device__ uint32_t exclusive_scan(uint32_t v, BlockSlots& s) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  uint32_t inclusive = v;
  for (int o = 1; o < 32; o <<= 1) {
    const uint32_t up = __shfl_up_sync(kFull, inclusive, o);
    if (lane >= o) inclusive += up;
  }
  __syncthreads();
  if (lane == 31) s.u32[warp] = inclusive;
  __syncthreads();
  if (warp == 0) {
    const uint32_t total = s.u32[lane];
    uint32_t before = total;
    for (int o = 1; o < 32; o <<= 1) {
      const uint32_t up = __shfl_up_sync(kFull, before, o);
      if (lane >= o) before += up;
    }
    __syncwarp();
    s.u32[lane] = before - total;
  }
  __syncthreads();
  return s.u32[warp] + inclusive - v;
}

// ---- passes over a row: several loads in flight per thread ----

constexpr int kUnroll = 2;                         // chunks of 4 loaded before any is used
constexpr int32_t kSpan = 4 * kThreads * kUnroll;  // ids one round of a pass covers

__device__ __forceinline__ float4 load4(const float* p, int32_t i, int32_t vocab, bool aligned) {
  if (aligned && i + 3 < vocab) return *reinterpret_cast<const float4*>(p + i);
  float4 v = make_float4(kNegInf, kNegInf, kNegInf, kNegInf);
  if (i < vocab) v.x = p[i];
  if (i + 1 < vocab) v.y = p[i + 1];
  if (i + 2 < vocab) v.z = p[i + 2];
  if (i + 3 < vocab) v.w = p[i + 3];
  return v;
}
__device__ __forceinline__ float lane4(float4 v, int j) {
  return j == 0 ? v.x : j == 1 ? v.y : j == 2 ? v.z : v.w;
}

// Calls f(chunk, first id) for this thread's chunks of 4 ids, in rising id order. A pass that
// loads one entry at a time waits out an L2 round trip per entry; this keeps kUnroll chunks
// in flight. Entries past the row read as -inf.
template <typename F>
__device__ __forceinline__ void for_each_chunk(const float* p, int32_t vocab, F&& f) {
  const bool aligned = (reinterpret_cast<uintptr_t>(p) & 15u) == 0;
  for (int32_t base = 4 * static_cast<int32_t>(threadIdx.x); base < vocab; base += kSpan) {
    float4 v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) v[u] = load4(p, base + u * 4 * kThreads, vocab, aligned);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      if (base + u * 4 * kThreads < vocab) f(v[u], base + u * 4 * kThreads);
    }
  }
}

// Calls f(value, id) for this thread's entries, in rising id order.
template <typename F>
__device__ __forceinline__ void for_each_entry(const float* p, int32_t vocab, F&& f) {
  for_each_chunk(p, vocab, [&](float4 v, int32_t first) {
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      if (first + j < vocab) f(lane4(v, j), first + j);
    }
  });
}

}  // namespace tandem::cuda::block
