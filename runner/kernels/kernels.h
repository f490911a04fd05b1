// Compute kernels for the CPU forward pass, chosen at run time for the CPU at hand
// (AVX-512 with AVX512-BF16 where present, AVX2+FMA+F16C otherwise).
//
// The contract that the scheduler's laws rest on: a row's result is bit-identical
// whatever else is in the batch (n_rows, the other rows' values) and whatever the
// thread count. Kernels therefore split work over output features only and always
// reduce a row's dot products in the same order with the same instruction sequence.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "runner/gguf/gguf.h"
#include "runner/kernels/ceilings.h"
#include "runner/util/thread_pool.h"

namespace tandem::kernels {

// kAmx: AVX512-BF16 with the BF16 matmuls on AMX tiles (Sapphire Rapids and later).
enum class Isa { kAvx2, kAvx512, kAvx512Bf16, kAmx };
// The ISA the kernels run: the CPU's (hardware_isa), except that where vdpbf16ps is slower
// than the F32 FMAs (bf16_dot_outruns_fma) BF16 weights are widened to F32 (kAvx512).
// Cached; TANDEM_ISA=avx2|avx512|avx512bf16|amx names one instead (at most the CPU's).
Isa detected_isa();
Isa hardware_isa();  // the highest level this CPU (and OS, for AMX's tile state) can run
// Whether AVX512-BF16's vdpbf16ps (32 products an instruction) outruns two ports of F32 FMAs
// (16 each): on AMD's Zen 4 and 5 it runs at twice their rate (docs/performance.md: 757
// against 410 GFLOP/s); on Intel's Xeons it issues at half of it (168 against 338 GFLOP/s on
// a 2-vCPU Sapphire Rapids-class guest without AMX), so there F32 FMAs on widened BF16 win.
bool bf16_dot_outruns_fma();
// detected_isa's choice, given the CPU's level, bf16_dot_outruns_fma and TANDEM_ISA (null or
// empty: unset); an unknown name is reported on stderr and ignored.
Isa choose_isa(Isa hardware, bool bf16_dot_faster, const char* env);
const char* isa_name(Isa isa);
// Whether the quantized matmuls run their AVX-512 VNNI form (else the AVX2 one), under
// detected_isa(); the int8 ceiling measures the same form (ceilings.h).
bool quant_uses_vnni();
// Whether batches of 16 rows or more on interleaved quantized weights run on AMX-INT8 tiles:
// under Isa::kAmx, where the CPU has AMX-INT8 (amx/quant_matmul.cpp).
bool quant_uses_amx();
// Test hook, not for production code: makes the kernels (and detected_isa) use `isa`
// from now on. Returns false, changing nothing, if this CPU cannot run it.
// PackedWeights do not depend on the ISA, so weights packed before remain valid.
bool set_isa_for_testing(Isa isa);

// One source matrix W[n_out][n_in] in GGUF layout (row o is n_in contiguous elements).
struct WeightSource {
  gguf::TensorType type = gguf::TensorType::kF32;
  const void* data = nullptr;
  int64_t n_out = 0;
  int64_t n_in = 0;
};

// Weights repacked once at load into the layout this CPU's kernels stream fastest.
// Several sources with the same n_in may be packed into one matrix (their outputs
// concatenated in order), so Q/K/V or gate/up run as a single matmul. Sources of
// different types (llama-quantize's mixes give some layers' attn_v its own type) are
// packed a run of one type at a time, each in its own form, and multiplied one after
// another.
// Precision: F32 and F16 weights multiply F32 activations exactly as F32 FMAs would (F16
// is widened in registers). BF16 weights may round activations to BF16 and use the CPU's
// BF16 dot products (AVX512-BF16), accumulating in F32. Q4_0/1, Q5_0/1, Q8_0, Q2_K-Q6_K,
// IQ4_NL and IQ4_XS stay in their GGUF blocks and multiply activations quantized per row
// as llama.cpp quantizes them (Q8_0, Q8_1 or Q8_K), with integer dot products per block:
// llama.cpp's arithmetic, the same bits on every ISA.
class PackedWeights {
 public:
  static PackedWeights pack(std::span<const WeightSource> sources);
  static PackedWeights pack(const WeightSource& source) { return pack({&source, 1}); }

