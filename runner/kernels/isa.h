// Internal to the kernels: the packed weight layout shared by every instruction set,
// and the entry points each per-ISA file (avx2/matmul.cpp, avx512/matmul.cpp) exports.
// Not for use outside runner/kernels/ and its tests.
//
// Layout: outputs are grouped in panels of kPanel (64) consecutive features; a panel
// stores its weights k-major, so a panel is one contiguous stream and each step over
// k loads the weights of all 64 outputs at once. Per type, one panel is:
//   F32  : float    w[n_in][64]
//   F16  : uint16_t w[n_in][64]                      (IEEE half)
//   BF16 : uint16_t w[padded_pairs(n_in)][64][2]     (pairs of k, zero-padded)
//   Q8_0 : { float scale[64]; int8_t q[32][64]; }[n_in/32]
// The last panel is zero-padded past n_out. The layout does not depend on the ISA,
// so the same PackedWeights run under every ISA (the tests switch between them).
//
// Every kernel computes each output with one accumulator lane, adding x[k]*w[k] for
// k = 0, 1, ... in order (pairs of k for vdpbf16ps), whatever the number of rows
// processed together: that is what makes rows bit-identical across batch sizes.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tandem::kernels::detail {

// Whether the kernels prefetch the weights a decode step reads once into L2 (Intel) rather
// than non-temporally (AMD): set once at start from the CPU's vendor (kernels.cpp;
// TANDEM_PREFETCH=l2|nta overrides it, for comparisons). On the
// Zen 4 and 5 guests a non-temporal prefetch kept those weights out of the caches the step
// reads again (the activations, the KV blocks) and measured faster; on the Sapphire Rapids
// class Xeon it fills L1 alone, past L2 and its streamer, and the decode steps waited on
// memory: `bench_matmul` `BM_DecodeStep<kQ5_0>` M:1 8.13-8.16 ms non-temporal against
// 3.77-3.91 into L2 (4.0-4.3 into L1), docs/performance.md 2026-12-03.
extern bool g_read_once_into_l2;

// Whether batches of several row tiles widen their 16-bit weights once per k-chunk
// (tile_loop.h, widened_panels): on, unless TANDEM_WIDEN=off (for comparisons; the bits are
// the same either way).
extern bool g_widen_chunks;

// Prefetches the line at p for a kernel that reads it once (above).
#define TANDEM_PREFETCH_READ_ONCE(p)                      \
  do {                                                    \
    if (::tandem::kernels::detail::g_read_once_into_l2) { \
      __builtin_prefetch((p), 0, 2);                      \
    } else {                                              \
      __builtin_prefetch((p), 0, 0);                      \
    }                                                     \
  } while (false)

inline constexpr int kPanel = 64;
// A BF16 panel's pairs of k, and an activation row's, are padded with zeros to a multiple of
// this: the AMX tile unit takes 16 pairs a step (amx/matmul.cpp).
inline constexpr int64_t kPairBlock = 16;
constexpr int64_t padded_pairs(int64_t n_in) {
  return ((n_in + 1) / 2 + kPairBlock - 1) / kPairBlock * kPairBlock;
}

// Q8_0, like every quantized type, is not a panel type: its rows stay in GGUF blocks for the
// integer path (quant_matmul.h).
enum class PackedType { kF32, kF16, kBf16Pairs };
inline constexpr int kPackedTypeCount = 3;

// One matmul call, as the per-ISA panel loops see it.
struct MatmulArgs {
  const uint8_t* panels = nullptr;
  size_t panel_bytes = 0;
  int64_t n_in = 0;
  int64_t n_out = 0;
  const float* x = nullptr;  // n_rows x n_in (F32 activations)
  // BF16 dot paths only: n_rows rows of ceil(n_in/2) BF16 pairs, padded_pairs(n_in) pairs
  // apart (the pairs past ceil(n_in/2) zero)
  const uint32_t* x_pairs = nullptr;
  int64_t n_rows = 0;
  float* y = nullptr;  // n_rows x n_out
  // tile_loop.h's widened_panels only: a k-chunk of one panel's weights widened to F32,
  // chunk[k][64]
  float* widened = nullptr;
  // kernels.h's MatmulEpilogue, called by the panel loops (tile_loop.h, panel_done); null:
  // none.
  void (*epilogue)(const void* ctx, int64_t row0, int64_t rows, int64_t col0,
                   int64_t cols) = nullptr;
  const void* epilogue_ctx = nullptr;
  // Guided splits only (packed_impl.h, guided_start): the parts of `of` in one thread's
  // region. A range that ends inside a region is followed by that region's next range, most
  // often on the same thread, so its far prefetches go on into the panel after its own.
  int64_t region_parts = 0;
};

// Computes one task's share of the outputs: parts [from, to) of the matmul cut into `of`
// equal parts, in (panel, row tile) pairs (tile_loop.h, TaskShare); every row of a panel
// where a batch is one tile.
using PanelLoop = void (*)(const MatmulArgs& args, int64_t from, int64_t to, int64_t of);

// The element types a KV cache may store (runner/device/kv_cache.h), as the attention
// kernels index them.
enum class KvElements { kF32, kF16, kBf16, kQ8_0 };
inline constexpr int kKvElementCount = 4;
using KvDotRows = void (*)(const float* q, const uint8_t* k, int64_t stride, int64_t count,
                           int64_t n, float* out);
using KvAxpyRows = void (*)(const float* w, const uint8_t* v, int64_t stride, int64_t count,
                            int64_t n, float* y);
