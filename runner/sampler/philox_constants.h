// Philox4x32-10's round constants (Salmon et al., SC'11; Random123's values), shared by the
// scalar generator (philox.h), the sampler's vector forms (avx2/, avx512/kernels.cpp) and the
// CUDA port (cuda/sampler_kernel.cuh), which must all give the same bits. Only <cstdint>,
// so ISA-specific and device code can include it.
#pragma once

#include <cstdint>

namespace tandem::philox {

inline constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;    // round multipliers
inline constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;  // key schedule bumps

}  // namespace tandem::philox
