// Gemma 2's soft-capping, x = cap * tanh(pre * x / cap), over a row of attention scores or
// logits at a time.
#pragma once

#include <cstdint>

namespace tandem {

// In place over n values; cap <= 0 leaves them alone. tanh(t) is sign(t) (1 - e) / (1 + e)
// with e = e^(-2|t|) from the sampler's vector exp (the same bits on every ISA) where
// |t| >= 0.625, and Cephes' odd polynomial in t below that, where the quotient would lose
// bits to cancellation: within a few float ulp of libm's tanhf. libm's scalar tanhf took
// half of a gemma2 decode step (QA: 51% of the CPU at 32 rows, growing with the
// vocabulary) and half of a 1900-token prefill (the attention scores).
void soft_cap(float* x, int64_t n, float cap, float pre = 1.0f);

}  // namespace tandem
