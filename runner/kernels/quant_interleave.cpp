// The interleaved layout of Q4_0 and Q5_0 rows (quant_interleave.h), both ways.
#include "runner/kernels/quant_interleave.h"

#include <cstring>

#include "runner/gguf/quant.h"
#include "runner/kernels/quant_matmul.h"

namespace tandem::kernels::detail {
namespace {

InterleavedRecord record_of(QuantKind kind) { return interleaved_record(kind == QuantKind::kQ5_0); }

// A GGUF block's fields, whichever type (qh null for Q4_0).
struct BlockFields {
  const uint8_t* d;
  const uint8_t* qh;
  const uint8_t* qs;
};
BlockFields fields_of(QuantKind kind, const uint8_t* row, int64_t j) {
  if (kind == QuantKind::kQ5_0) {
    const auto* b = reinterpret_cast<const gguf::BlockQ5_0*>(row) + j;
    return {reinterpret_cast<const uint8_t*>(&b->d), b->qh, b->qs};
  }
  const auto* b = reinterpret_cast<const gguf::BlockQ4_0*>(row) + j;
  return {reinterpret_cast<const uint8_t*>(&b->d), nullptr, b->qs};
}

// Block j of the sixteen rows from `first_row` (row_bytes apart) into its record, each
// field written once.
void store_record(uint8_t* rec, const InterleavedRecord& f, QuantKind kind,
                  const uint8_t* first_row, size_t row_bytes, int64_t j) {
  uint64_t qh[8] = {};
  for (int64_t r = 0; r < kInterleaveRows; ++r) {
    const BlockFields in = fields_of(kind, first_row + r * row_bytes, j);
    std::memcpy(rec + 2 * r, in.d, 2);
    for (int u = 0; u < 4; ++u) std::memcpy(rec + f.qs + 64 * u + 4 * r, in.qs + 4 * u, 4);
    if (in.qh == nullptr) continue;
    uint32_t bits;
    std::memcpy(&bits, in.qh, 4);
    for (int v = 0; v < 8; ++v) qh[v] |= uint64_t{(bits >> (4 * v)) & 0xFu} << (4 * r);
  }
  if (kind == QuantKind::kQ5_0) std::memcpy(rec + f.qh, qh, sizeof(qh));
}

// The inverse: row lane r's block out of record `rec` into the GGUF block at `out`.
void load_block(const uint8_t* rec, const InterleavedRecord& f, int64_t r, uint8_t* d, uint8_t* qh,
                uint8_t* qs) {
  std::memcpy(d, rec + 2 * r, 2);
  for (int u = 0; u < 4; ++u) std::memcpy(qs + 4 * u, rec + f.qs + 64 * u + 4 * r, 4);
  if (qh == nullptr) return;
  uint32_t bits = 0;
  const int at = 4 * static_cast<int>(r);
  for (int v = 0; v < 8; ++v) {
    uint64_t word;
    std::memcpy(&word, rec + f.qh + 8 * v, 8);
    bits |= static_cast<uint32_t>((word >> at) & 0xF) << (4 * v);
  }
  std::memcpy(qh, &bits, 4);
}

}  // namespace

bool interleaves(QuantKind kind, int64_t n_out) {
  return (kind == QuantKind::kQ4_0 || kind == QuantKind::kQ5_0) && n_out > 0 &&
         n_out % kInterleaveRows == 0;
}

void interleave_rows(QuantKind kind, const uint8_t* rows, int64_t n_out, int64_t n_in,
                     uint8_t* out) {
  const InterleavedRecord f = record_of(kind);
  const int64_t nb = n_in / 32;
  const size_t row_bytes = nb * f.bytes / kInterleaveRows;
  for (int64_t g0 = 0; g0 < n_out; g0 += kInterleaveRows) {
    for (int64_t j = 0; j < nb; ++j) {
      store_record(out + (g0 / kInterleaveRows * nb + j) * f.bytes, f, kind, rows + g0 * row_bytes,
                   row_bytes, j);
    }
  }
}

void deinterleave_row(QuantKind kind, const uint8_t* w, int64_t n_in, int64_t row, uint8_t* out) {
  const InterleavedRecord f = record_of(kind);
  const int64_t nb = n_in / 32;
  for (int64_t j = 0; j < nb; ++j) {
    const uint8_t* rec = w + ((row / kInterleaveRows) * nb + j) * f.bytes;
    if (kind == QuantKind::kQ5_0) {
      auto* b = reinterpret_cast<gguf::BlockQ5_0*>(out) + j;
      load_block(rec, f, row % kInterleaveRows, reinterpret_cast<uint8_t*>(&b->d), b->qh, b->qs);
    } else {
      auto* b = reinterpret_cast<gguf::BlockQ4_0*>(out) + j;
      load_block(rec, f, row % kInterleaveRows, reinterpret_cast<uint8_t*>(&b->d), nullptr, b->qs);
    }
  }
}

}  // namespace tandem::kernels::detail
