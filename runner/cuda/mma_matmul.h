// The matmuls on the tensor cores (mma_matmul.cu): F16, BF16 and scaled int8 weights
// (Q8_0, Q5_0, Q4_0 and IQ4_NL repacked: forward_kernels.h) times F32 activations rounded
// to TF32 (10 mantissa bits; the weights' values are TF32 exactly, int8 ones as integers
// whose chunk sums are then scaled by their block's scale), accumulated in F32 by mma.sync
// m16n8k8. forward_kernels.cu's matmul() and gated_matmul() route here every matrix that
// mma_matmul_fits; F32 weights stay on the F32 FMA kernels.
//
// Law 2 (a token's result never depends on its batch) holds by construction: a block takes
// 16 output rows and up to 16 tokens; its warps (8, or 16 for rows of 1024 or more: the
// matrix decides) split the K dimension into 32-wide chunks by the chunk's index alone
// (warp w takes chunks w, w + warps, ...), and the partial sums are added in warp order.
// Nothing of that depends on how many tokens the step has, and the tensor cores compute
// each token's column from that column's inputs alone.
#pragma once

#include "runner/cuda/forward_kernels.h"

namespace tandem::cuda {

// Whether w runs on the tensor cores (the choice depends on the matrix alone, never on the
// batch, so a token's arithmetic is the same in every step).
bool mma_matmul_fits(const DeviceMatrix& w);

// As matmul() and gated_matmul() (forward_kernels.h), for a w that mma_matmul_fits. With a
// norm, the token's RMS scale multiplies the finished dot product (sum_k W x norm * scale),
// so the norm costs no pass of its own.
void mma_matmul(const DeviceMatrix& w, const float* x, int32_t n_rows, float* y, bool accumulate,
                const NormIn& norm, cudaStream_t stream);
void mma_gated_matmul(const DeviceMatrix& w, const float* x, int32_t n_rows, int32_t ff,
                      Activation act, float* out, const NormIn& norm, cudaStream_t stream);

}  // namespace tandem::cuda
