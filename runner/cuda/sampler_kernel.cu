// The fused sampler as one kernel: one 1024-thread block per row, the steps of sampler.h in
// passes over the row (L2-resident after the first). How each step stays the CPU's:
//  1. Edits: the first occurrence of each id replays every edit of that id in list order on
//     the raw logit (the CPU's float adds, -inf for a ban); a shared bitmap keeps the row scan
//     off those ids. The logits are never written: rows may share one.
//  2. Greedy / z: z = logit * (1/T) with 1/T one IEEE reciprocal (__frcp_rn); the argmax is
//     `>` per thread in id order, then a fixed-tree reduction on (value desc, id asc), which is
//     the CPU's "lowest id of the largest, NaN ignored". z_max = max + 0 (the CPU's -0 -> +0).
//  3. Filters: the kept set is the first n tokens in rank order. min_p's candidates are the
//     tokens with z - z_max >= log_min_p (the host's logf, in SampleRow); top_k counts them;
//     top_p weighs each by the sampler's own exp_shifted(z - z_max) and keeps p of what
//     min_p and top_k left (vLLM's order): the candidates' mass, or, when top_k cuts, the
//     mass of its k found by a select on count alone first (top_k_mass). A radix select over the
//     32-bit rank key (11 bits, then 7, 7, 7) finds the n-th token: per-bin counts and
//     masses are integers (masses in fixed point, 2^-40 units), so the shared-memory atomics
//     that build them give the same sums in any order. Ties at the cut go to the lower ids
//     (a block scan in id order finds the m-th). When the level-0 bins up to the cut's hold at
//     most kListCap candidates (top_k, min_p and most top_p rows), they are gathered into
//     shared memory once and the deeper levels and the Gumbel pass read only them; results
//     never depend on the list's order. THE ONE INEXACT STEP: top_p's prefix mass
//     is summed exactly (integers) in rank order and compared with p * S computed from the
//     same integers, where the CPU sums floats in its own orders (sampler.h), so a cut
//     within float rounding of p (relative ~1e-6) can fall one token apart.
//  4. Gumbel-max: Philox4x32-10 and the two logs ported step for step (sampler_kernel.cuh),
//     z + g rounded once, the CPU's exact pruning (group and per-token noise ceilings against
//     a running best that starts at the top token), then the (value desc, id asc) reduction.
//     A single kept token is returned without noise. The fallback is the CPU's: its raw row
//     after restoring the edited ids, whose other entries are all -inf or NaN by then.
// Resources: 1024 threads and 64 registers a thread (one block per SM), ~25 KiB of static and
// 128 KiB of dynamic shared memory (Hopper allows 227 KiB).
// Deterministic: every float result comes from fixed trees or single threads; the atomics add
// integers. Must be built without -ftz=true / --use_fast_math (denormals are kept).
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cfloat>
#include <climits>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "runner/cuda/sampler_kernel.block.cuh"
#include "runner/cuda/sampler_kernel.cuh"
#include "runner/cuda/sampler_kernel.h"

