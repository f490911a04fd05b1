// The attention half of the forward pass on the GPU: q/k norms, RoPE and the KV cache
// writes (qk_rope_store), attention over the paged cache (attention) and the block copy
// that n choices use (copy_kv_slots). See forward_kernels.h for the contract.
#include <algorithm>

#include "runner/cuda/dependent_launch.cuh"
#include "runner/cuda/device_helpers.cuh"
#include "runner/cuda/forward_kernels.h"

namespace tandem::cuda {
namespace {

constexpr int kKeyTile = 128;  // keys per step of the online softmax; also the block size

// The cache slot of key j of a token's sequence.
__device__ inline int64_t slot_of(const int32_t* table, int32_t j, int32_t block_size) {
  return static_cast<int64_t>(table[j / block_size]) * block_size + j % block_size;
}

// One block per token. Before the wait (dependent_launch.cuh): the token's cache slot and
// its RoPE rotations (each lane's pairs i = lane + 32u; n_rot <= head_dim <= 256, so u < 4).
// Then bias (the whole row), then a warp per head: the head's RMSNorm (q_norm for q heads,
// k_norm for k heads) and RoPE; then K and V are stored.
template <typename KT>
__global__ void qk_rope_store_kernel(float* qkv, QkvParams p, TokenMeta meta, KvView kv,
                                     int32_t layer) {
  dependents_may_launch();
  const int32_t hd = p.head_dim, q_dim = p.n_head * hd, kv_dim = p.n_head_kv * hd;
  const int32_t width = q_dim + 2 * kv_dim;
  const int32_t pos = meta.position[blockIdx.x];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, n_warps = blockDim.x / 32;
  const int32_t half = p.n_rot / 2;
  float cosine[4], sine[4];
#pragma unroll
  for (int u = 0; u < 4; ++u) {
    const int32_t i = lane + 32 * u;
    const double angle = i < half ? static_cast<double>(pos) * p.frequencies[i] : 0.0;
    cosine[u] = static_cast<float>(cos(angle) * p.attn_factor);
    sine[u] = static_cast<float>(sin(angle) * p.attn_factor);
  }
  const int32_t* table = meta.tables + meta.table_start[blockIdx.x];
  const int64_t at = slot_of(table, pos, kv.block_size) * kv_dim;
  wait_for_previous_kernels();

  float* row = qkv + static_cast<int64_t>(blockIdx.x) * width;
  if (p.bias)
    for (int32_t i = threadIdx.x; i < width; i += blockDim.x) row[i] += p.bias[i];
  __syncthreads();
  for (int32_t h = warp; h < p.n_head + p.n_head_kv; h += n_warps) {
    float* head = row + static_cast<int64_t>(h) * hd;
    const float* norm = h < p.n_head ? p.q_norm : p.k_norm;
    if (norm) {
      double ss = 0;
      for (int32_t d = lane; d < hd; d += 32) ss += static_cast<double>(head[d]) * head[d];
      ss = warp_sum(ss);
      const float scale = static_cast<float>(1.0 / sqrt(ss / hd + p.eps));
      __syncwarp();
      for (int32_t d = lane; d < hd; d += 32) head[d] = head[d] * scale * norm[d];
      __syncwarp();
    }
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const int32_t i = lane + 32 * u;
      if (i >= half) break;
      const int32_t a = p.neox ? i : 2 * i, b = p.neox ? i + half : 2 * i + 1;
      const float x0 = head[a], x1 = head[b];
      head[a] = x0 * cosine[u] - x1 * sine[u];
      head[b] = x0 * sine[u] + x1 * cosine[u];
    }
    __syncwarp();
  }
  __syncthreads();
  KT* k = reinterpret_cast<KT*>(kv.k(layer)) + at;
  KT* v = reinterpret_cast<KT*>(kv.v(layer)) + at;
  for (int32_t i = threadIdx.x; i < kv_dim; i += blockDim.x) {
    narrow(row[q_dim + i], k + i);
    narrow(row[q_dim + kv_dim + i], v + i);
  }
}

// q . K[j] in head-dimension order; vector: 8 elements per load (16-byte aligned rows).
template <typename KT>
__device__ inline float score_dot(const float* q, const KT* k, int32_t hd, bool vector) {
  float dot = 0;
  int32_t d = 0;
  if (vector) {
    for (; d + 8 <= hd; d += 8) {
      float kv[8];
      load8(k + d, kv);
#pragma unroll
      for (int u = 0; u < 8; ++u) dot = fmaf(q[d + u], kv[u], dot);
    }
  }
  for (; d < hd; ++d) dot = fmaf(q[d], widen(k[d]), dot);
  return dot;
}

// a * correction + sum over the tile's keys of prob[jj] * V[jj][d], in key order; the loads
// of kUnroll keys are issued before their products, so a thread has that many in flight.
template <typename KT>
__device__ inline float accumulate_values(float a, const float* prob, const int64_t* offset,
                                          const KT* values, int32_t d, int32_t count) {
  constexpr int kUnroll = 16;
  int32_t jj = 0;
  for (; jj + kUnroll <= count; jj += kUnroll) {
    float v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) v[u] = widen(values[offset[jj + u] + d]);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) a = fmaf(prob[jj + u], v[u], a);
  }
  for (; jj < count; ++jj) a = fmaf(prob[jj], widen(values[offset[jj] + d]), a);
  return a;
}