  PackedWeights();
  PackedWeights(PackedWeights&&) noexcept;
  PackedWeights& operator=(PackedWeights&&) noexcept;
  ~PackedWeights();

  int64_t n_out() const;
  int64_t n_in() const;
  size_t bytes() const;  // memory the packed form takes
  // The instruction the matmul's inner loop runs on this CPU (its peak bounds the speed):
  // BF16 dot for BF16 weights on AVX512-BF16, int8 dot for the quantized path with VNNI,
  // F32 FMA otherwise (F32, F16 and widened weights).
  Peak peak() const;
  struct Impl;
  const Impl& impl() const { return *impl_; }

 private:
  static PackedWeights pack_quantized(std::span<const WeightSource> sources, int64_t n_out);
  static PackedWeights pack_parts(std::span<const WeightSource> sources, int64_t n_out);
  std::unique_ptr<Impl> impl_;
};

// y[m][o] = sum_i x[m][i] * W[o][i] for m < n_rows, o < n_out.
// x is n_rows x n_in, y is n_rows x n_out, both row-major and contiguous; they must
// not overlap. Called from one thread at a time per pool (the pool's submitter).
void matmul(ThreadPool& pool, const PackedWeights& w, const float* x, int64_t n_rows, float* y);

// Work on a matmul's outputs where they are written, by the thread that computed them: fn
// runs once rows [row0, row0 + rows) of columns [col0, col0 + cols) are final, col0 a
// multiple of 64 and cols 64 or what is left of n_out, each output in exactly one call.
// (The output matmul's softmax partials, runner/model/forward.cpp: at few rows they ride
// along under the weights' stream from memory.) fn must not touch other outputs.
struct MatmulEpilogue {
  void (*fn)(const void* ctx, int64_t row0, int64_t rows, int64_t col0, int64_t cols) = nullptr;
  const void* ctx = nullptr;
};
// The same matmul, with the epilogue where the kernel takes one: the F32, F16 and BF16 panel
// loops (not AMX's, the quantized kernels' or a matrix packed in parts). Returns whether the
// epilogue ran; where it did not, the caller does its work over y itself.
bool matmul(ThreadPool& pool, const PackedWeights& w, const float* x, int64_t n_rows, float* y,
            const MatmulEpilogue& epilogue);

// Widens n elements of a row of a GGUF tensor to F32, exactly (gguf::dequantize_row); n is a
// whole number of the type's blocks.
void dequantize_row(gguf::TensorType type, const void* src, float* dst, int64_t n);

// Small vector kernels for attention and norms, dispatched like matmul.
float dot(const float* a, const float* b, int64_t n);
void axpy(float a, const float* x, float* y, int64_t n);  // y += a * x
// Attention over one KV block: out[j] = dot(q, k + j * stride, n) for j < count, and
// y += sum over j < count of w[j] * (v + j * stride), accumulated in increasing j.
void dot_rows(const float* q, const float* k, int64_t stride, int64_t count, int64_t n, float* out);
void axpy_rows(const float* w, const float* v, int64_t stride, int64_t count, int64_t n, float* y);
// The same two over KV vectors stored as `type` (F32, F16, BF16 or Q8_0), `stride` bytes
// apart: each element is widened exactly to F32 in a register and the products accumulate
// in F32, in the same order as above (F32 gives the float kernels' results bit for bit).
// For Q8_0, k and v start on a 32-element block.
void dot_rows(gguf::TensorType type, const float* q, const void* k, int64_t stride, int64_t count,
              int64_t n, float* out);
void axpy_rows(gguf::TensorType type, const float* w, const void* v, int64_t stride, int64_t count,
               int64_t n, float* y);
// out = x narrowed to F16 or BF16, rounding to nearest with ties to even: bit for bit what
// half_from_float and bfloat_from_float give (runner/util/float16.h), NaNs included. The KV
// cache's writes; vectorized, where the scalar converters cost a branch per element.
void to_half(const float* x, uint16_t* out, int64_t n);
void to_bfloat(const float* x, uint16_t* out, int64_t n);
// The same two for n_q queries at once, each with its own inputs and outputs (query a's
// at q + a * q_stride, out + a * out_stride; w + a * w_stride, y + a * y_stride): every
// query's results are the one-query kernels' bit for bit, and each stored vector is read
// and widened once for all of them (the query heads that share a KV head, under GQA).
void dot_rows_multi(gguf::TensorType type, const float* q, int64_t q_stride, int n_q, const void* k,
                    int64_t stride, int64_t count, int64_t n, float* out, int64_t out_stride);
void axpy_rows_multi(gguf::TensorType type, const float* w, int64_t w_stride, int n_q,
                     const void* v, int64_t stride, int64_t count, int64_t n, float* y,
                     int64_t y_stride);
// Many rows' axpy_rows over the same F32 value rows, each row with its own weights and
// output (w[a], y[a]): y[a][i] += sum_j w[a][j] * v[j * v_stride + i] for a < n_rows,
// j < count, i < n. Each output element is one FMA chain over j in order, so y[a] gets the
// bits axpy_rows_multi gives it over the same values, whichever rows share the call; the
// value rows are loaded once for each group of rows the registers hold. A prefill tile's
// queries over a block they all see, its values widened once (widen_rows).
void axpy_rows_gathered(const float* const* w, float* const* y, int n_rows, const float* v,
                        int64_t v_stride, int64_t count, int64_t n);
// Scores against a block of keys stored transposed (KvCache::k_transposed; F32, F16 or
// BF16): element i of key j at kt + (i * block + j) elements. out[a][j] = dot(q[a], key j)
// over n elements for j < keys and a < n_q, each computed in its own lane as four FMA
// chains over i = p mod 4, then (c0 + c1) + (c2 + c3) (runner/kernels/key_dots.h): the
// same bits whatever n_q, keys or ISA. Reads whole vectors of keys up to the block's end
// (keys past `keys` are read, never stored).
void dot_keys(gguf::TensorType type, const float* const* q, int n_q, const void* kt, int64_t block,
              int64_t keys, int64_t n, float* const* out);
// dot_keys over two blocks at once: out0[a][j] for keys j < keys0 of kt0, out1[a][j] for
// j < keys1 of kt1, the bits two dot_keys calls give (each query element broadcast once for
// both blocks, where the ISA's registers allow; two calls otherwise). A decode row's walk.
void dot_keys_pair(gguf::TensorType type, const float* const* q, int n_q, const void* kt0,
                   const void* kt1, int64_t block, int64_t keys0, int64_t keys1, int64_t n,
                   float* const* out0, float* const* out1);
// Stored KV vectors (F32, F16, BF16 or Q8_0; `stride` bytes apart) widened exactly to F32
// rows: out[j * out_stride + i] = element i of vector j, for j < count and i < n (a Q8_0
// element is its int8 times its block's F16 scale, exact in F32). A prefill tile widens a
// cache block's values (and Q8_0's keys) once and hands its queries the F32 rows:
// axpy_rows_multi and dot_rows_multi give F32 rows the bits they give their stored type,
// since each element is widened exactly and the FMAs run in the same order.
void widen_rows(gguf::TensorType type, const void* v, int64_t stride, int64_t count, int64_t n,
                float* out, int64_t out_stride);
// out[i] = silu(gate[i]) * up[i], with a vectorized e^x within a few ulp of std::exp.
// An element's result depends only on its two inputs (and the ISA), never on n.
void silu_mul(const float* gate, const float* up, float* out, int64_t n);
// Attention's online-softmax step over one block of scores, n_rows rows of n at once (row
// h at x + h * stride): each score x = x * scale, max[h] = the larger of max[h] and the
// row's largest, then x = e^(x - max[h]) with the same vectorized e^x (x - max clamped to
// [-87, 88]), and sums[h] = the row's results added in index order. An element's result
// depends only on x, scale and max[h] (and the ISA), never on n or the other rows.
void scaled_exp_sums(float* x, int64_t stride, int n_rows, int64_t n, float scale, float* max,
                     float* sums);

}  // namespace tandem::kernels
