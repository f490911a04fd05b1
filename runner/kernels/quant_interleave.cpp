// The interleaved layout (quant_interleave.h), both ways.
#include "runner/kernels/quant_interleave.h"

#include <cstddef>
#include <cstring>
#include <type_traits>

#include "runner/gguf/gguf.h"
#include "runner/gguf/quant.h"
#include "runner/kernels/quant_matmul.h"

namespace tandem::kernels::detail {
namespace {

// How a block's field moves into a record: as sixteen halves, as words of sixteen rows, or
// (Q5_0's and Q5_1's qh) as the rows' bits of each step side by side.
enum class Move : uint8_t { kHalves, kWords, kFifthBits };
struct Field {
  Move move;
  uint8_t at, bytes;  // in the GGUF block; the record gives it 16 * bytes
};
// A type's block and its fields in record order (each field is where the one before ends).
struct Layout {
  size_t block_bytes;
  int64_t block_values;
  int n_fields;
  Field fields[4];
};

Layout layout_of(QuantKind kind) {
  using namespace gguf;
  switch (kind) {
    case QuantKind::kQ5_0:
      return {sizeof(BlockQ5_0),
              32,
              3,
              {{Move::kHalves, offsetof(BlockQ5_0, d), 2},
               {Move::kFifthBits, offsetof(BlockQ5_0, qh), 4},
               {Move::kWords, offsetof(BlockQ5_0, qs), 16}}};
    case QuantKind::kQ5_1:
      return {sizeof(BlockQ5_1),
              32,
              4,
              {{Move::kHalves, offsetof(BlockQ5_1, d), 2},
               {Move::kHalves, offsetof(BlockQ5_1, m), 2},
               {Move::kFifthBits, offsetof(BlockQ5_1, qh), 4},
               {Move::kWords, offsetof(BlockQ5_1, qs), 16}}};
    case QuantKind::kQ4_1:
      return {sizeof(BlockQ4_1),
              32,
              3,
              {{Move::kHalves, offsetof(BlockQ4_1, d), 2},
               {Move::kHalves, offsetof(BlockQ4_1, m), 2},
               {Move::kWords, offsetof(BlockQ4_1, qs), 16}}};
    case QuantKind::kQ8_0:
      return {sizeof(BlockQ8_0),
              32,
              2,
              {{Move::kHalves, offsetof(BlockQ8_0, d), 2},
               {Move::kWords, offsetof(BlockQ8_0, qs), 32}}};
    case QuantKind::kIq4Nl:
      return {sizeof(BlockIq4Nl),
              32,
              2,
              {{Move::kHalves, offsetof(BlockIq4Nl, d), 2},
               {Move::kWords, offsetof(BlockIq4Nl, qs), 16}}};
    case QuantKind::kQ2_K:
      return {sizeof(BlockQ2_K),
              256,
              3,
              {{Move::kWords, offsetof(BlockQ2_K, scales), 16 + 64},
               {Move::kHalves, offsetof(BlockQ2_K, d), 2},
               {Move::kHalves, offsetof(BlockQ2_K, dmin), 2}}};
    case QuantKind::kQ3_K:
      return {sizeof(BlockQ3_K),
              256,
              2,
              {{Move::kWords, offsetof(BlockQ3_K, hmask), 32 + 64 + 12},
               {Move::kHalves, offsetof(BlockQ3_K, d), 2}}};
    case QuantKind::kQ4_K:
      return {sizeof(BlockQ4_K),
              256,
              3,
              {{Move::kHalves, offsetof(BlockQ4_K, d), 2},
               {Move::kHalves, offsetof(BlockQ4_K, dmin), 2},
               {Move::kWords, offsetof(BlockQ4_K, scales), 12 + 128}}};
    case QuantKind::kQ5_K:
      return {sizeof(BlockQ5_K),
              256,
              3,
              {{Move::kHalves, offsetof(BlockQ5_K, d), 2},
               {Move::kHalves, offsetof(BlockQ5_K, dmin), 2},
               {Move::kWords, offsetof(BlockQ5_K, scales), 12 + 32 + 128}}};
    case QuantKind::kQ6_K:
      return {sizeof(BlockQ6_K),
              256,
              2,
              {{Move::kWords, offsetof(BlockQ6_K, ql), 128 + 64 + 16},
               {Move::kHalves, offsetof(BlockQ6_K, d), 2}}};
    case QuantKind::kIq4Xs:  // the 2-byte scales_h moves as a half would
      return {sizeof(BlockIq4Xs),
              256,
              3,
              {{Move::kHalves, offsetof(BlockIq4Xs, d), 2},
               {Move::kHalves, offsetof(BlockIq4Xs, scales_h), 2},
               {Move::kWords, offsetof(BlockIq4Xs, scales_l), 4 + 128}}};
    case QuantKind::kQ4_0:
    default:  // interleaves() admits no other kind
      return {sizeof(BlockQ4_0),
              32,
              2,
              {{Move::kHalves, offsetof(BlockQ4_0, d), 2},
               {Move::kWords, offsetof(BlockQ4_0, qs), 16}}};
  }
}

// Row r's field between its block and the record's copy of the field (`rec`): into the
// record where kToRecord (fifth bits are OR-ed in, so that field must start zeroed), else
// back out of it.
template <bool kToRecord>
using RecordPtr = std::conditional_t<kToRecord, uint8_t*, const uint8_t*>;
template <bool kToRecord>
using BlockPtr = std::conditional_t<kToRecord, const uint8_t*, uint8_t*>;

template <bool kToRecord>
void move_field(const Field& f, RecordPtr<kToRecord> rec, BlockPtr<kToRecord> block, int64_t r) {
  auto copy = [&](size_t rec_at, size_t block_at, size_t n) {
    if constexpr (kToRecord) {
      std::memcpy(rec + rec_at, block + block_at, n);
    } else {
      std::memcpy(block + block_at, rec + rec_at, n);
    }
  };
  if (f.move == Move::kHalves) return copy(2 * r, f.at, 2);
  if (f.move == Move::kWords) {
    for (int w = 0; w < f.bytes / 4; ++w) copy(64 * w + 4 * r, f.at + 4 * w, 4);
    return;
  }
  const int at = 4 * static_cast<int>(r);  // kFifthBits: a 32-bit qh, eight steps of four
  uint32_t bits = 0;
  if constexpr (kToRecord) std::memcpy(&bits, block + f.at, 4);
  for (int v = 0; v < 8; ++v) {
    uint64_t word;
    std::memcpy(&word, rec + 8 * v, 8);
    if constexpr (kToRecord) {
      word |= uint64_t{(bits >> (4 * v)) & 0xFu} << at;
      std::memcpy(rec + 8 * v, &word, 8);
    } else {
      bits |= static_cast<uint32_t>((word >> at) & 0xF) << (4 * v);
    }
  }
  if constexpr (!kToRecord) std::memcpy(block + f.at, &bits, 4);
}

// Row r's block between GGUF and the record at `rec`, as move_field.
template <bool kToRecord>
void move_block(const Layout& l, RecordPtr<kToRecord> rec, BlockPtr<kToRecord> block, int64_t r) {
  size_t at = 0;
  for (int i = 0; i < l.n_fields; ++i) {
    move_field<kToRecord>(l.fields[i], rec + at, block, r);
    at += kInterleaveRows * l.fields[i].bytes;
  }
}

}  // namespace

bool interleaves(QuantKind kind, int64_t n_out, bool wide_vnni) {
  // Every kind has a 512-bit VNNI kernel; Q4_0 and Q5_0 have a 256-bit one as well.
  const bool every_form = kind == QuantKind::kQ4_0 || kind == QuantKind::kQ5_0;
  return (every_form || wide_vnni) && n_out > 0 && n_out % kInterleaveRows == 0;
}

void interleave_rows(QuantKind kind, const uint8_t* rows, int64_t n_out, int64_t n_in,
                     uint8_t* out) {
  const Layout l = layout_of(kind);
  const int64_t nb = n_in / l.block_values;
  const size_t record_bytes = kInterleaveRows * l.block_bytes, row_bytes = nb * l.block_bytes;
  std::memset(out, 0, n_out / kInterleaveRows * nb * record_bytes);
  for (int64_t o = 0; o < n_out; ++o) {
    for (int64_t j = 0; j < nb; ++j) {
      uint8_t* rec = out + (o / kInterleaveRows * nb + j) * record_bytes;
      const uint8_t* block = rows + o * row_bytes + j * l.block_bytes;
      move_block<true>(l, rec, block, o % kInterleaveRows);
    }
  }
}

void deinterleave_row(QuantKind kind, const uint8_t* w, int64_t n_in, int64_t row, uint8_t* out) {
  const Layout l = layout_of(kind);
  const int64_t nb = n_in / l.block_values;
  const size_t record_bytes = kInterleaveRows * l.block_bytes;
  for (int64_t j = 0; j < nb; ++j) {
    const uint8_t* rec = w + ((row / kInterleaveRows) * nb + j) * record_bytes;
    move_block<false>(l, rec, out + j * l.block_bytes, row % kInterleaveRows);
  }
}

}  // namespace tandem::kernels::detail