namespace tandem::cuda {
namespace {

using namespace device_math;
using namespace block;

// The radix select's digits: 11 bits (sign, exponent, 2 mantissa bits) then 7, 7, 7. A first
// digit of a float's top 8 bits would put a whole binade pair in one bin (a quarter of a
// row, often), too many to gather and a hot spot for the histogram's atomics.
constexpr int kBins = 2048;
__device__ __forceinline__ int digit_bits(int level) { return level == 0 ? 11 : 7; }
__device__ __forceinline__ int digit_shift(int level) { return 21 - 7 * level; }
constexpr float kPosInf = __builtin_huge_valf();
constexpr int32_t kStrideAlign = 64;  // scratch rows start on 256-byte boundaries
constexpr uint32_t kListCap = 16384;  // candidates a row may gather into shared memory (128 KiB)

struct Shared {
  BlockSlots slots;
  uint32_t hist_count[kBins];
  // Each bin's mass, a 64-bit integer kept as two words: 32-bit shared atomics are native,
  // 64-bit adds would be compare-and-swap loops that stall under contention.
  uint32_t hist_mass_lo[kBins], hist_mass_hi[kBins];
  // The radix walk: the rank-key prefix chosen so far, what lies before its bucket, the bucket.
  uint32_t prefix, base_count, bucket_count;
  unsigned long long base_mass, bucket_mass;
  int32_t id_cut;
  uint32_t listed;  // entries gathered into the list so far
};

// ---- step 1 and 2: edits, z, argmax ----

__device__ __forceinline__ bool is_edited(const uint32_t* bitmap, int32_t i) {
  return ((bitmap[i >> 5] >> (i & 31)) & 1u) != 0;
}

// Whether edits[j] is the first edit of its id, which then replays all of them.
__device__ bool first_edit(const LogitEdit* edits, int32_t j, int32_t vocab) {
  const int32_t id = edits[j].id;
  if (id < 0 || id >= vocab) return false;
  for (int32_t k = 0; k < j; ++k) {
    if (edits[k].id == id) return false;
  }
  return true;
}

__device__ void mark_edits(const LogitEdit* edits, int32_t n_edits, int32_t vocab,
                           uint32_t* bitmap) {
  for (int32_t w = threadIdx.x; w < (vocab + 31) / 32; w += kThreads) bitmap[w] = 0u;
  __syncthreads();
  for (int32_t j = threadIdx.x; j < n_edits; j += kThreads) {
    const int32_t id = edits[j].id;
    if (id >= 0 && id < vocab) atomicOr(&bitmap[id >> 5], 1u << (id & 31));
  }
  __syncthreads();
}

// The row's z (the biased logits themselves when greedy): written to `out` unless it is null,
// and folded into this thread's argmax candidate.
__device__ Best scan_row(const float* raw, int32_t vocab, const LogitEdit* edits, int32_t n_edits,
                         const uint32_t* bitmap, float inv_t, bool scale, float* out) {
  Best local = {kNegInf, -1};
  for_each_entry(raw, vocab, [&](float x, int32_t i) {
    if (n_edits > 0 && is_edited(bitmap, i)) return;
    const float z = scale ? __fmul_rn(x, inv_t) : x;
    if (out != nullptr) out[i] = z;
    if (z > local.v) local = {z, i};  // ids rise, so `>` keeps the lowest
  });
  for (int32_t j = threadIdx.x; j < n_edits; j += kThreads) {
    if (!first_edit(edits, j, vocab)) continue;
    const int32_t id = edits[j].id;
    float x = raw[id];
    for (int32_t k = j; k < n_edits; ++k) {
      if (edits[k].id != id) continue;
      x = edits[k].bias <= -100.0f ? kNegInf : __fadd_rn(x, edits[k].bias);
    }
    const float z = scale ? __fmul_rn(x, inv_t) : x;
    if (out != nullptr) out[id] = z;
    if (z > kNegInf && beats({z, id}, local)) local = {z, id};
  }
  return local;
}

// Nothing was left to sample: the argmax of the raw logits of the edited ids (every other
// entry of the CPU's row is -inf or NaN by then), else 0.
__device__ int32_t fallback(const float* raw, int32_t vocab, const LogitEdit* edits,
                            int32_t n_edits, Shared& s) {
  Best local = {kNegInf, -1};
  for (int32_t j = threadIdx.x; j < n_edits; j += kThreads) {
    if (!first_edit(edits, j, vocab)) continue;
    const Best b = {raw[edits[j].id], edits[j].id};
    if (b.v > kNegInf && beats(b, local)) local = b;
  }
  const Best best = reduce_best(local, s.slots);
  return best.id >= 0 ? best.id : 0;
}

// ---- step 3: the kept set by a radix select over rank keys ----

// Fixed-point mass: exp_shifted(d) in units of 2^-40 (exact scaling, then truncation). A row's
// total stays below 2^58.
__device__ __forceinline__ unsigned long long mass_of(float d) {
  return __float2ull_rz(__fmul_rn(exp_shifted(d), 0x1p40f));
}

// A thread's run of equal bins, added to the shared histogram when the bin changes: the
// first levels put most tokens in a few bins, where per-token atomics would serialize.
struct BinRun {
  int32_t bin = -1;
  uint32_t count = 0;
  unsigned long long mass = 0;
  __device__ void flush(Shared& s) {
    if (count > 0) atomicAdd(&s.hist_count[bin], count);
    if (mass > 0) {
      // The low word's carry goes to the high word: exact in any order of the adds.
      const auto lo = static_cast<uint32_t>(mass);
      const uint32_t old = atomicAdd(&s.hist_mass_lo[bin], lo);
      const uint32_t hi = static_cast<uint32_t>(mass >> 32) + (old + lo < old ? 1u : 0u);
      if (hi > 0) atomicAdd(&s.hist_mass_hi[bin], hi);
    }
    count = 0;
    mass = 0;
  }
  __device__ void add(int32_t b, unsigned long long m, Shared& s) {
    if (b != bin) {
      flush(s);
      bin = b;
    }
    count += 1;
    mass += m;
  }
};

// What the kept set is cut from: candidates are the tokens with z - z_max >= floor.
struct Cut {
  float z_max;
  float floor;
  uint32_t key = UINT32_MAX;  // kept: key < this, or key == this and id <= id_cut
  int32_t id_cut = INT32_MAX;
  int key_shift = 0;  // the low bits of the rank key that `key` leaves out
  bool all = false;   // no filter: every token takes part (the CPU's plain Gumbel pass)
  __device__ bool candidate(float z) const { return __fsub_rn(z, z_max) >= floor; }
  __device__ bool keeps(float z, int32_t id) const {
    if (all) return true;
    if (!candidate(z)) return false;
    const uint32_t k = rank_key(z) >> key_shift;
    return k < key || (k == key && id <= id_cut);
  }
};

struct Totals {
  uint32_t candidates;
  unsigned long long z_sum;  // the candidates' mass, fixed point
};

// Where the select and the Gumbel pass read z: the whole row, or the candidates gathered into
// shared memory (the first level-0 bins, when they hold at most kListCap): a pass over the list
// costs a few loads a thread where one over the row reads it all again.
struct RowSource {
  const float* z;
  int32_t vocab;
  template <typename F>
  __device__ void for_each(F&& f) const {
    for_each_entry(z, vocab, f);
  }
};
struct ListSource {
  const float* z;
  const int32_t* id;
  uint32_t n;  // in no particular order (atomics place them): nothing below depends on it
  template <typename F>
  __device__ void for_each(F&& f) const {
    for (uint32_t i = threadIdx.x; i < n; i += kThreads) f(z[i], id[i]);
  }
};

// One level's histogram of the candidates whose key starts with `prefix` (level 0: all of
// them, and the totals too). Ends with the histogram complete (synchronized).
template <typename Source>
__device__ Totals histogram_pass(const Source& src, const Cut& cut, bool weigh, int level,
                                 uint32_t prefix, Shared& s) {
  BinRun run;
  uint32_t candidates = 0;
  unsigned long long z_sum = 0;
  const int shift = digit_shift(level);
  const uint32_t digit_mask = (1u << digit_bits(level)) - 1u;
  src.for_each([&](float zi, int32_t) {
    const float d = __fsub_rn(zi, cut.z_max);
    if (!(d >= cut.floor)) return;
    // Z sums every candidate's mass (what top_p takes p of when top_k cuts none: min_p's
    // survivors, or the whole row); the masses of deeper levels only the prefix's.
    unsigned long long m = level == 0 && weigh ? mass_of(d) : 0ull;
    z_sum += m;
    const uint32_t key = rank_key(zi);
    if (level > 0) {
      if ((key >> (shift + digit_bits(level))) != prefix) return;
      if (weigh) m = mass_of(d);
    }
    candidates += 1;
    run.add(static_cast<int32_t>((key >> shift) & digit_mask), m, s);
  });
  run.flush(s);
  Totals t = {0, 0};
  if (level == 0) {
    t.candidates = static_cast<uint32_t>(reduce_sum(candidates, s.slots));
    t.z_sum = reduce_sum(z_sum, s.slots);
  }
  __syncthreads();
  return t;
}

// Warp 0: the first bin whose end satisfies the cut (n_count tokens, or `target` mass); the
// prefix descends into it. Each lane looks at a run of bins after a scan of the lanes' sums.
__device__ __forceinline__ unsigned long long bin_mass(const Shared& s, int b) {
  return (static_cast<unsigned long long>(s.hist_mass_hi[b]) << 32) | s.hist_mass_lo[b];
}

__device__ void choose_bin(int level, uint32_t n_count, unsigned long long target, Shared& s) {
  const int lane = threadIdx.x & 31;
  const int per_lane = (1 << digit_bits(level)) / 32;
  const int first = lane * per_lane, last = first + per_lane;
  uint32_t count = 0;
  unsigned long long mass = 0;
  for (int b = first; b < last; ++b) {
    count += s.hist_count[b];
    mass += bin_mass(s, b);
  }
  uint32_t count_incl = count;
  unsigned long long mass_incl = mass;
  for (int o = 1; o < 32; o <<= 1) {
    const uint32_t c = __shfl_up_sync(kFull, count_incl, o);
    const unsigned long long m = __shfl_up_sync(kFull, mass_incl, o);
    if (lane >= o) {
      count_incl += c;
      mass_incl += m;
    }
  }
  uint32_t before = s.base_count + count_incl - count;
  unsigned long long mass_before = s.base_mass + mass_incl - mass;
  int found = -1;
  for (int b = first; b < last && found < 0; ++b) {
    const uint32_t c = s.hist_count[b];
    const unsigned long long m = bin_mass(s, b);
    if (before + c >= n_count || mass_before + m >= target) {
      found = b;
    } else {
      before += c;
      mass_before += m;
    }
  }
  const unsigned ballot = __ballot_sync(kFull, found >= 0);
  if (ballot != 0 && lane == __ffs(ballot) - 1) {
    s.prefix = (s.prefix << digit_bits(level)) | static_cast<uint32_t>(found);
    s.base_count = before;
    s.base_mass = mass_before;
    s.bucket_count = s.hist_count[found];
    s.bucket_mass = bin_mass(s, found);
  }
}

__device__ void clear_histogram(Shared& s) {
  for (int b = threadIdx.x; b < kBins; b += kThreads) {
    s.hist_count[b] = 0;
    s.hist_mass_lo[b] = 0;
    s.hist_mass_hi[b] = 0;
  }
}

// The id of the m-th candidate (1-based, in id order) whose key is `key`: each thread counts
// a contiguous slice of ids, a scan places the slices, and one thread walks its slice.
__device__ int32_t tie_cut(const RowSource& src, const Cut& cut, uint32_t key, uint32_t m,
                           Shared& s) {
  const float* z = src.z;
  const int32_t vocab = src.vocab;
  const int32_t slice = (vocab + kThreads - 1) / kThreads;
  const int32_t begin = min(vocab, static_cast<int32_t>(threadIdx.x) * slice);
  const int32_t end = min(vocab, begin + slice);
  auto tied = [&](int32_t i) { return cut.candidate(z[i]) && rank_key(z[i]) == key; };
  uint32_t count = 0;
  for (int32_t i = begin; i < end; ++i) count += tied(i) ? 1u : 0u;
  const uint32_t before = exclusive_scan(count, s.slots);
  if (before < m && m <= before + count) {
    uint32_t seen = before;
    for (int32_t i = begin; i < end; ++i) {
      if (tied(i) && ++seen == m) {
        s.id_cut = i;
        break;
      }
    }
  }
  __syncthreads();
  return s.id_cut;
}

// Level `level`'s bin choice, then the histogram cleared for the next level.
__device__ void choose_and_clear(int level, uint32_t n_count, unsigned long long target,
                                 Shared& s) {
  if (threadIdx.x < 32) choose_bin(level, n_count, target, s);
  __syncthreads();
  clear_histogram(s);
  __syncthreads();
}

// The rank key and tie cut of the n-th kept token (n = the smallest prefix holding n_count
// candidates or `target` mass), once level 0's bin is chosen. Returns n.
template <typename Source>
__device__ uint32_t radix_select(const Source& src, const RowSource& row, Cut& cut, bool weigh,
                                 uint32_t n_count, unsigned long long target, Shared& s) {
  int level = 0;
  // A bin that holds one candidate holds the n-th token alone: the rest of its key is moot.
  while (level < 3 && s.bucket_count > 1) {
    ++level;
    const uint32_t prefix = s.prefix;
    histogram_pass(src, cut, weigh, level, prefix, s);
    choose_and_clear(level, n_count, target, s);
  }
  cut.key_shift = digit_shift(level);
  // The last bin is one key (or one token): t tied tokens of equal mass; keep the first m.
  const uint32_t t = s.bucket_count;
  const unsigned long long each = s.bucket_mass / t;
  uint32_t m = n_count - s.base_count;
  if (target != ULLONG_MAX && each > 0) {
    const unsigned long long need = (target - s.base_mass + each - 1) / each;
    if (need < m) m = static_cast<uint32_t>(need);
  }
  m = max(1u, min(m, t));
  cut.key = s.prefix;
  const uint32_t n = s.base_count + m;
  if (m < t && n > 1) cut.id_cut = tie_cut(row, cut, cut.key, m, s);  // rare: one row pass
  return n;
}

// ---- step 4: Gumbel-max over the kept tokens ----

// Where every Gumbel pass starts: the top token with its noise (kernels.cpp's gumbel_start).
__device__ Best gumbel_start(float z_top, int32_t top, uint64_t seed, int64_t position) {
  const uint4 block = noise_block(seed, position, static_cast<uint32_t>(top) >> 2);
  return {__fadd_rn(z_top, gumbel_from_bits(word(block, top & 3))), top};
}

// Over the row, 4 ids (one Philox block) at a time, pruned as kernels.cpp's gumbel_argmax.
__device__ int32_t gumbel_pass(const RowSource& src, const Cut& cut, int32_t top, uint64_t seed,
                               int64_t position, Shared& s) {
  const int32_t vocab = src.vocab;
  Best best = gumbel_start(src.z[top], top, seed, position);
  for_each_chunk(src.z, vocab, [&](float4 v, int32_t first) {
    bool kept[4];
    float group_max = kNegInf;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      kept[j] = first + j < vocab && cut.keeps(lane4(v, j), first + j);
      if (kept[j] && lane4(v, j) > group_max) group_max = lane4(v, j);
    }
    if (!(__fadd_rn(group_max, kNoiseCeiling) >= best.v)) return;
    const uint4 block = noise_block(seed, position, static_cast<uint32_t>(first) >> 2);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const uint32_t bits = word(block, j);
      if (!kept[j] || !(__fadd_rn(lane4(v, j), noise_ceiling(bits)) >= best.v)) continue;
      const Best b = {__fadd_rn(lane4(v, j), gumbel_from_bits(bits)), first + j};
      if (beats(b, best)) best = b;
    }
  });
  return reduce_best(best, s.slots).id;
}

