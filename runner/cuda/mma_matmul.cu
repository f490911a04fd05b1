// Tensor-core matmuls (mma_matmul.h): mma.sync m16n8k8 on TF32 operands.
//
// A block computes 16 output rows (a gated block: 16 gate rows and their 16 up rows) for up
// to 16 tokens. The weights are the mma's A operand (16 rows x 8 K), the tokens its B operand
// (8 K x 8 tokens). Which K positions one mma step covers is free as long as A and B agree,
// so each lane loads 8 consecutive elements (16 bytes of a weight row, 32 of a token's
// activations) and mma step s of a 32-wide chunk takes elements 2s and 2s + 1 of every
// lane's eight: the loads stay wide and coalesced and nothing is shuffled.
#include <cstdint>
#include <type_traits>

#include "runner/cuda/dependent_launch.cuh"
#include "runner/cuda/device_helpers.cuh"
#include "runner/cuda/mma_matmul.h"

namespace tandem::cuda {
namespace {

constexpr int kRows = 16;   // output rows per block: one m16 tile
constexpr int kChunk = 32;  // K elements per chunk: 4 lanes x 8 per row

// kWarps: the K split (warp w takes chunks w, w + kWarps, ...); kTiles: token tiles of 8
// per block.
template <int W, int Ti>
struct Shape {
  static constexpr int kWarps = W, kThreads = 32 * W, kTiles = Ti, kTokens = 8 * Ti;
};

__device__ inline uint32_t tf32_bits(float v) {
  uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(v));
  return r;
}

// d += A B, A a 16x8 TF32 fragment (a0: row g k t, a1: row g+8 k t, a2: row g k t+4,
// a3: row g+8 k t+4; g = lane / 4, t = lane % 4), B 8x8 (b0: k t token g, b1: k t+4 token g).
__device__ inline void mma_tf32(float d[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                uint32_t b0, uint32_t b1) {
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

__device__ inline void prefetch_l2(const void* p) {
  asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
}

struct MmaArgs {
  const void* w;
  const float* x;
  int32_t n_tokens, n_in;
  int32_t n_out;     // output rows (gated: ff, the gate rows; the up rows follow them)
  int32_t y_stride;  // floats per token row of y
  float* y;
  bool accumulate;
  Activation act;
  NormIn norm;
  const float* scales;  // kScaledInt8 weights' scales, else null
};

// Eight int8 weights (8 bytes, aligned: rows hold whole 32-element blocks) as floats.
__device__ inline void load8_int8(const int8_t* p, float out[8]) {
  const uint2 raw = *reinterpret_cast<const uint2*>(p);
  const auto* q = reinterpret_cast<const int8_t*>(&raw);
#pragma unroll
  for (int j = 0; j < 8; ++j) out[j] = static_cast<float>(q[j]);
}

// One lane's view of a block: its two weight rows per A tile, its token of each tile.
template <typename T, int kA, int kTiles>
struct Lane {
  const T* row[kA][2];
  const float* scale_row[kA][2];  // int8 weights: the rows' scales, one per chunk
  bool row_ok[2];
  const float* token[kTiles];
  bool token_ok[kTiles];
};

// One 32-wide chunk at K offset k (this lane's 8 elements start there): acc[a][tile] +=
// W_a[rows] x[tile tokens]; squares[tile] += x^2 (kNorm: x is multiplied by the norm's
// weight before it meets W, and the token's RMS scale is applied at the end). Int8 weights
// (T = int8_t) meet x as the integers they are, exact in TF32; the chunk is one block, so
// its sum is multiplied by the row's block scale before it joins acc.
template <typename T, int kA, bool kNorm, int kTiles>
__device__ inline void chunk_step(const Lane<T, kA, kTiles>& lane, int32_t k, bool in, int tiles,
                                  const float* norm, float acc[kA][kTiles][4],
                                  float squares[kTiles]) {
  constexpr bool kInt8 = std::is_same_v<T, int8_t>;
  float w[kA][2][8];
  float block_scale[kA][2] = {};
  if constexpr (kInt8)
#pragma unroll
    for (int a = 0; a < kA; ++a)
#pragma unroll
      for (int h = 0; h < 2; ++h)
        if (in && lane.row_ok[h]) block_scale[a][h] = lane.scale_row[a][h][k / kChunk];
#pragma unroll
  for (int a = 0; a < kA; ++a)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      if (in && lane.row_ok[h]) {
        if constexpr (kInt8)
          load8_int8(lane.row[a][h] + k, w[a][h]);
        else
          load8(lane.row[a][h] + k, w[a][h]);
      } else {
#pragma unroll
        for (int j = 0; j < 8; ++j) w[a][h][j] = 0;
      }
    }
  float nv[8];
  if constexpr (kNorm) {
    if (in) {
      load8(norm + k, nv);
    } else {
#pragma unroll
      for (int j = 0; j < 8; ++j) nv[j] = 0;
    }
  }
#pragma unroll
  for (int tile = 0; tile < kTiles; ++tile) {
    if (tile >= tiles) break;
    float xv[8] = {};
    if (in && lane.token_ok[tile]) load8(lane.token[tile] + k, xv);
    uint32_t b[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      if constexpr (kNorm) {
        squares[tile] = fmaf(xv[j], xv[j], squares[tile]);
        xv[j] *= nv[j];
      }
      b[j] = tf32_bits(xv[j]);
    }
    float block[kA][4] = {};
#pragma unroll
    for (int s = 0; s < 4; ++s)
#pragma unroll
      for (int a = 0; a < kA; ++a)
        mma_tf32(kInt8 ? block[a] : acc[a][tile], __float_as_uint(w[a][0][2 * s]),
                 __float_as_uint(w[a][1][2 * s]), __float_as_uint(w[a][0][2 * s + 1]),
                 __float_as_uint(w[a][1][2 * s + 1]), b[2 * s], b[2 * s + 1]);
    if constexpr (kInt8)
#pragma unroll
      for (int a = 0; a < kA; ++a)
#pragma unroll
        for (int r = 0; r < 4; ++r)  // r < 2: row g, else row g + 8
          acc[a][tile][r] = fmaf(block_scale[a][r / 2], block[a][r], acc[a][tile][r]);
  }
}

// kA = 1: y = W xn (+ y); kA = 2: y = act(W_gate xn) * (W_up xn). xn = x, or with kNorm
// x / rms(x) * norm.
template <typename T, int kA, bool kNorm, typename S>
__global__ void __launch_bounds__(S::kThreads) mma_matmul_kernel(MmaArgs p) {
  constexpr int kWarps = S::kWarps, kThreads = S::kThreads, kTiles = S::kTiles;
  constexpr int kTokens = S::kTokens;
  __shared__ float part[kWarps][kA][kTiles][4][32];  // each warp's accumulators
  __shared__ float part_squares[kWarps][kTokens];
  __shared__ float scale[kTokens];
  dependents_may_launch();
  const int lane_id = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int g = lane_id / 4, t = lane_id % 4;
  const int32_t o0 = blockIdx.x * kRows, m0 = blockIdx.y * kTokens;
  const int32_t count = min(kTokens, p.n_tokens - m0);
  const int tiles = (count + 7) / 8;

  Lane<T, kA, kTiles> lane;
  const T* w = static_cast<const T*>(p.w);
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int32_t o = o0 + g + 8 * h;
    lane.row_ok[h] = o < p.n_out;
#pragma unroll
    for (int a = 0; a < kA; ++a) {
      const int64_t r = static_cast<int64_t>(a) * p.n_out + (lane.row_ok[h] ? o : 0);
      lane.row[a][h] = w + r * p.n_in;
      lane.scale_row[a][h] = p.scales ? p.scales + r * (p.n_in / kChunk) : nullptr;
    }
  }
#pragma unroll
  for (int tile = 0; tile < kTiles; ++tile) {
    const int32_t m = tile * 8 + g;
    lane.token_ok[tile] = m < count;
    lane.token[tile] = p.x + static_cast<int64_t>(m0 + (m < count ? m : 0)) * p.n_in;
  }

  // While the kernel before this one finishes: this warp's weights into L2 (no kernel
  // writes them), so the loop's loads find them there.
  const int32_t n_chunks = (p.n_in + kChunk - 1) / kChunk;
  for (int32_t c = warp; c < n_chunks; c += kWarps) {
    const int32_t k = c * kChunk + t * 8;
#pragma unroll
    for (int a = 0; a < kA; ++a)
#pragma unroll
      for (int h = 0; h < 2; ++h)
        if (k < p.n_in && lane.row_ok[h]) prefetch_l2(lane.row[a][h] + k);
  }
  wait_for_previous_kernels();

  float acc[kA][kTiles][4] = {};
  float squares[kTiles] = {};
#pragma unroll 2
  for (int32_t c = warp; c < n_chunks; c += kWarps) {
    const int32_t k = c * kChunk + t * 8;  // n_in % 8 == 0: a lane's 8 are all in or all out
    chunk_step<T, kA, kNorm, kTiles>(lane, k, k < p.n_in, tiles, p.norm.weight, acc, squares);
  }

#pragma unroll
  for (int a = 0; a < kA; ++a)
#pragma unroll
    for (int tile = 0; tile < kTiles; ++tile)
#pragma unroll
      for (int r = 0; r < 4; ++r) part[warp][a][tile][r][lane_id] = acc[a][tile][r];
  if constexpr (kNorm) {
#pragma unroll
    for (int tile = 0; tile < kTiles; ++tile) {
      float s = squares[tile];  // token tile * 8 + g: its lanes t = 0..3, in a fixed tree
      s += __shfl_xor_sync(kFullMask, s, 1);
      s += __shfl_xor_sync(kFullMask, s, 2);
      if (t == 0) part_squares[warp][tile * 8 + g] = s;
    }
  }
  __syncthreads();
  if (kNorm && threadIdx.x < kTokens) {
    float s = 0;
    for (int v = 0; v < kWarps; ++v) s += part_squares[v][threadIdx.x];
    scale[threadIdx.x] = 1.0f / sqrtf(s / static_cast<float>(p.n_in) + p.norm.eps);
  }
  if constexpr (kNorm) __syncthreads();

  // The epilogue: element e is (tile, r, lane) of the accumulators, its sum over the warps
  // in warp order.
  for (int e = threadIdx.x; e < kTiles * 4 * 32; e += kThreads) {
    const int tile = e / 128, r = (e / 32) % 4, l = e % 32;
    const int32_t o = o0 + l / 4 + 8 * (r / 2), m = tile * 8 + 2 * (l % 4) + r % 2;
    if (o >= p.n_out || m >= count) continue;
    float v[kA];
#pragma unroll
    for (int a = 0; a < kA; ++a) {
      v[a] = 0;
      for (int u = 0; u < kWarps; ++u) v[a] += part[u][a][tile][r][l];
      if constexpr (kNorm) v[a] *= scale[m];
    }
    float* out = p.y + static_cast<int64_t>(m0 + m) * p.y_stride + o;
    if constexpr (kA == 2)
      *out = activate(v[0], p.act) * v[1];
    else
      *out = p.accumulate ? *out + v[0] : v[0];
  }
}

template <typename T, int kA, typename S>
void launch_shape(const MmaArgs& args, cudaStream_t stream) {
  const dim3 grid((args.n_out + kRows - 1) / kRows, (args.n_tokens + S::kTokens - 1) / S::kTokens);
  if (args.norm.weight)
    launch_dependent(mma_matmul_kernel<T, kA, true, S>, grid, S::kThreads, stream, args);
  else
    launch_dependent(mma_matmul_kernel<T, kA, false, S>, grid, S::kThreads, stream, args);
}

// The block shape, by the matrix alone (law 2): 16 tokens a block, and 16 warps to split
// long rows (n_in >= 1024, FFN down's) where 8 would each walk 6 chunks or more. Measured
// on the H200 against 8 x 32, 8 x 16, 16 x 16 everywhere, 4 x 16 and 16 x 8 (docs/gpu.md).
template <typename T, int kA>
void launch(const MmaArgs& args, cudaStream_t stream) {
  if (args.n_in >= 1024) return launch_shape<T, kA, Shape<16, 2>>(args, stream);
  launch_shape<T, kA, Shape<8, 2>>(args, stream);
}

template <int kA>
void launch_typed(const DeviceMatrix& w, const MmaArgs& args, cudaStream_t stream) {
  if (w.type == WeightType::kF16)
    launch<__half, kA>(args, stream);
  else if (w.type == WeightType::kBF16)
    launch<__nv_bfloat16, kA>(args, stream);
  else
    launch<int8_t, kA>(args, stream);
}

}  // namespace