// The same for n_q queries at once (kernels.h, dot_rows_multi and axpy_rows_multi).
using KvDotRowsMulti = void (*)(const float* q, int64_t q_stride, int n_q, const uint8_t* k,
                                int64_t stride, int64_t count, int64_t n, float* out,
                                int64_t out_stride);
using KvAxpyRowsMulti = void (*)(const float* w, int64_t w_stride, int n_q, const uint8_t* v,
                                 int64_t stride, int64_t count, int64_t n, float* y,
                                 int64_t y_stride);
// Stored KV vectors widened to F32 rows (kernels.h, widen_rows).
using KvWidenRows = void (*)(const uint8_t* v, int64_t stride, int64_t count, int64_t n, float* out,
                             int64_t out_stride);
// F32 value rows into many queries' rows at once (kernels.h, axpy_rows_gathered).
using AxpyRowsGathered = void (*)(const float* const* w, float* const* y, int n_rows,
                                  const float* v, int64_t v_stride, int64_t count, int64_t n);
// Scores against keys stored transposed (kernels.h, dot_keys).
using KvDotKeys = void (*)(const float* const* q, int n_q, const uint8_t* kt, int64_t block,
                           int64_t keys, int64_t n, float* const* out);
// The same for two blocks' keys at once (kernels.h, dot_keys_pair).
using KvDotKeysPair = void (*)(const float* const* q, int n_q, const uint8_t* kt0,
                               const uint8_t* kt1, int64_t block, int64_t keys0, int64_t keys1,
                               int64_t n, float* const* out0, float* const* out1);

struct IsaKernels {
  PanelLoop matmul[kPackedTypeCount] = {};
  // Rounds x (n_rows x n_in) to BF16 pairs (rows of ceil(n_in/2) pairs, odd tail zeroed,
  // padded_pairs(n_in) apart with zeros between) for the BF16 dot paths; null where BF16
  // weights are widened to F32 instead.
  void (*to_bf16_pairs)(const float* x, int64_t n_rows, int64_t n_in, uint32_t* out) = nullptr;
  float (*dot)(const float* a, const float* b, int64_t n) = nullptr;
  void (*axpy)(float a, const float* x, float* y, int64_t n) = nullptr;
  void (*silu_mul)(const float* gate, const float* up, float* out, int64_t n) = nullptr;
  void (*scaled_exp_sums)(float* x, int64_t stride, int n_rows, int64_t n, float scale, float* max,
                          float* sums) = nullptr;
  void (*dot_rows)(const float* q, const float* k, int64_t stride, int64_t count, int64_t n,
                   float* out) = nullptr;
  void (*axpy_rows)(const float* w, const float* v, int64_t stride, int64_t count, int64_t n,
                    float* y) = nullptr;
  // The same two over KV vectors of a stored type, indexed by KvElements (stride in bytes).
  KvDotRows kv_dot_rows[kKvElementCount] = {};
  KvAxpyRows kv_axpy_rows[kKvElementCount] = {};
  KvDotRowsMulti kv_dot_rows_multi[kKvElementCount] = {};
  KvAxpyRowsMulti kv_axpy_rows_multi[kKvElementCount] = {};
  // Narrowing for the KV cache's 16-bit types, as runner/util/float16.h rounds.
  void (*to_half)(const float* x, uint16_t* out, int64_t n) = nullptr;
  void (*to_bfloat)(const float* x, uint16_t* out, int64_t n) = nullptr;
  KvDotKeys kv_dot_keys[kKvElementCount] = {};           // by KvElements; none for Q8_0
  KvDotKeysPair kv_dot_keys_pair[kKvElementCount] = {};  // the same; null: one block a call
  KvWidenRows kv_widen_rows[kKvElementCount] = {};       // likewise
  AxpyRowsGathered axpy_rows_gathered = nullptr;
  // Whether matmul[t] calls MatmulArgs::epilogue (tile_loop.h's loops do; AMX's does not).
  bool calls_epilogue[kPackedTypeCount] = {true, true, true};
};

// The quantized path (quant_matmul.h): weights kept in their GGUF blocks, activations
// quantized per row as ggml does, integer dot products per block: the portable form
// (quant_matmul.h, the reference) and the AVX2 / AVX-512 VNNI forms (quant_vector.h, each
// ISA file supplying a few steps), which compute the same exact integers and float steps,
// so every ISA gives the same bits.
struct QuantMatmulArgs;
using QuantLoop = void (*)(const QuantMatmulArgs& args, int64_t out_begin, int64_t out_end);
QuantLoop portable_quant_loop();
QuantLoop avx2_quant_loop();
QuantLoop avxvnni_quant_loop();     // the AVX2 forms with AVX-VNNI's 256-bit vpdpbusd
QuantLoop avx2_lanes_quant_loop();  // activations across rows only (ActRows::lanes)
QuantLoop avx512vnni_quant_loop();
// AMX-INT8's form for batches on interleaved weights, every kind (amx/quant_matmul.cpp): the
// same integers and float steps, so the same bits.
QuantLoop amx_quant_loop();

const IsaKernels& avx2_kernels();
const IsaKernels& avx512_kernels();
const IsaKernels& avx512bf16_kernels();
// The BF16 matmul on AMX tiles (amx/matmul.cpp); the AMX ISA's kernels are AVX512-BF16's with
// this loop for BF16 panels.
PanelLoop amx_bf16_panel_loop();

}  // namespace tandem::kernels::detail