// Over the list, one token at a time, pruned as kernels.cpp's gumbel_argmax_at.
__device__ int32_t gumbel_pass(const ListSource& src, const Cut& cut, float z_top, int32_t top,
                               uint64_t seed, int64_t position, Shared& s) {
  Best best = gumbel_start(z_top, top, seed, position);
  src.for_each([&](float z, int32_t id) {
    if (!cut.keeps(z, id) || !(__fadd_rn(z, kNoiseCeiling) >= best.v)) return;
    const uint32_t bits = word(noise_block(seed, position, static_cast<uint32_t>(id) >> 2), id & 3);
    if (!(__fadd_rn(z, noise_ceiling(bits)) >= best.v)) return;
    const Best b = {__fadd_rn(z, gumbel_from_bits(bits)), id};
    if (beats(b, best)) best = b;
  });
  return reduce_best(best, s.slots).id;
}

// Gathers the candidates whose level-0 bin is at most `last_bin` into the list (the caller
// knows that they fit).
__device__ ListSource gather(const RowSource& row, const Cut& cut, uint32_t last_bin, void* area,
                             Shared& s) {
  auto* list_z = static_cast<float*>(area);
  auto* list_id = reinterpret_cast<int32_t*>(list_z + kListCap);
  if (threadIdx.x == 0) s.listed = 0;
  __syncthreads();
  row.for_each([&](float z, int32_t id) {
    if (!cut.candidate(z) || (rank_key(z) >> digit_shift(0)) > last_bin) return;
    const uint32_t slot = atomicAdd(&s.listed, 1u);
    list_z[slot] = z;
    list_id[slot] = id;
  });
  __syncthreads();
  return {list_z, list_id, s.listed};
}

