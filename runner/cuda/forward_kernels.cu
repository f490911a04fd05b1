#include <cfloat>

#include <atomic>
#include <type_traits>

#include "runner/cuda/cuda_check.h"
#include "runner/cuda/dependent_launch.cuh"
#include "runner/cuda/device_helpers.cuh"
#include "runner/cuda/forward_kernels.h"
#include "runner/cuda/mma_matmul.h"

namespace tandem::cuda {
namespace {

// --- embedding and norms ---

// x[t] = embedding row token[t] * scale. An int8 table (kScaledInt8) is multiplied by its
// block scales first, which gives exactly the dequantized weights; block_scales is null
// for the other types.
template <typename T>
__global__ void embed_kernel(const T* table, const float* block_scales, int64_t n_vocab,
                             int32_t n_embd, const int32_t* token, float scale, float* x) {
  dependents_may_launch();  // the next kernel's prologue may overlap this one
  int64_t id = token[blockIdx.x];
  if (id < 0 || id >= n_vocab)
    id = 0;  // a device-fed token is always valid; never read out of range
  const T* row = table + id * n_embd;
  float* out = x + static_cast<int64_t>(blockIdx.x) * n_embd;
  for (int32_t i = threadIdx.x; i < n_embd; i += blockDim.x) {
    float w = widen(row[i]);
    if constexpr (std::is_same_v<T, int8_t>) w *= block_scales[id * (n_embd / 32) + i / 32];
    out[i] = w * scale;
  }
}

// One block per row; the sum of squares in double, as the CPU takes it.
__global__ void rms_norm_kernel(const float* x, const int32_t* rows, const float* weight,
                                float* out, int32_t n, float eps) {
  dependents_may_launch();
  wait_for_previous_kernels();
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
  dependents_may_launch();
  wait_for_previous_kernels();
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
  dependents_may_launch();
  wait_for_previous_kernels();
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) x[i] = cap * tanhf(x[i] / cap);
}

// --- matmul: one warp per output row, a tile of up to kTokenTile tokens per block ---

constexpr int kRowsPerBlock = 4;
constexpr int kTokenTile = 8;

// The tile's RMSNorm scales, one per token, each summed by one warp in the same order in
// every block, so a token's normed input does not depend on which block or batch reads it.
__device__ void tile_scales(const float* x, int32_t n_in, int32_t count, float eps,
                            float* scale /* shared [kTokenTile] */) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int m = warp; m < count; m += kRowsPerBlock) {
    const float* row = x + static_cast<int64_t>(m) * n_in;
    double ss = 0;
    for (int32_t i = lane; i < n_in; i += 32) ss += static_cast<double>(row[i]) * row[i];
    ss = warp_sum(ss);
    if (lane == 0) scale[m] = static_cast<float>(1.0 / sqrt(ss / n_in + eps));
  }
  __syncthreads();
}

// acc[m] += W[row] . xn[m0 + m] for m < count, xn = x, or x * scale[m] * norm (kNorm); the
// lanes split the row in 8-wide chunks (kVector) or single elements, always in the same
// order, then fold in a fixed tree.
template <typename T, bool kVector, bool kNorm>
__device__ inline void dot_tile(const T* w_row, const float* x, int32_t n_in, int32_t count,
                                const float* scale, const float* norm, float acc[kTokenTile]) {
  const int lane = threadIdx.x % 32;
  if constexpr (kVector) {
    for (int32_t i = lane * 8; i < n_in; i += 256) {
      float wv[8], nv[8];
      load8(w_row + i, wv);
      if constexpr (kNorm) load8(norm + i, nv);
#pragma unroll
      for (int m = 0; m < kTokenTile; ++m) {
        if (m >= count) break;
        float xv[8];
        load8(x + static_cast<int64_t>(m) * n_in + i, xv);
#pragma unroll
        for (int k = 0; k < 8; ++k) {
          const float xk = kNorm ? xv[k] * scale[m] * nv[k] : xv[k];
          acc[m] = fmaf(wv[k], xk, acc[m]);
        }
      }
    }
  } else {
    for (int32_t i = lane; i < n_in; i += 32) {
      const float wv = widen(w_row[i]);
#pragma unroll
      for (int m = 0; m < kTokenTile; ++m) {
        if (m >= count) break;
        const float xi = x[static_cast<int64_t>(m) * n_in + i];
        acc[m] = fmaf(wv, kNorm ? xi * scale[m] * norm[i] : xi, acc[m]);
      }
    }
  }
#pragma unroll
  for (int m = 0; m < kTokenTile; ++m) acc[m] = warp_sum(acc[m]);
}

