// PackedWeights' representation and what the two dispatch files share: kernels.cpp (packing,
// the 16-bit and F32 matmuls) and quant_dispatch.cpp (the quantized matmul). Internal to
// runner/kernels/.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "runner/kernels/isa.h"
#include "runner/kernels/kernels.h"
#include "runner/kernels/quant_matmul.h"
#include "runner/util/huge_pages.h"
#include "runner/util/thread_pool.h"

namespace tandem::kernels {

// Zeroed storage on huge pages (runner/util/huge_pages.h): the weights are streamed end to
// end every step and 4 KiB pages would cost a TLB miss every 4 KiB.
struct AlignedBuffer {
  LargeBytes bytes;
  uint8_t* data = nullptr;
  size_t size = 0;

  // Zeroed to the next 64 bytes: a vector load at the end may read into them. Where the
  // caller writes all of the n bytes itself (`filled`), only the padding is zeroed: a
  // model's quantized weights are copied in whole, and zeroing them first wrote every
  // page twice at load.
  explicit AlignedBuffer(size_t n, bool filled = false)
      : bytes(allocate_large(padded(n))), data(bytes.get()), size(n) {
    const size_t from = filled ? n : 0;
    std::memset(data + from, 0, padded(n) - from);
  }
  static size_t padded(size_t n) { return (std::max<size_t>(n, 1) + 63) / 64 * 64; }
};

namespace detail {
// One quantized matrix of a matmul (a whole PackedWeights, or one part of it) and the first
// of y's columns its outputs go to.
struct QuantPiece {
  const PackedWeights::Impl* impl = nullptr;
  int64_t col = 0;
};
}  // namespace detail

struct PackedWeights::Impl {
  detail::PackedType type = detail::PackedType::kF32;
  int64_t n_out = 0;
  int64_t n_in = 0;
  size_t panel_bytes = 0;
  std::optional<detail::QuantKind> quant;  // set: GGUF rows of row_bytes, the quantized path
  size_t row_bytes = 0;
  bool interleaved = false;  // the rows interleaved by sixteen (quant_interleave.h)
  std::unique_ptr<AlignedBuffer> buffer;
  // Sources of more than one type: each run of one type packed alone, its outputs the next
  // ones in order (no buffer of its own).
  std::vector<PackedWeights> parts;
  // The parts as one quantized job, each with its first column of y, where they fit
  // (detail::quant_pieces_fit); decided once, at packing. Empty otherwise.
  std::vector<detail::QuantPiece> pieces;
};

namespace detail {

// Ranges of outputs a matmul is split into, per pool thread. A decode step of one row
// streams its weights from memory, and each range restarts that stream cold (the
// prefetchers and the software prefetch ahead start over): one range per thread there was
// 10-20% faster per step (BF16 and Q5_0 `BM_DecodeStep` M:1, and a Q4_K_M / BF16
// `tandem bench` at one stream). Batches compute more per byte and keep two per thread, so
// that a thread the hypervisor delays leaves an unclaimed range to the other; four (shorter
// streams, more restarts) were 3-10% slower on a Zen 5 (`BM_DecodeStep` BF16 M:16 and M:32,
// and the AVX2 path's BF16 and Q8_0 at M:8 and M:32). (The quantized decode step and the
// 16-bit and F32 batches split in guided rounds instead, kGuidedRounds below; two ranges a
// thread remain for the quantized batches' lane form.)
constexpr int64_t tasks_per_thread(int64_t n_rows) { return n_rows == 1 ? 1 : 2; }

// A quantized decode step's ranges (one activation row), and a 16-bit or F32 batch's
// (kernels.cpp's matmul), guided: a first round of one range per thread holds 70% of the outputs,
// then a round of 20% and one of 10%, each shared evenly by the threads. Ranges are claimed
// in order, so whichever thread finishes its share first takes the next, and the two end
// within a small range of each other; with one range per thread, the thread the hypervisor
// or the other work on its core slowed held the other idle at every step's 120-odd matmuls
// (22% of both threads' time spun in the pool, `perf` of `tandem generate` on smollm2
// Q4_K_M). A round's share in thousandths, cumulative:
constexpr int64_t kGuidedRounds[] = {0, 700, 900, 1000};
constexpr int64_t kGuidedRoundCount = 3;
// A thread slot's region of a guided split, in parts: its rounds' thousandths.
constexpr int64_t kGuidedParts = kGuidedRounds[kGuidedRoundCount];

// Where task t of a guided split over `threads` starts, in parts of kGuidedParts * threads.
// Thread slot i's rounds are consecutive pieces of region i (parts [kGuidedParts i,
// kGuidedParts (i + 1))), so a thread that claims slot i in every round walks one contiguous
// stretch of the weights, and each range's end is the start of its next one (panel_loop prefetches
// across it).
inline int64_t guided_start(int64_t t, int64_t threads) {
  const int64_t round = t / threads, i = t % threads;
  if (round >= kGuidedRoundCount) return kGuidedParts * threads;
  return kGuidedParts * i + kGuidedRounds[round];
}
// Where task t's range ends. Tasks are claimed in index order, which is not the order of
// their starts, so task t + 1's start is not task t's end.
inline int64_t guided_end(int64_t t, int64_t threads) {
  const int64_t round = t / threads, i = t % threads;
  if (round >= kGuidedRoundCount) return kGuidedParts * threads;
  return kGuidedParts * i + kGuidedRounds[round + 1];
}

// The first unit of task t of n_tasks, and the unit past its last: even ranges, or, where
// the matmul is guided, the rounds above.
inline int64_t range_start(int64_t t, int64_t n_tasks, int64_t n_units, int64_t guided_threads) {
  if (guided_threads == 0) return t * n_units / n_tasks;
  return n_units * guided_start(t, guided_threads) / (kGuidedParts * guided_threads);
}
inline int64_t range_end(int64_t t, int64_t n_tasks, int64_t n_units, int64_t guided_threads) {
  if (guided_threads == 0) return (t + 1) * n_units / n_tasks;
  return n_units * guided_end(t, guided_threads) / (kGuidedParts * guided_threads);
}

// The integer-dot activations each quantized kind multiplies (ggml's vec_dot_type).
ActFormat act_format_of(QuantKind kind);
bool has_avx_vnni();  // AVX-VNNI (the 256-bit VEX form), from CPUID

// The most pieces one quantized matmul takes (Q, K and V of three types).
inline constexpr size_t kMaxQuantPieces = 4;

// y (n_rows x n_out, row-major) from the pieces, which share one activation format and
// layout (quant_pieces_fit): the activations quantized once, and every piece's outputs
// split into ranges over the pool in one job (quant_dispatch.cpp).
void quant_matmul(ThreadPool& pool, std::span<const QuantPiece> pieces, int64_t n_out,
                  const float* x, int64_t n_rows, float* y);
// Whether a matrix packed in parts of several quantized types (llama-quantize's mixes give
// some layers' attn_v a type of its own) can run as one quant_matmul: its parts are all
// quantized with the same activation format and layout, and no more than kMaxQuantPieces.
bool quant_pieces_fit(const PackedWeights::Impl& impl);

}  // namespace detail
}  // namespace tandem::kernels