// The mass of the n_count first candidates in rank order (what top_k keeps), for top_p's
// target: a select by count alone, then one pass over the row summing the kept masses. The
// level-0 histogram (filled by the caller) is used, then refilled for the caller's own select.
__device__ unsigned long long top_k_mass(const RowSource& src, const Cut& cut, uint32_t n_count,
                                         Shared& s) {
  Cut k_cut = cut;
  choose_and_clear(0, n_count, ULLONG_MAX, s);
  radix_select(src, src, k_cut, /*weigh=*/false, n_count, ULLONG_MAX, s);
  unsigned long long mass = 0;
  src.for_each([&](float z, int32_t id) {
    if (k_cut.keeps(z, id)) mass += mass_of(__fsub_rn(z, cut.z_max));
  });
  mass = reduce_sum(mass, s.slots);  // synchronizes
  if (threadIdx.x == 0) {
    s.prefix = s.base_count = 0;
    s.base_mass = 0;
  }
  __syncthreads();
  histogram_pass(src, cut, /*weigh=*/true, 0, 0, s);
  return mass;
}

// Steps 3 and 4 for a row whose z_max is finite; `top` is the lowest id holding it. `area`:
// the block's dynamic shared memory (room for kListCap entries).
__device__ int32_t sample_filtered(const SampleRow& row, const RowSource& src, float z_max,
                                   int32_t top, void* area, Shared& s) {
  const bool k_on = row.top_k > 0 && row.top_k < src.vocab;
  const bool p_on = row.top_p < 1.0f;
  const bool m_on = row.min_p > 0.0f;
  Cut cut = {z_max, m_on ? row.log_min_p : -FLT_MAX};
  if (!k_on && !p_on && !m_on) {
    cut.all = true;
    return gumbel_pass(src, cut, top, row.seed, row.position, s);
  }
  if (p_on && !(row.top_p > 0.0f)) return top;  // the top token alone reaches p
  if (threadIdx.x == 0) {
    s.prefix = s.base_count = 0;
    s.base_mass = 0;
  }
  clear_histogram(s);
  __syncthreads();
  const Totals totals = histogram_pass(src, cut, p_on, 0, 0, s);
  uint32_t n_count = totals.candidates;
  if (k_on) n_count = min(n_count, static_cast<uint32_t>(row.top_k));
  if (n_count <= 1) return top;  // a single kept token: no noise drawn
  unsigned long long target = ULLONG_MAX;
  if (p_on) {
    // top_p over what min_p and top_k left, renormalized (vLLM's order, sampler.h).
    const unsigned long long mass =
        n_count < totals.candidates ? top_k_mass(src, cut, n_count, s) : totals.z_sum;
    target = static_cast<unsigned long long>(
        ceil(static_cast<double>(row.top_p) * static_cast<double>(mass)));
  }
  const bool select = p_on || n_count < totals.candidates;
  if (select) choose_and_clear(0, n_count, target, s);
  // The kept tokens all lie in the level-0 bins up to the chosen one.
  const uint32_t listed = select ? s.base_count + s.bucket_count : totals.candidates;
  if (listed <= kListCap) {
    const ListSource list = gather(src, cut, select ? s.prefix : kBins - 1u, area, s);
    const uint32_t n = select ? radix_select(list, src, cut, p_on, n_count, target, s) : n_count;
    if (n <= 1) return top;
    return gumbel_pass(list, cut, src.z[top], top, row.seed, row.position, s);
  }
  const uint32_t n = select ? radix_select(src, src, cut, p_on, n_count, target, s) : n_count;
  if (n <= 1) return top;
  return gumbel_pass(src, cut, top, row.seed, row.position, s);
}