template <typename T, bool kVector, bool kNorm>
__global__ void matmul_kernel(const T* w, const float* x, int32_t n_rows, int32_t n_in,
                              int32_t n_out, float* y, bool accumulate, NormIn norm) {
  dependents_may_launch();
  wait_for_previous_kernels();
  __shared__ float scale[kTokenTile];
  const int32_t o = blockIdx.x * kRowsPerBlock + threadIdx.x / 32;
  const int32_t m0 = blockIdx.y * kTokenTile;
  const int32_t count = min(kTokenTile, n_rows - m0);
  const float* xt = x + static_cast<int64_t>(m0) * n_in;
  if constexpr (kNorm) tile_scales(xt, n_in, count, norm.eps, scale);  // every warp: it syncs
  if (o >= n_out) return;
  float acc[kTokenTile] = {};
  dot_tile<T, kVector, kNorm>(w + static_cast<int64_t>(o) * n_in, xt, n_in, count, scale,
                              norm.weight, acc);
  if (threadIdx.x % 32 != 0) return;
  for (int m = 0; m < count; ++m) {
    float* out = y + static_cast<int64_t>(m0 + m) * n_out + o;
    *out = accumulate ? *out + acc[m] : acc[m];
  }
}

template <typename T, bool kVector, bool kNorm>
__global__ void gated_matmul_kernel(const T* w, const float* x, int32_t n_rows, int32_t n_in,
                                    int32_t ff, Activation act, float* out, NormIn norm) {
  dependents_may_launch();
  wait_for_previous_kernels();
  __shared__ float scale[kTokenTile];
  const int32_t o = blockIdx.x * kRowsPerBlock + threadIdx.x / 32;
  const int32_t m0 = blockIdx.y * kTokenTile;
  const int32_t count = min(kTokenTile, n_rows - m0);
  const float* xt = x + static_cast<int64_t>(m0) * n_in;
  if constexpr (kNorm) tile_scales(xt, n_in, count, norm.eps, scale);
  if (o >= ff) return;
  float gate[kTokenTile] = {}, up[kTokenTile] = {};
  dot_tile<T, kVector, kNorm>(w + static_cast<int64_t>(o) * n_in, xt, n_in, count, scale,
                              norm.weight, gate);
  dot_tile<T, kVector, kNorm>(w + static_cast<int64_t>(ff + o) * n_in, xt, n_in, count, scale,
                              norm.weight, up);
  if (threadIdx.x % 32 != 0) return;
  for (int m = 0; m < count; ++m)
    out[static_cast<int64_t>(m0 + m) * ff + o] = activate(gate[m], act) * up[m];
}

// Picks the instantiation: 8-wide chunks when rows allow 16-byte loads, the norm when given.
template <template <typename, bool, bool> class Kernel, typename T, typename... Args>
void launch_variant(dim3 grid, int32_t n_in, const NormIn& norm, cudaStream_t stream,
                    Args... args) {
  const bool vector = n_in % 8 == 0;
  const dim3 block(32 * kRowsPerBlock);
  if (vector && norm.weight)
    Kernel<T, true, true>::launch(grid, block, stream, args..., norm);
  else if (vector)
    Kernel<T, true, false>::launch(grid, block, stream, args..., norm);
  else if (norm.weight)
    Kernel<T, false, true>::launch(grid, block, stream, args..., norm);
  else
    Kernel<T, false, false>::launch(grid, block, stream, args..., norm);
}

template <typename T, bool kVector, bool kNorm>
struct Matmul {
  template <typename... Args>
  static void launch(dim3 grid, dim3 block, cudaStream_t stream, Args... args) {
    launch_dependent(matmul_kernel<T, kVector, kNorm>, grid, block, stream, args...);
  }
};

template <typename T, bool kVector, bool kNorm>
struct Gated {
  template <typename... Args>
  static void launch(dim3 grid, dim3 block, cudaStream_t stream, Args... args) {
    launch_dependent(gated_matmul_kernel<T, kVector, kNorm>, grid, block, stream, args...);
  }
};

template <typename T>
void launch_matmul(const DeviceMatrix& w, const float* x, int32_t n_rows, float* y, bool accumulate,
                   const NormIn& norm, cudaStream_t stream) {
  const dim3 grid((w.n_out + kRowsPerBlock - 1) / kRowsPerBlock,
                  (n_rows + kTokenTile - 1) / kTokenTile);
  const auto n_in = static_cast<int32_t>(w.n_in), n_out = static_cast<int32_t>(w.n_out);
  launch_variant<Matmul, T>(grid, n_in, norm, stream, static_cast<const T*>(w.data), x, n_rows,
                            n_in, n_out, y, accumulate);
}

