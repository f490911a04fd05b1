// AVX2 row form of the quantized matmul (runner/kernels/quant_vector.h, with the steps of
// avx2/quant_steps.h); the loop is avx2/quant_forms.h's.
#include "runner/kernels/avx2/quant_forms.h"
#include "runner/kernels/avx2/quant_steps.h"
#include "runner/kernels/isa.h"

namespace tandem::kernels::detail {

QuantLoop avx2_quant_loop() { return &avx2_form_loop<Avx2Steps>; }

}  // namespace tandem::kernels::detail
