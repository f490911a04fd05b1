// Weights interleaved by sixteen rows: the layout the interleaved vector kernels read
// (quant_interleaved.h for the blocks of 32, quant_interleaved_k.h for the K-quants and IQ4_XS),
// which keeps one weight row per 32-bit lane, as the lane form keeps one activation row per lane
// (quant_lanes.h).
//
// Why: a GGUF row keeps each block's quants together, so a kernel that reads rows as stored
// sums every block across the lanes of a vector and then scales it lane by lane: on
// smollm2's 576-wide Q5_0 rows those shuffles, the F16 scales picked out of the blocks and
// the block-ordered float adds cost more than the dot products, and the one-row decode step
// ran at 21 GB/s a thread from L2, under the 30 GB/s a thread reads from memory
// (docs/performance.md). Interleaved, one vpdpbusd adds four products to each of sixteen
// rows' sums, a block's sixteen scales are one load, and the float steps run sixteen rows
// wide. Q4_K and Q6_K (the bulk of a Q4_K_M file whose rows are whole super-blocks) gained
// the same way: BM_QuantMatmul 2048 x 2048 on a Zen 5, medians of 5 alternating rounds,
// stored rows -> interleaved: from memory, one row Q4_K 70.0 -> 49.5 us, Q6_K 96.7 -> 65.3,
// eight rows 283 -> 141 and 308 -> 149; from L2, 32 rows 155 -> 114 and 161 -> 132. Q5_K
// likewise (one row 81.0 -> 59.0 us, eight 269 -> 115).
//
// The layout: rows in groups of kInterleaveRows (n_out a multiple of it), a group's blocks
// in order, block j of the group one record of 16 * sizeof(block) bytes (no byte added).
// A record transposes the block's fields, in the order layout_of lists them:
//   a 2-byte field (an F16 scale): sixteen halves, row r's at word r;
//   a run of 4-byte words: each word w becomes 64 bytes, row r's copy at bytes 4r .. 4r + 3.
//   So for the blocks of 32 the quants' vector u holds every row's qs[4u .. 4u + 3], whose low
//   nibbles are quants 4u .. 4u + 3 and whose high ones 16 + 4u .. 16 + 4u + 3; for Q4_K
//   vector w of the qs holds qs[4w ..], and so on;
//   Q5_0's and Q5_1's qh, the one field not moved as words: eight 64-bit words, one per step v
//   (quants 4v .. 4v + 3 of every row): bits 4r .. 4r + 3 of word v are bits 4v .. 4v + 3 of
//   row r's qh.
// The quants and scales are the GGUF block's, only moved: every form computes the same
// integers and float steps from them (quant_matmul.h), and deinterleave_row gives the
// portable form its rows back.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runner/gguf/quant.h"

namespace tandem::kernels::detail {

enum class QuantKind : uint8_t;  // quant_matmul.h, which includes this header

inline constexpr int64_t kInterleaveRows = 16;

// The legacy types' records (blocks of 32: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL) are spelled
// for the kernels by interleaved_record (quant_interleaved.h): d's halves, then m's (Q4_1,
// Q5_1), then the fifth bits (Q5_0, Q5_1), then the qs' four words (Q8_0's eight).

// Q2_K's record, the block's order: the scales' 4 words, the qs' 16, then d and dmin.
struct Q2KRecord {
  static constexpr size_t kBytes = kInterleaveRows * sizeof(gguf::BlockQ2_K);
  static constexpr size_t kScales = 0, kQs = 256, kD = 1280, kDmin = 1312;
};
static_assert(Q2KRecord::kDmin + 32 == Q2KRecord::kBytes);
// Q3_K's record, the block's order: the hmask's 8 words, the qs' 16, the scales' 3, then d.
struct Q3KRecord {
  static constexpr size_t kBytes = kInterleaveRows * sizeof(gguf::BlockQ3_K);
  static constexpr size_t kHmask = 0, kQs = 512, kScales = 1536, kD = 1728;
};
static_assert(Q3KRecord::kD + 32 == Q3KRecord::kBytes);
// Q4_K's record: d and dmin (sixteen halves each), the scales' three words, the qs' 32.
struct Q4KRecord {
  static constexpr size_t kBytes = kInterleaveRows * sizeof(gguf::BlockQ4_K);
  static constexpr size_t kD = 0, kDmin = 32, kScales = 64, kQs = 256;
};
// Q5_K's: Q4_K's with the qh's eight words between the scales and the qs.
struct Q5KRecord {
  static constexpr size_t kBytes = kInterleaveRows * sizeof(gguf::BlockQ5_K);
  static constexpr size_t kD = 0, kDmin = 32, kScales = 64, kQh = 256, kQs = 768;
};
// Q6_K's record, the block's order: the ql's 32 words, the qh's 16, the scales' 4, then d.
struct Q6KRecord {
  static constexpr size_t kBytes = kInterleaveRows * sizeof(gguf::BlockQ6_K);
  static constexpr size_t kQl = 0, kQh = 2048, kScales = 3072, kD = 3328;
};
// IQ4_XS's, the block's order: d, scales_h (sixteen 16-bit words each), the scales_l word, the
// qs' 32.
struct Iq4XsRecord {
  static constexpr size_t kBytes = kInterleaveRows * sizeof(gguf::BlockIq4Xs);
  static constexpr size_t kD = 0, kScalesH = 32, kScalesL = 64, kQs = 128;
};
static_assert(Q4KRecord::kQs + 64 * 32 == Q4KRecord::kBytes);
static_assert(Iq4XsRecord::kQs + 64 * 32 == Iq4XsRecord::kBytes);
static_assert(Q5KRecord::kQs + 64 * 32 == Q5KRecord::kBytes);
static_assert(Q6KRecord::kD + 32 == Q6KRecord::kBytes);

// Whether weights of `kind` with n_out rows are stored interleaved. Q4_0 and Q5_0 have an
// interleaved kernel in every vector form; every other type (Q4_1, Q5_1, Q8_0, IQ4_NL, the
// K-quants, IQ4_XS) only in the 512-bit VNNI one (`wide_vnni`: the kernels in use have it),
// so elsewhere they stay as stored, where the AVX2 forms read them faster than the portable
// form reads them put back.
bool interleaves(QuantKind kind, int64_t n_out, bool wide_vnni);

// n_out GGUF rows (n_in values each) at `rows` to the interleaved layout at `out` (the same
// number of bytes). The layout must be one interleaves() can choose for kind and n_out.
void interleave_rows(QuantKind kind, const uint8_t* rows, int64_t n_out, int64_t n_in,
                     uint8_t* out);

// Row `row` of interleaved weights `w` back to its GGUF blocks at `out`.
void deinterleave_row(QuantKind kind, const uint8_t* w, int64_t n_in, int64_t row, uint8_t* out);

}  // namespace tandem::kernels::detail