// The vector path's value sums: the tile's value rows are read 16 bytes per thread, a row
// by hd / 8 threads, so `groups` rows at once; group q sums keys q, q + groups, ... of each
// tile for its 8 dimensions, and the groups are added in group order at the end. The split
// depends on the head size alone, never on the batch.
struct ValueSplit {
  int32_t per_row, groups, group, part;
  __device__ explicit ValueSplit(int32_t hd)
      : per_row(hd / 8),
        groups(kKeyTile / per_row),
        group(threadIdx.x / per_row),
        part(threadIdx.x % per_row) {}
  __device__ bool active() const { return group < groups; }
};

template <typename KT>
__device__ inline void accumulate_value_rows(float acc[8], const ValueSplit& split,
                                             const float* prob, const int64_t* offset,
                                             const KT* values, int32_t count) {
#pragma unroll 8
  for (int32_t jj = split.group; jj < count; jj += split.groups) {
    float v[8];
    load8(values + offset[jj] + split.part * 8, v);
    const float pj = prob[jj];
#pragma unroll
    for (int u = 0; u < 8; ++u) acc[u] = fmaf(pj, v[u], acc[u]);
  }
}

// One block per (token, head), kKeyTile threads: thread j scores key tile + j, the tile's
// softmax is folded into the running max and sum (online softmax), and the values are
// summed by ValueSplit's groups (vector rows) or by thread d for dimension d (and
// d + kKeyTile) in key order. Every reduction has a fixed shape, so a token's output does
// not depend on the batch.
template <typename KT>
__global__ void attention_kernel(const float* qkv, AttentionParams p, TokenMeta meta, KvView kv,
                                 int32_t layer, float* out) {
  __shared__ float q[256];
  __shared__ float prob[kKeyTile];
  __shared__ int64_t offset[kKeyTile];  // the tile's keys' cache rows, in elements
  __shared__ float scratch[32];
  __shared__ float combine[kKeyTile * 8];  // the value groups' sums, [group][hd]
  dependents_may_launch();
  const int32_t t = blockIdx.x, h = blockIdx.y, hd = p.head_dim;
  const int32_t q_dim = p.n_head * hd, kv_dim = p.n_head_kv * hd;
  const int32_t kv_head = h / (p.n_head / p.n_head_kv);
  const bool vector = hd % 8 == 0 && kv_dim % 8 == 0;
  const int32_t end = meta.position[t] + 1;
  const int32_t begin = p.window > 0 ? max(0, end - p.window) : 0;
  const int32_t* table = meta.tables + meta.table_start[t];
  const KT* keys = reinterpret_cast<const KT*>(kv.k(layer)) + kv_head * hd;
  const KT* values = reinterpret_cast<const KT*>(kv.v(layer)) + kv_head * hd;
  const ValueSplit split(vector ? hd : 8);
  wait_for_previous_kernels();  // q and this token's K/V come from the kernels before
  const float* qrow = qkv + static_cast<int64_t>(t) * (q_dim + 2 * kv_dim) + h * hd;
  for (int32_t d = threadIdx.x; d < hd; d += blockDim.x) q[d] = qrow[d];
  __syncthreads();

  float running_max = -INFINITY, sum = 0, acc[8] = {};
  for (int32_t tile = begin; tile < end; tile += kKeyTile) {
    const int32_t j = tile + threadIdx.x;
    float score = -INFINITY;
    if (j < end) {
      const int64_t at = slot_of(table, j, kv.block_size) * kv_dim;
      offset[threadIdx.x] = at;
      score = score_dot(q, keys + at, hd, vector) * p.scale;
      if (p.softcap > 0) score = p.softcap * tanhf(score / p.softcap);
    }
    const float new_max = fmaxf(running_max, block_max(score, scratch));
    const float correction = expf(running_max - new_max);
    const float weight = j < end ? expf(score - new_max) : 0.0f;
    prob[threadIdx.x] = weight;
    sum = sum * correction + block_sum(weight, scratch);  // syncs: prob is visible
    const int32_t count = min(kKeyTile, end - tile);
    if (vector) {
#pragma unroll
      for (int u = 0; u < 8; ++u) acc[u] *= correction;
      if (split.active()) accumulate_value_rows(acc, split, prob, offset, values, count);
    } else {
#pragma unroll
      for (int c = 0; c < 2; ++c) {
        const int32_t d = threadIdx.x + c * kKeyTile;
        if (d < hd) acc[c] = accumulate_values(acc[c] * correction, prob, offset, values, d, count);
      }
    }
    running_max = new_max;
    __syncthreads();  // prob and offset are rewritten by the next tile
  }
  float* o = out + static_cast<int64_t>(t) * q_dim + h * hd;
  if (vector) {
    if (split.active())
#pragma unroll
      for (int u = 0; u < 8; ++u) combine[split.group * hd + split.part * 8 + u] = acc[u];
    __syncthreads();
    for (int32_t d = threadIdx.x; d < hd; d += blockDim.x) {
      float total = 0;
      for (int32_t g = 0; g < split.groups; ++g) total += combine[g * hd + d];
      o[d] = total / sum;
    }
    return;
  }
#pragma unroll
  for (int c = 0; c < 2; ++c) {
    const int32_t d = threadIdx.x + c * kKeyTile;
    if (d < hd) o[d] = acc[c] / sum;
  }
}

