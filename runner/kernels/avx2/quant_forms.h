// The 256-bit forms' loop, shared by avx2/quant_matmul.cpp (Avx2Steps: vpmaddubsw then
// vpmaddwd) and avx2/quant_matmul_vnni.cpp (AVX-VNNI's 256-bit vpdpbusd): the same exact
// integers either way, so the same bits. Batches laid out across rows take the lane form
// (avx2/quant_lanes.cpp, vpmaddubsw in both).
#pragma once

#include "runner/kernels/isa.h"
#include "runner/kernels/quant_interleaved.h"
#include "runner/kernels/quant_vector.h"

namespace tandem::kernels::detail {
namespace {

template <class S>
void avx2_form_loop(const QuantMatmulArgs& a, int64_t out_begin, int64_t out_end) {
  if (a.interleaved) {
    // Kinds interleaved only for the 512-bit VNNI form (quant_interleave.h) meet the 256-bit
    // forms where a test lowers the ISA after packing; they are read put back.
    if (!interleaves(a.kind, kInterleaveRows, /*wide_vnni=*/false))
      return portable_quant_loop()(a, out_begin, out_end);
    return interleaved_loop<S>(a, out_begin, out_end);
  }
  if (a.x.lanes != 0) return avx2_lanes_quant_loop()(a, out_begin, out_end);
  quant_vector_loop<S>(a, out_begin, out_end);
}

}  // namespace
}  // namespace tandem::kernels::detail
