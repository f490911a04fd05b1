// The forward pass's kernels on the GPU (forward_kernels.cu), launched by CudaExecutor.
// Activations are F32; weights stay in their stored type (F32, F16 or BF16; Q8_0, Q5_0,
// Q4_0 and IQ4_NL as int8 with a scale per 32; other GGUF types are widened to F32 at
// upload), products accumulate in F32. F16, BF16 and scaled int8 matrices run on the tensor
// cores (mma_matmul.h: TF32 activations, 16-row blocks whose warps split
// K); F32 matrices on F32 FMAs, one warp per output row and token tile. Every kernel of a
// step but the first starts while the one before it finishes (dependent_launch.cuh).
//
// The law every kernel keeps (DESIGN.md, law 2): a token's result depends only on its own
// inputs, never on the batch. Matmuls give each (token, output) one dot product in a fixed
// order whatever the number of tokens; norms, RoPE and attention work per token with
// fixed-shape block reductions.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace tandem::cuda {

// kScaledInt8: W = q * d with q int8 and d one F32 scale per 32 elements of a row, the
// form the GGUF types Q8_0, Q5_0, Q4_0 and IQ4_NL take when repacked (exactly: each of
// their blocks is an F16 scale times small integers).
enum class WeightType : int32_t { kF32 = 0, kF16 = 1, kBF16 = 2, kScaledInt8 = 3 };

// A matrix W[n_out][n_in] in device memory, rows contiguous.
struct DeviceMatrix {
  WeightType type = WeightType::kF32;
  const void* data = nullptr;
  int64_t n_out = 0;
  int64_t n_in = 0;
  const float* scales = nullptr;  // kScaledInt8: [n_out][n_in / 32]
};

enum class KvElement : int32_t { kF32 = 0, kF16 = 1, kBF16 = 2 };

// What a kernel needs to find a token's row, position and block table; device pointers
// into the step's metadata (cuda_executor.cu uploads it once per step).
struct TokenMeta {
  const int32_t* token;        // [n_tokens] input ids
  const int32_t* position;     // [n_tokens]
  const int32_t* table_start;  // [n_tokens] offset of the token's block table in `tables`
  const int32_t* tables;       // block ids
};

// The paged KV cache: per layer, K then V, each [block][slot][kv_dim] of `element`.
struct KvView {
  void* base = nullptr;
  KvElement element = KvElement::kF16;
  int32_t block_size = 16;
  int32_t kv_dim = 0;
  int64_t n_blocks = 0;
  __host__ __device__ size_t element_bytes() const { return element == KvElement::kF32 ? 4 : 2; }
  __host__ __device__ size_t pool_bytes() const {  // one layer's K (or V)
    return static_cast<size_t>(n_blocks) * block_size * kv_dim * element_bytes();
  }
  __host__ __device__ char* k(int32_t layer) const {
    return static_cast<char*>(base) + 2 * layer * pool_bytes();
  }
  __host__ __device__ char* v(int32_t layer) const { return k(layer) + pool_bytes(); }
};

// Whether the step's kernels start with programmatic dependent launch (dependent_launch.cuh:
// each may begin while the one before it finishes). On by default; the benchmarks turn it
// off to measure what it gives. Read when a kernel is launched or a graph captured.
void set_dependent_launch(bool on);

// x[t] = embedding row token[t] * scale.
void embed(const DeviceMatrix& table, const int32_t* token, float scale, float* x, int32_t n_tokens,
           cudaStream_t stream);

// out[t] = x[t] / rms(x[t]) * weight, for each of n_tokens rows of n (in may be out).
// rows: when not null, out row r reads x row rows[r] (the logit rows' gather).
void rms_norm(const float* x, const int32_t* rows, const float* weight, float* out, int32_t n_rows,
              int32_t n, float eps, cudaStream_t stream);

// An RMSNorm fused into a matmul's input: x[m] / rms(x[m]) * weight, computed per token
// inside the matmul (one launch and one activation round trip less). weight null: none.
struct NormIn {
  const float* weight = nullptr;
  float eps = 0;
};

// y[m][o] (=, or += with accumulate) sum_i xn[m][i] W[o][i], xn = x or its norm.
void matmul(const DeviceMatrix& w, const float* x, int32_t n_rows, float* y, bool accumulate,
            cudaStream_t stream, NormIn norm = {});

enum class Activation : int32_t { kSilu = 0, kGeluTanh = 1 };
// out[m][o] = act(sum_i x W[o]) * (sum_i x W[ff + o]) for o < ff: the FFN's gate and up in one
// pass (W holds [gate; up], 2 * ff rows).
void gated_matmul(const DeviceMatrix& w, const float* x, int32_t n_rows, int32_t ff, Activation act,
                  float* out, cudaStream_t stream, NormIn norm = {});

// Per token: qkv bias, per-head q/k RMSNorm, RoPE, then K and V into the token's cache slot.
struct QkvParams {
  int32_t n_head, n_head_kv, head_dim, n_rot;
  bool neox;                  // RoPE pairs (i, i + n_rot/2) rather than (2i, 2i + 1)
  const double* frequencies;  // [n_rot / 2], radians per position
  double attn_factor;         // scales cos and sin
  const float* bias;          // [q + 2 kv] or null
  const float* q_norm;        // [head_dim] or null
  const float* k_norm;        // [head_dim] or null
  float eps;
};
void qk_rope_store(float* qkv, const QkvParams& p, const TokenMeta& meta, const KvView& kv,
                   int32_t layer, int32_t n_tokens, cudaStream_t stream);

// out[t][h] = softmax(scale * q.K) V over keys [begin, position] of the token's sequence,
// begin = position - window + 1 with a window (0: none); soft-capped scores with softcap > 0.
struct AttentionParams {
  int32_t n_head, n_head_kv, head_dim;
  float scale, softcap;
  int32_t window;
};
void attention(const float* qkv, const AttentionParams& p, const TokenMeta& meta, const KvView& kv,
               int32_t layer, float* out, int32_t n_tokens, cudaStream_t stream);

// x[t] += rms_norm(p[t]) * weight (gemma's post-norms).
void norm_add(const float* p, const float* weight, float* x, int32_t n_tokens, int32_t n, float eps,
              cudaStream_t stream);

// x = cap * tanh(x / cap), n elements.
void soft_cap(float* x, int64_t n, float cap, cudaStream_t stream);

// Copies the first `slots` slots of block `from` into block `to`, every layer, K and V.
void copy_kv_slots(const KvView& kv, int32_t n_layer, int32_t from, int32_t to, int32_t slots,
                   cudaStream_t stream);

}  // namespace tandem::cuda