template <typename T>
void launch_gated(const DeviceMatrix& w, const float* x, int32_t n_rows, int32_t ff, Activation act,
                  float* out, const NormIn& norm, cudaStream_t stream) {
  const dim3 grid((ff + kRowsPerBlock - 1) / kRowsPerBlock, (n_rows + kTokenTile - 1) / kTokenTile);
  const auto n_in = static_cast<int32_t>(w.n_in);
  launch_variant<Gated, T>(grid, n_in, norm, stream, static_cast<const T*>(w.data), x, n_rows, n_in,
                           ff, act, out);
}

std::atomic<bool> dependent_launch{true};

}  // namespace

bool dependent_launch_enabled() { return dependent_launch.load(std::memory_order_relaxed); }

void set_dependent_launch(bool on) { dependent_launch.store(on, std::memory_order_relaxed); }

void embed(const DeviceMatrix& table, const int32_t* token, float scale, float* x, int32_t n_tokens,
           cudaStream_t stream) {
  if (n_tokens == 0) return;
  const auto e = static_cast<int32_t>(table.n_in);
  auto launch = [&](auto* data) {
    embed_kernel<<<n_tokens, 256, 0, stream>>>(data, table.scales, table.n_out, e, token, scale, x);
  };
  switch (table.type) {
    case WeightType::kF32:
      return launch(static_cast<const float*>(table.data));
    case WeightType::kF16:
      return launch(static_cast<const __half*>(table.data));
    case WeightType::kBF16:
      return launch(static_cast<const __nv_bfloat16*>(table.data));
    case WeightType::kScaledInt8:
      return launch(static_cast<const int8_t*>(table.data));
  }
}

void rms_norm(const float* x, const int32_t* rows, const float* weight, float* out, int32_t n_rows,
              int32_t n, float eps, cudaStream_t stream) {
  if (n_rows > 0)
    launch_dependent(rms_norm_kernel, n_rows, 256, stream, x, rows, weight, out, n, eps);
}

void norm_add(const float* p, const float* weight, float* x, int32_t n_tokens, int32_t n, float eps,
              cudaStream_t stream) {
  if (n_tokens > 0) launch_dependent(norm_add_kernel, n_tokens, 256, stream, p, weight, x, n, eps);
}

void soft_cap(float* x, int64_t n, float cap, cudaStream_t stream) {
  if (cap <= 0 || n == 0) return;
  launch_dependent(soft_cap_kernel, static_cast<unsigned>((n + 255) / 256), 256, stream, x, n, cap);
}

void matmul(const DeviceMatrix& w, const float* x, int32_t n_rows, float* y, bool accumulate,
            cudaStream_t stream, NormIn norm) {
  if (n_rows == 0) return;
  if (mma_matmul_fits(w)) return mma_matmul(w, x, n_rows, y, accumulate, norm, stream);
  switch (w.type) {
    case WeightType::kF32:
      return launch_matmul<float>(w, x, n_rows, y, accumulate, norm, stream);
    case WeightType::kF16:
      return launch_matmul<__half>(w, x, n_rows, y, accumulate, norm, stream);
    case WeightType::kBF16:
      return launch_matmul<__nv_bfloat16>(w, x, n_rows, y, accumulate, norm, stream);
    case WeightType::kScaledInt8:  // always fits the tensor cores (rows of whole blocks)
      break;
  }
}

void gated_matmul(const DeviceMatrix& w, const float* x, int32_t n_rows, int32_t ff, Activation act,
                  float* out, cudaStream_t stream, NormIn norm) {
  if (n_rows == 0) return;
  if (mma_matmul_fits(w)) return mma_gated_matmul(w, x, n_rows, ff, act, out, norm, stream);
  switch (w.type) {
    case WeightType::kF32:
      return launch_gated<float>(w, x, n_rows, ff, act, out, norm, stream);
    case WeightType::kF16:
      return launch_gated<__half>(w, x, n_rows, ff, act, out, norm, stream);
    case WeightType::kBF16:
      return launch_gated<__nv_bfloat16>(w, x, n_rows, ff, act, out, norm, stream);
    case WeightType::kScaledInt8:
      break;
  }
}

}  // namespace tandem::cuda