__global__ void copy_slots_kernel(KvView kv, int32_t from, int32_t to, int32_t slots) {
  const int32_t layer = blockIdx.x / 2;
  char* pool = blockIdx.x % 2 == 0 ? kv.k(layer) : kv.v(layer);
  const size_t block_bytes = static_cast<size_t>(kv.block_size) * kv.kv_dim * kv.element_bytes();
  const size_t bytes = static_cast<size_t>(slots) * kv.kv_dim * kv.element_bytes();
  const char* src = pool + block_bytes * from;
  char* dst = pool + block_bytes * to;
  for (size_t i = threadIdx.x; i < bytes; i += blockDim.x) dst[i] = src[i];
}

}  // namespace

void qk_rope_store(float* qkv, const QkvParams& p, const TokenMeta& meta, const KvView& kv,
                   int32_t layer, int32_t n_tokens, cudaStream_t stream) {
  if (n_tokens == 0) return;
  // A warp per head, so the heads' norms and rotations run side by side, not in turns.
  const int threads = 32 * std::clamp(p.n_head + p.n_head_kv, 4, 32);
  switch (kv.element) {
    case KvElement::kF32:
      return launch_dependent(qk_rope_store_kernel<float>, n_tokens, threads, stream, qkv, p, meta,
                              kv, layer);
    case KvElement::kF16:
      return launch_dependent(qk_rope_store_kernel<__half>, n_tokens, threads, stream, qkv, p, meta,
                              kv, layer);
    case KvElement::kBF16:
      return launch_dependent(qk_rope_store_kernel<__nv_bfloat16>, n_tokens, threads, stream, qkv,
                              p, meta, kv, layer);
  }
}

void attention(const float* qkv, const AttentionParams& p, const TokenMeta& meta, const KvView& kv,
               int32_t layer, float* out, int32_t n_tokens, cudaStream_t stream) {
  if (n_tokens == 0) return;
  const dim3 grid(n_tokens, p.n_head);
  switch (kv.element) {
    case KvElement::kF32:
      return launch_dependent(attention_kernel<float>, grid, kKeyTile, stream, qkv, p, meta, kv,
                              layer, out);
    case KvElement::kF16:
      return launch_dependent(attention_kernel<__half>, grid, kKeyTile, stream, qkv, p, meta, kv,
                              layer, out);
    case KvElement::kBF16:
      return launch_dependent(attention_kernel<__nv_bfloat16>, grid, kKeyTile, stream, qkv, p, meta,
                              kv, layer, out);
  }
}

void copy_kv_slots(const KvView& kv, int32_t n_layer, int32_t from, int32_t to, int32_t slots,
                   cudaStream_t stream) {
  if (slots <= 0 || from < 0 || to < 0) return;
  copy_slots_kernel<<<2 * n_layer, 256, 0, stream>>>(kv, from, to, slots);
}

}  // namespace tandem::cuda
