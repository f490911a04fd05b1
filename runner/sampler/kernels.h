// The sampler's row kernels, once portable and once with AVX-512, chosen at run time.
// Both implementations return bit-identical results for every kernel except the ladder's
// hints: the float math is a fixed sequence of IEEE multiplies and adds (no FMA, no
// libm), and sums run in the same order: lane i % 16 sums elements i, i + 16, ... in turn,
// then the 16 lanes fold in halves (8, 4, 2, 1 wide). Stateless; thread-safe.
#pragma once

#include <cstdint>

namespace tandem::sampler_kernels {

// Distances below z_max at which the ladder estimates the mass above. The sampler collects
// top-p candidates above the shallowest rung that seems to hold the top-p prefix.
inline constexpr int kRungs = 16;
inline constexpr float kRungDepth[kRungs] = {1.0f,  2.0f, 3.0f,  4.0f,  5.0f,  6.0f,  6.75f, 7.5f,
                                             8.25f, 9.0f, 9.75f, 10.5f, 11.5f, 13.0f, 16.0f, 20.0f};

// The ladder counts the head (z - z_max >= -kLadderHead), where a few tokens can hold much
// of the mass, exactly. The tail it reads in full in rows up to kLadderFullRows entries and
// beyond that in one group of 16 entries in 8, each standing for 8.
inline constexpr float kLadderHead = 4.0f;
inline constexpr int32_t kLadderFullRows = 16384;

// Plain arrays: the AVX-512 file instantiates no standard-library template.
struct Ladder {
  float mass[kRungs] = {};  // estimated sum of exp(z - z_max) over z - z_max >= -kRungDepth[r]
};

struct Kernels {
  // z[i] *= inv_t in place (skipped when inv_t == 1); returns max z, NaN ignored (-inf if none).
  float (*scale_max)(float* z, int32_t n, float inv_t);
  // The lowest index of the largest value, NaN ignored; -1 when every value is -inf or NaN.
  int32_t (*argmax)(const float* x, int32_t n);
  // Z = sum of exp_shifted(z[i] - z_max), in the shared 16-lane order.
  float (*z_sum)(const float* z, int32_t n, float z_max);
  // The ladder's mass estimates (a hint: the two paths may differ in the last bits).
  void (*ladder)(const float* z, int32_t n, float z_max, Ladder* out);
  // Writes (z[i], i) for every i with z[i] - z_max >= threshold, in id order; returns the
  // count. out_z and out_id need room for n + 16 entries.
  int32_t (*collect)(const float* z, int32_t n, float z_max, float threshold, float* out_z,
                     int32_t* out_id);
  // out[i] = exp_shifted(z[i] - z_max) for i < n.
  void (*exp_shifted)(const float* z, int32_t n, float z_max, float* out);
  // out[j] = gumbel_noise(seed, position, ids[j]) for j < n.
  void (*noise)(uint64_t seed, int64_t position, const int32_t* ids, int32_t n, float* out);
  // The lowest i maximizing z[i] + gumbel_noise(seed, position, i); -1 if none is finite.
  int32_t (*gumbel_argmax)(const float* z, int32_t n, uint64_t seed, int64_t position);
  // The same over a set of tokens: the index j maximizing z[j] + gumbel_noise(seed, position,
  // ids[j]), ties to the lowest ids[j]; -1 if none is finite. ids are distinct.
  int32_t (*gumbel_argmax_at)(const float* z, const int32_t* ids, int32_t n, uint64_t seed,
                              int64_t position);
};

const Kernels& portable();
const Kernels* avx512();  // nullptr when the CPU lacks AVX-512 (F, BW, DQ, VL)
// AVX-512 when the CPU has it and TANDEM_ISA (read on each call) names no lower ISA.
const Kernels& detected();

// Scalar definitions that the vector paths reproduce bit for bit.
float log_approx(float x);   // natural log of a positive normal float, ~1 ulp
float exp_shifted(float d);  // e^d for d <= 0; 0 when d < -86 (also -inf and NaN)
float gumbel_noise(uint64_t seed, int64_t position, int32_t id);  // as in sampler.h
float gumbel_from_bits(uint32_t bits);  // -log(-log(uniform_open01(bits)))
// An upper bound of gumbel_from_bits(bits), cheap enough to decide whether a token's logs are
// worth computing; kNoiseCeiling bounds every noise value.
float noise_ceiling(uint32_t bits);
inline constexpr float kNoiseCeiling = 16.7f;  // the largest noise is about 16.636

// Where both paths' Gumbel argmaxes start: the top logit (argmax's answer `top`) with its
// noise added, the running best that a token must be able to reach to be scanned at all.
// ids maps an index to its token (nullptr: the index is the token). {-inf, -1} when top
// is -1 (no finite logit).
struct GumbelBest {
  float value;
  int32_t index;
};
GumbelBest gumbel_start(const float* z, int32_t top, const int32_t* ids, uint64_t seed,
                        int64_t position);

// The vector path's definitions, declared here so the portable file can dispatch to them.
namespace avx512_impl {
extern const Kernels kKernels;
}

}  // namespace tandem::sampler_kernels
