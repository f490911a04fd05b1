#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cfloat>

#include "runner/cuda/cuda_check.h"
#include "runner/cuda/forward_kernels.h"

namespace tandem::cuda {
namespace {

constexpr unsigned kFullMask = 0xffffffffu;

// --- element loads: every stored type widened to F32 exactly ---

__device__ inline float widen(float v) { return v; }
__device__ inline float widen(__half v) { return __half2float(v); }
__device__ inline float widen(__nv_bfloat16 v) { return __bfloat162float(v); }

__device__ inline void load8(const float* p, float out[8]) {
  const float4 a = reinterpret_cast<const float4*>(p)[0];
  const float4 b = reinterpret_cast<const float4*>(p)[1];
  out[0] = a.x, out[1] = a.y, out[2] = a.z, out[3] = a.w;
  out[4] = b.x, out[5] = b.y, out[6] = b.z, out[7] = b.w;
}
__device__ inline void load8(const __half* p, float out[8]) {
  const uint4 raw = *reinterpret_cast<const uint4*>(p);
  const __half2* h = reinterpret_cast<const __half2*>(&raw);
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const float2 f = __half22float2(h[k]);
    out[2 * k] = f.x, out[2 * k + 1] = f.y;
  }
}
__device__ inline void load8(const __nv_bfloat16* p, float out[8]) {
  const uint4 raw = *reinterpret_cast<const uint4*>(p);
  const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&raw);
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const float2 f = __bfloat1622float2(h[k]);
    out[2 * k] = f.x, out[2 * k + 1] = f.y;
  }
}

// --- fixed-shape reductions: the same tree whatever the data, so results are repeatable ---

template <typename V>
__device__ inline V warp_sum(V v) {
#pragma unroll
  for (int off = 16; off > 0; off /= 2) v += __shfl_xor_sync(kFullMask, v, off);
  return v;
}

// Every thread gets the block's sum (blockDim.x a multiple of 32, at most 1024).
template <typename V>
__device__ V block_sum(V v, V* scratch /* [32] */) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, n_warps = blockDim.x / 32;
  v = warp_sum(v);
  __syncthreads();  // scratch may still be read by a previous call
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  V total = lane < n_warps ? scratch[lane] : V(0);
  total = warp_sum(total);
  return total;
}

// --- embedding and norms ---

template <typename T>
__global__ void embed_kernel(const T* table, int64_t n_vocab, int32_t n_embd, const int32_t* token,
                             float scale, float* x) {
  int64_t id = token[blockIdx.x];
  if (id < 0 || id >= n_vocab)
    id = 0;  // a device-fed token is always valid; never read out of range
  const T* row = table + id * n_embd;
  float* out = x + static_cast<int64_t>(blockIdx.x) * n_embd;
  for (int32_t i = threadIdx.x; i < n_embd; i += blockDim.x) out[i] = widen(row[i]) * scale;
}

// One block per row; the sum of squares in double, as the CPU takes it.
__global__ void rms_norm_kernel(const float* x, const int32_t* rows, const float* weight,
                                float* out, int32_t n, float eps) {
  __shared__ double scratch[32];
  const int64_t src = rows ? rows[blockIdx.x] : blockIdx.x;
  const float* in = x + src * n;
  float* o = out + static_cast<int64_t>(blockIdx.x) * n;
  double ss = 0;
  for (int32_t i = threadIdx.x; i < n; i += blockDim.x) ss += static_cast<double>(in[i]) * in[i];
  ss = block_sum(ss, scratch);
  const float scale = static_cast<float>(1.0 / sqrt(ss / n + eps));
  for (int32_t i = threadIdx.x; i < n; i += blockDim.x) o[i] = in[i] * scale * weight[i];
}

__global__ void norm_add_kernel(const float* p, const float* weight, float* x, int32_t n,
                                float eps) {
  __shared__ double scratch[32];
  const float* in = p + static_cast<int64_t>(blockIdx.x) * n;
  float* o = x + static_cast<int64_t>(blockIdx.x) * n;
  double ss = 0;
  for (int32_t i = threadIdx.x; i < n; i += blockDim.x) ss += static_cast<double>(in[i]) * in[i];
  ss = block_sum(ss, scratch);
  const float scale = static_cast<float>(1.0 / sqrt(ss / n + eps));
  for (int32_t i = threadIdx.x; i < n; i += blockDim.x) o[i] += in[i] * scale * weight[i];
}

