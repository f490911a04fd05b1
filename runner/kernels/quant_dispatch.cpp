// The quantized matmul's dispatch: the activations quantized once, the forms chosen by batch
// and CPU (streamed, lanes, interleaved, AMX-INT8), and the outputs split into ranges over
// the pool. The arithmetic is quant_matmul.h's and its ISA files'.
#include <algorithm>
#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "runner/kernels/packed_impl.h"
#include "runner/kernels/quant_matmul.h"
#include "runner/kernels/quantize_q8.h"
#include "runner/kernels/shared_prep.h"

namespace tandem::kernels::detail {
namespace {

// The quantized path: activations quantized once per call (into a buffer that lives as
// long as the submitting thread; from kRowsToSharePrep rows by the tasks together), then
// ranges of outputs over the pool. The ranges are whole multiples of kQuantUnit outputs
// (the rows decoded together), not of the 64-wide panels, so that a 576-output matrix
// splits as evenly over two threads at M = 1 as at 32.
constexpr int64_t kQuantUnit = 16;
// Interleaved weights (quant_interleave.h) are computed a whole group of rows at a time: a
// range that split a group would compute it on both sides.
static_assert(kQuantUnit % kInterleaveRows == 0);
// From how many rows a batch takes the lane form (quant_lanes.h); below, the streamed form
// (quant_streams.h: each span decoded in registers once for every row). AVX-512 VNNI: from 9,
// AVX2: from 4. The streamed form against the lane forms it replaced (VNNI's folded one up
// to 8 rows), on a Zen 5, alternating: `BM_DecodeStep<kQ5_0>` VNNI M:2 5.79 -> 3.92 ms, M:3
// 6.27 -> 4.71; `BM_QuantMatmul` 2048 x 2048 in L2, medians of 6-8 rounds, streamed / lane:
// M:5 0.62-0.65, M:6 0.70-0.73, M:7 0.67-0.78, M:8 0.76-0.85 (from DRAM 0.88-0.91); AVX2
// (TANDEM_ISA=avx2) M:2 7.85 -> 5.90 (the row form before), M:3 9.08 -> 7.38, but M:4 9.2-9.4
// -> 10.4-10.7, so AVX2 keeps its lane form there.
// From how many rows a batch of interleaved quantized weights takes AMX-INT8: one tile of
// activation rows. At 16 the two forms were level (`bench_matmul` `BM_QuantMatmul` in L2,
// Q5_0 576 wide 64-69 -> 61-62 us, Q4_K 88 -> 84), at 32 AMX ahead (Q5_0 125-130 -> 107-118,
// Q4_K 161-166 -> 115-122, Q6_K 176 -> 104).
constexpr int64_t kAmxQuantRows = 16;

int64_t lanes_from_rows(bool vnni) { return (vnni ? kVnniStreamRows : kAvx2StreamRows) + 1; }

// Activations quantized by the tasks together (SharedPrep), in blocks.
struct Quantizing {
  ActFormat format;
  const float* x;
  QuantizedActivations* out;
  static void work(const void* ctx, int64_t begin, int64_t end) {
    const auto* q = static_cast<const Quantizing*>(ctx);
    quantize_blocks(q->format, q->x, begin, end, *q->out);
  }
};

// The pieces' loop arguments, the first unit of each in the job's concatenated units, and
// how the units split into tasks.
struct Job {
  std::array<QuantMatmulArgs, kMaxQuantPieces> args;
  std::array<int64_t, kMaxQuantPieces + 1> first_unit;
  size_t pieces = 0;
  QuantLoop loop;
  int64_t n_tasks;
  int64_t guided_threads;  // 0: even ranges

