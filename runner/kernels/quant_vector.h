// The quantized matmul's vector form, shared by avx2/quant_matmul.cpp and
// avx512/quant_matmul.cpp (256-bit AVX2 intrinsics; each file adds its own -m flags). It
// computes the integers and float steps of quant_matmul.h's portable form, which stays the
// reference it is tested against bit for bit, without that form's scalar unpacking:
//  - each type's blocks are decoded 32 quants per vector (quant_decode.h), kept unsigned
//    where the type allows (Q4_0's nibble n is n - 8: the dot is sum(n * x) minus
//    8 * sum(x), the activations' exact block sums), so one vpmaddubsw/vpdpbusd step needs no
//    sign fix-up; IQ4's signed table values take |w| and x with w's sign;
//  - activation rows in groups of up to S::kStreamRows (a decode step, a small batch): four
//    weight rows stream side by side, each span decoded in registers once and dotted with
//    every activation row of the group (quant_streams.h); larger batches take the lane
//    form (quant_lanes.h) from the row count quant_dispatch.cpp picks; Q4_0/Q5_0 matrices stored
//    interleaved by sixteen rows take quant_interleaved.h's kernel at every batch instead;
//  - per block the float steps of finish_legacy / finish_super follow, the same operations
//    in the same order (the per-block products in vector lanes, the sum over blocks in
//    block order per lane), so every ISA and every batch size gives the portable form's bits.
// The ISA file's struct S is described in quant_vector_steps.h.
// Everything sits in an anonymous namespace and uses no standard-library template, for the
// reason tile_loop.h gives.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "runner/kernels/quant_streams.h"

namespace tandem::kernels::detail {
namespace {

// Activation rows in groups of up to S::kStreamRows, each group streamed (quant_streams.h).
// quant_dispatch.cpp lays larger batches out across lanes for the lane form (quant_lanes.h), so
// more than one group comes only from callers that pass row-major activations of a larger
// batch (the tests' direct calls); each row still gets its one-row bits.
template <class S, class T>
void quant_rows_vector(const QuantMatmulArgs& a, int64_t out_begin, int64_t out_end) {
  for (int64_t m0 = 0; m0 < a.n_rows; m0 += S::kStreamRows) {
    QuantMatmulArgs group = a;
    group.n_rows = a.n_rows - m0 < S::kStreamRows ? a.n_rows - m0 : S::kStreamRows;
    group.x = row_range(a.x, m0, group.n_rows);
    group.y = a.y + m0 * a.row_stride();
    stream_batch<S, T>(group, out_begin, out_end);
  }
}

// f.template operator()<VT>() with VT the vector form's type for `kind` (quant_decode.h):
// one dispatch for the row form here and the lane form (quant_lanes.h).
template <class F>
void with_vector_type(QuantKind kind, F&& f) {
  switch (kind) {
    case QuantKind::kQ4_0:
      return f.template operator()<VQ4_0>();
    case QuantKind::kQ4_1:
      return f.template operator()<VQ4_1>();
    case QuantKind::kQ5_0:
      return f.template operator()<VQ5_0>();
    case QuantKind::kQ5_1:
      return f.template operator()<VQ5_1>();
    case QuantKind::kQ2_K:
      return f.template operator()<VQ2_K>();
    case QuantKind::kQ3_K:
      return f.template operator()<VQ3_K>();
    case QuantKind::kQ4_K:
      return f.template operator()<VQ4_K>();
    case QuantKind::kQ5_K:
      return f.template operator()<VQ5_K>();
    case QuantKind::kQ6_K:
      return f.template operator()<VQ6_K>();
    case QuantKind::kIq4Nl:
      return f.template operator()<VIq4Nl>();
    case QuantKind::kIq4Xs:
      return f.template operator()<VIq4Xs>();
    case QuantKind::kQ8_0:
      return f.template operator()<VQ8_0>();
  }
}

template <class S>
void quant_vector_loop(const QuantMatmulArgs& a, int64_t out_begin, int64_t out_end) {
  with_vector_type(a.kind, [&]<class T>() { quant_rows_vector<S, T>(a, out_begin, out_end); });
}

}  // namespace
}  // namespace tandem::kernels::detail