__global__ void soft_cap_kernel(float* x, int64_t n, float cap) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) x[i] = cap * tanhf(x[i] / cap);
}

// --- matmul: one warp per output row, a tile of up to kTokenTile tokens per block ---

constexpr int kRowsPerBlock = 4;
constexpr int kTokenTile = 8;

// acc[m] += W[row] . x[m0 + m] for m < count; the lanes split the row in 8-wide chunks
// (kVector) or single elements, always in the same order, then fold in a fixed tree.
template <typename T, bool kVector>
__device__ inline void dot_tile(const T* w_row, const float* x, int32_t n_in, int32_t count,
                                float acc[kTokenTile]) {
  const int lane = threadIdx.x % 32;
  if constexpr (kVector) {
    for (int32_t i = lane * 8; i < n_in; i += 256) {
      float wv[8];
      load8(w_row + i, wv);
#pragma unroll
      for (int m = 0; m < kTokenTile; ++m) {
        if (m >= count) break;
        float xv[8];
        load8(x + static_cast<int64_t>(m) * n_in + i, xv);
#pragma unroll
        for (int k = 0; k < 8; ++k) acc[m] = fmaf(wv[k], xv[k], acc[m]);
      }
    }
  } else {
    for (int32_t i = lane; i < n_in; i += 32) {
      const float wv = widen(w_row[i]);
#pragma unroll
      for (int m = 0; m < kTokenTile; ++m) {
        if (m >= count) break;
        acc[m] = fmaf(wv, x[static_cast<int64_t>(m) * n_in + i], acc[m]);
      }
    }
  }
#pragma unroll
  for (int m = 0; m < kTokenTile; ++m) acc[m] = warp_sum(acc[m]);
}

template <typename T, bool kVector>
__global__ void matmul_kernel(const T* w, const float* x, int32_t n_rows, int32_t n_in,
                              int32_t n_out, float* y, bool accumulate) {
  const int32_t o = blockIdx.x * kRowsPerBlock + threadIdx.x / 32;
  if (o >= n_out) return;
  const int32_t m0 = blockIdx.y * kTokenTile;
  const int32_t count = min(kTokenTile, n_rows - m0);
  float acc[kTokenTile] = {};
  dot_tile<T, kVector>(w + static_cast<int64_t>(o) * n_in, x + static_cast<int64_t>(m0) * n_in,
                       n_in, count, acc);
  if (threadIdx.x % 32 != 0) return;
  for (int m = 0; m < count; ++m) {
    float* out = y + static_cast<int64_t>(m0 + m) * n_out + o;
    *out = accumulate ? *out + acc[m] : acc[m];
  }
}

__device__ inline float activate(float g, Activation act) {
  if (act == Activation::kSilu) return g / (1.0f + expf(-g));
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  return 0.5f * g * (1.0f + tanhf(kSqrt2OverPi * g * (1.0f + 0.044715f * g * g)));
}

template <typename T, bool kVector>
__global__ void gated_matmul_kernel(const T* w, const float* x, int32_t n_rows, int32_t n_in,
                                    int32_t ff, Activation act, float* out) {
  const int32_t o = blockIdx.x * kRowsPerBlock + threadIdx.x / 32;
  if (o >= ff) return;
  const int32_t m0 = blockIdx.y * kTokenTile;
  const int32_t count = min(kTokenTile, n_rows - m0);
  const float* xt = x + static_cast<int64_t>(m0) * n_in;
  float gate[kTokenTile] = {}, up[kTokenTile] = {};
  dot_tile<T, kVector>(w + static_cast<int64_t>(o) * n_in, xt, n_in, count, gate);
  dot_tile<T, kVector>(w + static_cast<int64_t>(ff + o) * n_in, xt, n_in, count, up);
  if (threadIdx.x % 32 != 0) return;
  for (int m = 0; m < count; ++m)
    out[static_cast<int64_t>(m0 + m) * ff + o] = activate(gate[m], act) * up[m];
}