__global__ void __launch_bounds__(kThreads, 1)
    sample_rows(const SampleRow* rows, const LogitEdit* edits, const float* logits, int32_t vocab,
                int32_t* tokens, float* scratch, size_t stride) {
  extern __shared__ uint32_t edited_bitmap[];
  __shared__ Shared s;
  const SampleRow row = rows[blockIdx.x];
  const float* raw = logits + static_cast<size_t>(row.logits_row) * static_cast<size_t>(vocab);
  const LogitEdit* row_edits = edits + row.edits_begin;
  const int32_t n_edits = max(0, row.edits_end - row.edits_begin);
  const float inv_t = __frcp_rn(row.temperature);
  const bool greedy = !(row.temperature > 0.0f) || !isfinite(inv_t);
  const bool scale = !greedy && inv_t != 1.0f;
  // Later passes read z from scratch when it differs from the logits, else the logits.
  const bool copy = !greedy && (n_edits > 0 || scale);
  float* z_row = scratch + static_cast<size_t>(blockIdx.x) * stride;
  if (n_edits > 0) mark_edits(row_edits, n_edits, vocab, edited_bitmap);
  const Best local =
      scan_row(raw, vocab, row_edits, n_edits, edited_bitmap, inv_t, scale, copy ? z_row : nullptr);
  const Best best = reduce_best(local, s.slots);  // synchronizes, so z_row is complete
  int32_t token = best.id;
  if (!greedy) {
    const float z_max = __fadd_rn(best.v, 0.0f);
    if (z_max == kNegInf) {
      token = -1;
    } else if (z_max != kPosInf) {
      const RowSource src = {copy ? z_row : raw, vocab};
      token = sample_filtered(row, src, z_max, best.id, edited_bitmap, s);
    }  // +inf: the lowest id among the +inf ones, best.id
  }
  if (token < 0) token = fallback(raw, vocab, row_edits, n_edits, s);
  if (threadIdx.x == 0) tokens[blockIdx.x] = token;
}