  int64_t n_units() const { return first_unit[pieces]; }
  // Task t: its units [begin, end) of the concatenation, each piece's share computed by the
  // loop on that piece's outputs.
  void run(int64_t t) const {
    const int64_t begin = range_start(t, n_tasks, n_units(), guided_threads);
    const int64_t end = range_end(t, n_tasks, n_units(), guided_threads);
    for (size_t i = 0; i < pieces; ++i) {
      const int64_t lo = std::max(begin, first_unit[i]) - first_unit[i];
      const int64_t hi = std::min(end, first_unit[i + 1]) - first_unit[i];
      if (lo < hi) loop(args[i], lo * kQuantUnit, std::min(hi * kQuantUnit, args[i].n_out));
    }
  }
};

}  // namespace

void quant_matmul(ThreadPool& pool, std::span<const QuantPiece> pieces, int64_t n_out,
                  const float* x, int64_t n_rows, float* y) {
  const PackedWeights::Impl& first = *pieces.front().impl;
  const bool vnni = quant_uses_vnni();  // picks both the activation layout and the loop
  // A few rows stream (quant_streams.h); more are laid out across lanes (quant_lanes.h).
  const bool streamed = n_rows < lanes_from_rows(vnni);
  // Interleaved weights take row-major activations at every batch (quant_interleaved.h).
  const bool row_major = streamed || first.interleaved;
  // Batches of interleaved weights on the tile unit where the CPU has AMX-INT8: the same
  // bits (amx/quant_matmul.cpp), so the choice may follow speed alone.
  const bool amx = first.interleaved && n_rows >= kAmxQuantRows && quant_uses_amx();
  thread_local QuantizedActivations activations;
  Quantizing quantizing{act_format_of(*first.quant), x, &activations};
  // Batches multiply activations laid out across rows (quant_lanes.h), copied so as they
  // are quantized.
  prepare_rows(quantizing.format, n_rows, first.n_in, activations, !row_major);
  Job job;
  job.pieces = pieces.size();
  job.first_unit[0] = 0;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const PackedWeights::Impl& w = *pieces[i].impl;
    job.args[i] = {*w.quant,         w.buffer->data, w.row_bytes,       w.n_in,        w.n_out,
                   activations.view, n_rows,         y + pieces[i].col, w.interleaved, n_out};
    job.first_unit[i + 1] = job.first_unit[i] + (w.n_out + kQuantUnit - 1) / kQuantUnit;
  }
  job.loop = amx              ? amx_quant_loop()
             : vnni           ? avx512vnni_quant_loop()
             : has_avx_vnni() ? avxvnni_quant_loop()
                              : avx2_quant_loop();
  job.n_tasks = std::min<int64_t>(job.n_units(), tasks_per_thread(n_rows) * pool.size());
  // Guided where every round's ranges still hold a unit or more.
  const bool guided =
      streamed && pool.size() > 1 &&
      job.n_units() * (kGuidedRounds[3] - kGuidedRounds[2]) >= kGuidedParts * pool.size();
  job.guided_threads = guided ? pool.size() : 0;
  if (guided) job.n_tasks = kGuidedRoundCount * pool.size();
  SharedPrep prep;
  prep.start(&Quantizing::work, &quantizing, n_rows * (first.n_in / act_block(quantizing.format)),
             job.n_tasks > 1 && n_rows >= kRowsToSharePrep);
  if (job.n_tasks <= 1) return job.run(0);
  const Job* j = &job;
  SharedPrep* p = &prep;
  pool.parallel_for(job.n_tasks, [j, p](int64_t t) {
    p->help_and_wait();
    j->run(t);
  });
}

bool quant_pieces_fit(const PackedWeights::Impl& impl) {
  if (impl.parts.empty() || impl.parts.size() > kMaxQuantPieces) return false;
  const PackedWeights::Impl& first = impl.parts.front().impl();
  for (const PackedWeights& part : impl.parts) {
    const PackedWeights::Impl& p = part.impl();
    if (!p.quant || !p.parts.empty() || p.interleaved != first.interleaved ||
        act_format_of(*p.quant) != act_format_of(*first.quant))
      return false;
  }
  return true;
}

void* quant_scratch(size_t bytes) {
  thread_local std::vector<uint8_t> scratch;
  if (scratch.size() < bytes + 64) scratch.resize(bytes + 64);  // room to align
  const auto at = reinterpret_cast<uintptr_t>(scratch.data());
  return scratch.data() + (64 - at % 64) % 64;
}

}  // namespace tandem::kernels::detail
