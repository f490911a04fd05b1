// AVX2 row form of the quantized matmul (runner/kernels/quant_vector.h, with the steps of
// avx2/quant_steps.h). Batches laid out across rows take the lane form (avx2/quant_lanes.cpp).
#include "runner/kernels/avx2/quant_steps.h"
#include "runner/kernels/isa.h"
#include "runner/kernels/quant_interleaved.h"
#include "runner/kernels/quant_vector.h"

namespace tandem::kernels::detail {
namespace {

void avx2_loop(const QuantMatmulArgs& a, int64_t out_begin, int64_t out_end) {
  if (a.interleaved) {
    // The K-quants interleave only for the VNNI form (quant_interleave.h); AVX2 meets them
    // where a test lowers the ISA after packing, and reads them put back.
    if (a.kind != QuantKind::kQ4_0 && a.kind != QuantKind::kQ5_0)
      return portable_quant_loop()(a, out_begin, out_end);
    return interleaved_loop<Avx2Steps>(a, out_begin, out_end);
  }
  if (a.x.lanes != 0) return avx2_lanes_quant_loop()(a, out_begin, out_end);
  quant_vector_loop<Avx2Steps>(a, out_begin, out_end);
}

}  // namespace

QuantLoop avx2_quant_loop() { return &avx2_loop; }

}  // namespace tandem::kernels::detail
