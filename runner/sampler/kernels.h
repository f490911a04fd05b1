// The sampler's row kernels, portable, AVX2 (avx2/kernels.cpp: the passes over a whole row,
// the rest portable) and AVX-512, chosen at run time.
// Every implementation returns bit-identical results for every kernel except the ladder's
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

// The k best entries of a row (k <= kMaxTop), most likely first: value descending, ties to the
// lower id. -inf and NaN are never listed, so count may be below k.
inline constexpr int32_t kMaxTop = 32;
struct TopList {
  int32_t count = 0;
  float value[kMaxTop];
  int32_t id[kMaxTop];
};

// Puts (v, id) into a list of at most k, if it belongs there. Ids must come in increasing
// order (an equal value already listed has the lower id and stays ahead). Both paths' scans
// call it for the same entries in the same order, so their lists are identical.
inline void top_insert(TopList* list, int32_t k, float v, int32_t id) {
  if (!(v > (list->count < k ? -__builtin_inff() : list->value[k - 1]))) return;
  int32_t at = list->count < k ? list->count++ : k - 1;
  for (; at > 0 && list->value[at - 1] < v; --at) {
    list->value[at] = list->value[at - 1];
    list->id[at] = list->id[at - 1];
  }
  list->value[at] = v;
  list->id[at] = id;
}

// Logits per softmax partial: the log-probabilities' Z is summed panel by panel
// (Kernels::panel_partials), where the output matmul writes the logits (runner/model/forward.h).
inline constexpr int32_t kLogitPanel = 64;
inline constexpr int32_t logit_panels(int32_t n) { return (n + kLogitPanel - 1) / kLogitPanel; }

struct Kernels {
  // z[i] *= inv_t in place (skipped when inv_t == 1); returns max z, NaN ignored (-inf if none).
  float (*scale_max)(float* z, int32_t n, float inv_t);
  // The lowest index of the largest value, NaN ignored; -1 when every value is -inf or NaN.
  int32_t (*argmax)(const float* x, int32_t n);
  // Adds the entries of x that belong among the best k (1 <= k <= kMaxTop) to *out, x[i]
  // with id first_id + i; out holds entries of lower ids (count 0 to start a list). So a
  // list can be built from runs of a row, in id order (sampler.cpp, log_normalizer).
  void (*scan_top)(const float* x, int32_t n, int32_t k, int32_t first_id, TopList* out);
  // The log-probabilities' partials, kLogitPanel entries at a time (the last panel may be
  // shorter): max[p], the panel's largest value, NaN ignored, -inf if none, +0 for -0; and
  // sum[p], the sum of exp_table(x[i] - max[p]) over the panel in the 16-lane order (+0 where
  // max[p] is -inf or +inf). Panels are independent, so any run of them may be computed apart,
  // by whichever thread wrote them.
  void (*panel_partials)(const float* x, int32_t n, float* max, float* sum);
  // Z from the partials: the sum over p of sum[p] * exp_table(max[p] - top) (a product, then
  // an add), in the 16-lane order over p. top: the largest max[p], finite.
  float (*partials_z)(const float* max, const float* sum, int32_t n_panels, float top);
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
  // top: argmax(z, n) when the caller knows it already, else -2 (the kernel finds it).
  int32_t (*gumbel_argmax)(const float* z, int32_t n, int32_t top, uint64_t seed, int64_t position);
  // The same over a set of tokens: the index j maximizing z[j] + gumbel_noise(seed, position,
  // ids[j]), ties to the lowest ids[j]; -1 if none is finite. ids are distinct.
  int32_t (*gumbel_argmax_at)(const float* z, const int32_t* ids, int32_t n, uint64_t seed,
                              int64_t position);
};

const Kernels& portable();
const Kernels* avx2();    // nullptr when the CPU lacks AVX2 and FMA
const Kernels* avx512();  // nullptr when the CPU lacks AVX-512 (F, BW, DQ, VL)
// AVX-512 when the CPU has it and TANDEM_ISA (read on each call) names no lower ISA, else
// AVX2 (every CPU tandem runs on has it).
const Kernels& detected();

// Scalar definitions that the vector paths reproduce bit for bit.
float log_approx(float x);   // natural log of a positive normal float, ~1 ulp
float exp_shifted(float d);  // e^d for d <= 0; 0 when d < -86 (also -inf and NaN)
// e^d for d <= 0 (0 when d < -86, also -inf and NaN), within (3 + 1.2 |d|) 1e-7
// relative (the argument's float rounding grows with |d|): 2^(j/32) from
// kExp2Table times a cubic in the rest, with fewer operations than exp_shifted's degree-7
// polynomial, for the one pass that needs an exp of every entry (the logprobs' Z).
float exp_table(float d);
inline constexpr float kExp2Table[32] = {
    1.0f,        1.0218972f,  1.04427373f, 1.06714046f, 1.09050775f, 1.1143868f,  1.13878858f,
    1.1637249f,  1.18920708f, 1.21524739f, 1.24185777f, 1.26905096f, 1.29683959f, 1.32523668f,
    1.35425556f, 1.38390994f, 1.41421354f, 1.44518077f, 1.47682619f, 1.50916445f, 1.54221082f,
    1.5759809f,  1.61049032f, 1.64575553f, 1.68179286f, 1.71861935f, 1.75625217f, 1.79470909f,
    1.8340081f,  1.87416768f, 1.91520655f, 1.95714414f};
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

// The vector paths' definitions, declared here so the portable file can dispatch to them.
namespace avx512_impl {
extern const Kernels kKernels;
}
namespace avx2_impl {
float scale_max(float* z, int32_t n, float inv_t);
int32_t argmax(const float* x, int32_t n);
void scan_top(const float* x, int32_t n, int32_t k, int32_t first_id, TopList* out);
int32_t gumbel_argmax(const float* z, int32_t n, int32_t top, uint64_t seed, int64_t position);
void panel_partials(const float* x, int32_t n, float* max, float* sum);
float partials_z(const float* max, const float* sum, int32_t n_panels, float top);
float z_sum(const float* z, int32_t n, float z_max);
void ladder(const float* z, int32_t n, float z_max, Ladder* out);
int32_t collect(const float* z, int32_t n, float z_max, float threshold, float* out_z,
                int32_t* out_id);
void exp_shifted_row(const float* z, int32_t n, float z_max, float* out);
}  // namespace avx2_impl

}  // namespace tandem::sampler_kernels