// Dynamic shared memory: the edited-id bitmap in the first pass, then the candidate list.
size_t area_bytes(int32_t vocab) {
  const size_t bitmap_bytes = static_cast<size_t>((vocab + 31) / 32) * sizeof(uint32_t);
  return std::max(bitmap_bytes, kListCap * (sizeof(float) + sizeof(int32_t)));
}

// Raises the kernel's dynamic shared memory limit on the current device when a launch needs
// more than it was last allowed: a host call, not a stream operation, made once per device and
// vocabulary size (by sample_scratch_bytes, before any capture, or by the first launch).
cudaError_t allow_shared_memory(size_t bytes) {
  constexpr int kDevices = 64;
  static std::atomic<size_t> allowed[kDevices];
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || device < 0 || device >= kDevices) device = 0;
  if (allowed[device].load() >= bytes) return cudaSuccess;
  const cudaError_t err = cudaFuncSetAttribute(
      sample_rows, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
  if (err == cudaSuccess) allowed[device].store(bytes);
  return err;
}

size_t row_stride(int32_t vocab) {
  return static_cast<size_t>((vocab + kStrideAlign - 1) / kStrideAlign) * kStrideAlign;
}

}  // namespace

size_t sample_scratch_bytes(int32_t max_rows, int32_t vocab) {
  if (max_rows <= 0 || vocab <= 0) return 0;
  // Readies the kernel for this vocabulary now, outside any graph capture; without a device
  // the error is cleared and the first launch tries again.
  if (allow_shared_memory(area_bytes(vocab)) != cudaSuccess) cudaGetLastError();
  return static_cast<size_t>(max_rows) * row_stride(vocab) * sizeof(float);
}

void launch_sample(const SampleRow* rows, int32_t n_rows, const LogitEdit* edits, float* logits,
                   int32_t vocab, int32_t* tokens, void* scratch, void* stream) {
  if (n_rows <= 0) return;
  const size_t area = area_bytes(vocab);
  const cudaError_t allowed = allow_shared_memory(area);
  if (allowed != cudaSuccess) {
    throw std::runtime_error(std::string("launch_sample: shared memory: ") +
                             cudaGetErrorString(allowed));
  }
  sample_rows<<<n_rows, kThreads, area, static_cast<cudaStream_t>(stream)>>>(
      rows, edits, logits, vocab, tokens, static_cast<float*>(scratch), row_stride(vocab));
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    throw std::runtime_error(std::string("launch_sample: ") + cudaGetErrorString(err));
  }
}

}  // namespace tandem::cuda