template <typename T>
void launch_matmul(const DeviceMatrix& w, const float* x, int32_t n_rows, float* y, bool accumulate,
                   cudaStream_t stream) {
  const dim3 grid((w.n_out + kRowsPerBlock - 1) / kRowsPerBlock,
                  (n_rows + kTokenTile - 1) / kTokenTile);
  const T* data = static_cast<const T*>(w.data);
  const auto n_in = static_cast<int32_t>(w.n_in), n_out = static_cast<int32_t>(w.n_out);
  if (n_in % 8 == 0)
    matmul_kernel<T, true>
        <<<grid, 32 * kRowsPerBlock, 0, stream>>>(data, x, n_rows, n_in, n_out, y, accumulate);
  else
    matmul_kernel<T, false>
        <<<grid, 32 * kRowsPerBlock, 0, stream>>>(data, x, n_rows, n_in, n_out, y, accumulate);
}

template <typename T>
void launch_gated(const DeviceMatrix& w, const float* x, int32_t n_rows, int32_t ff, Activation act,
                  float* out, cudaStream_t stream) {
  const dim3 grid((ff + kRowsPerBlock - 1) / kRowsPerBlock, (n_rows + kTokenTile - 1) / kTokenTile);
  const T* data = static_cast<const T*>(w.data);
  const auto n_in = static_cast<int32_t>(w.n_in);
  if (n_in % 8 == 0)
    gated_matmul_kernel<T, true>
        <<<grid, 32 * kRowsPerBlock, 0, stream>>>(data, x, n_rows, n_in, ff, act, out);
  else
    gated_matmul_kernel<T, false>
        <<<grid, 32 * kRowsPerBlock, 0, stream>>>(data, x, n_rows, n_in, ff, act, out);
}

}  // namespace

void embed(const DeviceMatrix& table, const int32_t* token, float scale, float* x, int32_t n_tokens,
           cudaStream_t stream) {
  if (n_tokens == 0) return;
  const auto e = static_cast<int32_t>(table.n_in);
  switch (table.type) {
    case WeightType::kF32:
      embed_kernel<<<n_tokens, 256, 0, stream>>>(static_cast<const float*>(table.data), table.n_out,
                                                 e, token, scale, x);
      break;
    case WeightType::kF16:
      embed_kernel<<<n_tokens, 256, 0, stream>>>(static_cast<const __half*>(table.data),
                                                 table.n_out, e, token, scale, x);
      break;
    case WeightType::kBF16:
      embed_kernel<<<n_tokens, 256, 0, stream>>>(static_cast<const __nv_bfloat16*>(table.data),
                                                 table.n_out, e, token, scale, x);
      break;
  }
}

void rms_norm(const float* x, const int32_t* rows, const float* weight, float* out, int32_t n_rows,
              int32_t n, float eps, cudaStream_t stream) {
  if (n_rows > 0) rms_norm_kernel<<<n_rows, 256, 0, stream>>>(x, rows, weight, out, n, eps);
}

void norm_add(const float* p, const float* weight, float* x, int32_t n_tokens, int32_t n, float eps,
              cudaStream_t stream) {
  if (n_tokens > 0) norm_add_kernel<<<n_tokens, 256, 0, stream>>>(p, weight, x, n, eps);
}

void soft_cap(float* x, int64_t n, float cap, cudaStream_t stream) {
  if (cap <= 0 || n == 0) return;
  soft_cap_kernel<<<static_cast<unsigned>((n + 255) / 256), 256, 0, stream>>>(x, n, cap);
}

void matmul(const DeviceMatrix& w, const float* x, int32_t n_rows, float* y, bool accumulate,
            cudaStream_t stream) {
  if (n_rows == 0) return;
  switch (w.type) {
    case WeightType::kF32:
      return launch_matmul<float>(w, x, n_rows, y, accumulate, stream);
    case WeightType::kF16:
      return launch_matmul<__half>(w, x, n_rows, y, accumulate, stream);
    case WeightType::kBF16:
      return launch_matmul<__nv_bfloat16>(w, x, n_rows, y, accumulate, stream);
  }
}

void gated_matmul(const DeviceMatrix& w, const float* x, int32_t n_rows, int32_t ff, Activation act,
                  float* out, cudaStream_t stream) {
  if (n_rows == 0) return;
  switch (w.type) {
    case WeightType::kF32:
      return launch_gated<float>(w, x, n_rows, ff, act, out, stream);
    case WeightType::kF16:
      return launch_gated<__half>(w, x, n_rows, ff, act, out, stream);
    case WeightType::kBF16:
      return launch_gated<__nv_bfloat16>(w, x, n_rows, ff, act, out, stream);
  }
}

}  // namespace tandem::cuda
