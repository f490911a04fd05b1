// The device-side pieces the forward kernels share (forward_kernels.cu, attention_kernels.cu,
// mma_matmul.cu): stored elements widened to F32 exactly and F32 narrowed to a stored type,
// eight elements per 16-byte load, warp and block reductions of fixed shape (the same tree
// whatever the data, so a row's result repeats and does not depend on its batch), and the
// FFN's activation. CUDA code only.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>

#include "runner/cuda/forward_kernels.h"

namespace tandem::cuda {

inline constexpr unsigned kFullMask = 0xffffffffu;

__device__ inline float widen(float v) { return v; }
__device__ inline float widen(int8_t v) { return v; }  // kScaledInt8's integers
__device__ inline float widen(__half v) { return __half2float(v); }
__device__ inline float widen(__nv_bfloat16 v) { return __bfloat162float(v); }

__device__ inline void narrow(float v, float* p) { *p = v; }
__device__ inline void narrow(float v, __half* p) { *p = __float2half_rn(v); }
__device__ inline void narrow(float v, __nv_bfloat16* p) { *p = __float2bfloat16_rn(v); }

// Eight elements widened to F32 with one 16-byte load (two for F32); p 16-byte aligned.
__device__ inline void load8(const float* p, float out[8]) {
  const float4 a = reinterpret_cast<const float4*>(p)[0];
  const float4 b = reinterpret_cast<const float4*>(p)[1];
  out[0] = a.x, out[1] = a.y, out[2] = a.z, out[3] = a.w;
  out[4] = b.x, out[5] = b.y, out[6] = b.z, out[7] = b.w;
}
template <typename T2, typename F>
__device__ inline void load8_pairs(const void* p, float out[8], F to_float2) {
  const uint4 raw = *reinterpret_cast<const uint4*>(p);
  const T2* h = reinterpret_cast<const T2*>(&raw);
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const float2 f = to_float2(h[k]);
    out[2 * k] = f.x, out[2 * k + 1] = f.y;
  }
}
__device__ inline void load8(const __half* p, float out[8]) {
  load8_pairs<__half2>(p, out, [](__half2 h) { return __half22float2(h); });
}
__device__ inline void load8(const __nv_bfloat16* p, float out[8]) {
  load8_pairs<__nv_bfloat162>(p, out, [](__nv_bfloat162 h) { return __bfloat1622float2(h); });
}

template <typename V>
__device__ inline V warp_sum(V v) {
#pragma unroll
  for (int off = 16; off > 0; off /= 2) v += __shfl_xor_sync(kFullMask, v, off);
  return v;
}

__device__ inline float warp_max(float v) {
#pragma unroll
  for (int off = 16; off > 0; off /= 2) v = fmaxf(v, __shfl_xor_sync(kFullMask, v, off));
  return v;
}

// Every thread gets the block's sum (blockDim.x a multiple of 32, at most 1024); scratch
// may be reused by the next call at once.
template <typename V>
__device__ V block_sum(V v, V* scratch /* [32] */) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, n_warps = blockDim.x / 32;
  v = warp_sum(v);
  __syncthreads();  // scratch may still be read by a previous call
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  return warp_sum(lane < n_warps ? scratch[lane] : V(0));
}

// Every thread gets the block's max, NaN ignored (-inf if none).
__device__ inline float block_max(float v, float* scratch /* [32] */) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, n_warps = blockDim.x / 32;
  v = warp_max(v);
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  return warp_max(lane < n_warps ? scratch[lane] : -INFINITY);
}

// The gated FFN's activation of its gate: SiLU, or GELU's tanh form (gemma).
__device__ inline float activate(float g, Activation act) {
  if (act == Activation::kSilu) return g / (1.0f + expf(-g));
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  return 0.5f * g * (1.0f + tanhf(kSqrt2OverPi * g * (1.0f + 0.044715f * g * g)));
}

}  // namespace tandem::cuda