bool mma_matmul_fits(const DeviceMatrix& w) {
  if (w.type == WeightType::kScaledInt8) return w.n_in % kChunk == 0 && w.n_in > 0 && w.scales;
  return (w.type == WeightType::kF16 || w.type == WeightType::kBF16) && w.n_in % 8 == 0 &&
         w.n_in > 0;
}

void mma_matmul(const DeviceMatrix& w, const float* x, int32_t n_rows, float* y, bool accumulate,
                const NormIn& norm, cudaStream_t stream) {
  if (n_rows == 0) return;
  const auto n_out = static_cast<int32_t>(w.n_out);
  const MmaArgs args{w.data,
                     x,
                     n_rows,
                     static_cast<int32_t>(w.n_in),
                     n_out,
                     n_out,
                     y,
                     accumulate,
                     Activation::kSilu,
                     norm,
                     w.scales};
  launch_typed<1>(w, args, stream);
}

void mma_gated_matmul(const DeviceMatrix& w, const float* x, int32_t n_rows, int32_t ff,
                      Activation act, float* out, const NormIn& norm, cudaStream_t stream) {
  if (n_rows == 0) return;
  const MmaArgs args{w.data, x,    n_rows,  static_cast<int32_t>(w.n_in), ff, ff, out, false,
                     act,    norm, w.scales};
  launch_typed<2>(w, args, stream);
}

}  // namespace tandem::cuda
