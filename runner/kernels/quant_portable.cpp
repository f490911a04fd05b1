// The quantized matmul in plain C++ (quant_matmul.h): the reference the AVX2 and AVX-512
// vector forms (quant_vector.h) are checked against bit for bit
// (tests/runner/kernels/quant_matmul_test.cpp).
#include "runner/kernels/quant_matmul.h"

namespace tandem::kernels::detail {
namespace {

struct Portable {
  static void group_sums(const int8_t* w, const int8_t* x, int64_t n, int32_t* out) {
    group_sums_scalar(w, x, n, out);
  }
};

}  // namespace

QuantLoop portable_quant_loop() { return &quant_loop<Portable>; }

}  // namespace tandem::kernels::detail
