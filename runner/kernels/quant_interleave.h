// Q4_0 and Q5_0 weights interleaved by sixteen rows: the layout their vector kernels read
// (quant_interleaved.h), which keeps one weight row per 32-bit lane, as the lane form keeps
// one activation row per lane (quant_lanes.h).
//
// Why: a GGUF row keeps each block's 32 quants together, so a kernel that reads rows as
// stored sums every block across the lanes of a vector and then scales it lane by lane:
// on smollm2's 576-wide Q5_0 rows those shuffles, the F16 scales picked out of the blocks
// and the block-ordered float adds cost more than the dot products, and the one-row decode
// step ran at 21 GB/s a thread from L2, under the 30 GB/s a thread reads from memory
// (docs/performance.md). Interleaved, one vpdpbusd adds four products to each of sixteen
// rows' block sums, a block's sixteen scales are one vcvtph2ps, and the float steps run
// sixteen rows wide.
//
// The layout: rows in groups of kInterleaveRows (n_out a multiple of it), a group's blocks
// in order, block j of the group one record of 16 * sizeof(block) bytes (no byte added):
//   d:  the sixteen rows' F16 scales, row r's at word r;
//   qh: Q5_0 only, eight 64-bit words, one per step v (quants 4v .. 4v + 3 of every row):
//       bits 4r .. 4r + 3 of word v are bits 4v .. 4v + 3 of row r's qh;
//   qs: four 64-byte vectors u: bytes 4r .. 4r + 3 of vector u are row r's qs[4u .. 4u + 3],
//       so their low nibbles are quants 4u .. 4u + 3 (step u) and their high nibbles quants
//       16 + 4u .. 16 + 4u + 3 (step u + 4).
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

// A record's layout, the one place it is spelled: its bytes, where its qh words (Q5_0 only)
// and its qs vectors start, and what its unsigned quants exceed the real ones by.
struct InterleavedRecord {
  size_t bytes, qh, qs;
  int offset;
};
constexpr InterleavedRecord interleaved_record(bool fifth_bit) {
  return fifth_bit ? InterleavedRecord{kInterleaveRows * sizeof(gguf::BlockQ5_0), 32, 96, 16}
                   : InterleavedRecord{kInterleaveRows * sizeof(gguf::BlockQ4_0), 0, 32, 8};
}

// Whether weights of `kind` with n_out rows are stored interleaved.
bool interleaves(QuantKind kind, int64_t n_out);

// n_out GGUF rows (n_in values each) at `rows` to the interleaved layout at `out` (the same
// number of bytes). interleaves(kind, n_out) must hold.
void interleave_rows(QuantKind kind, const uint8_t* rows, int64_t n_out, int64_t n_in,
                     uint8_t* out);

// Row `row` of interleaved weights `w` back to its GGUF blocks at `out`.
void deinterleave_row(QuantKind kind, const uint8_t* w, int64_t n_in, int64_t row, uint8_t* out);

}  // namespace tandem::kernels::detail
