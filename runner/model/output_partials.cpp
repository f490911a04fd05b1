// The output matmul and the softmax partials of the logit rows that want them (forward.h,
// ForwardRow::logit_partials). A row's log-probabilities need log Z, the log of the sum of
// exp(x - x_max) over the whole vocabulary: an exp of every logit, several times the cost of
// the greedy argmax that the step samples with otherwise (bench_sampler). Each panel of 64
// logits' max and exp sum is computed instead by the thread that wrote the panel, in the
// matmul's epilogue, while the panel is in its cache: at the few rows of a decode step the
// matmul waits on the weights' stream from memory, and the exps fill that wait. The sampler
// then combines the panels' sums and takes the top k from the panels with the largest
// maxima (sampler.cpp, log_normalizer).
#include <algorithm>

#include "runner/kernels/kernels.h"
#include "runner/model/forward.h"
#include "runner/model/soft_cap.h"
#include "runner/sampler/kernels.h"

namespace tandem {

namespace {

struct PartialsJob {
  const float* logits;
  int64_t n_vocab;
  const uint8_t* wanted;  // per logit row: ForwardPass::kPartials | kRawCopy
  float* partials;        // [logit row][maxima | sums]
  float* raw;             // [logit row][n_vocab]
  int64_t panels;
  void (*panel_partials)(const float* x, int32_t n, float* max, float* sum);

  // Columns [col0, col0 + cols) of rows [row0, row0 + rows): col0 is a multiple of 64, the
  // partials' panel (kernels.h, MatmulEpilogue).
  void run(int64_t row0, int64_t rows, int64_t col0, int64_t cols) const {
    const int64_t p = col0 / sampler_kernels::kLogitPanel;
    for (int64_t r = row0; r < row0 + rows; ++r) {
      if (wanted[r] == 0) continue;
      const float* x = logits + r * n_vocab + col0;
      float* max = partials + r * 2 * panels;
      panel_partials(x, static_cast<int32_t>(cols), max + p, max + panels + p);
      if ((wanted[r] & ForwardPass::kRawCopy) != 0)
        std::copy(x, x + cols, raw + r * n_vocab + col0);
    }
  }
  static void epilogue(const void* ctx, int64_t row0, int64_t rows, int64_t col0, int64_t cols) {
    static_cast<const PartialsJob*>(ctx)->run(row0, rows, col0, cols);
  }
};

static_assert(sampler_kernels::kLogitPanel == 64, "MatmulEpilogue's columns come in 64s");

}  // namespace

std::span<const float> ForwardPass::partials(int64_t logit_row) const {
  if ((partial_rows_[logit_row] & kPartials) == 0) return {};
  const auto size = static_cast<size_t>(2 * sampler_kernels::logit_panels(cfg_.n_vocab));
  return {partials_.data() + logit_row * size, size};
}

void ForwardPass::output_matmul(int64_t n_out) {
  const auto asked = [&](uint8_t bit) {
    return std::any_of(partial_rows_.begin(), partial_rows_.end(),
                       [bit](uint8_t flags) { return (flags & bit) != 0; });
  };
  const bool partials = asked(kPartials);
  const int32_t panels = sampler_kernels::logit_panels(cfg_.n_vocab);
  if (partials) {
    const size_t size = static_cast<size_t>(n_out) * 2 * static_cast<size_t>(panels);
    if (partials_.size() < size) partials_.resize(size);
    const size_t raw_size = static_cast<size_t>(n_out * cfg_.n_vocab);
    if (asked(kRawCopy) && raw_.size() < raw_size) raw_.resize(raw_size);
  }
  const PartialsJob job{logits_.data(),
                        cfg_.n_vocab,
                        partial_rows_.data(),
                        partials_.data(),
                        raw_.data(),
                        panels,
                        sampler_kernels::detected().panel_partials};
  // The soft cap (gemma2) changes the logits after the matmul: the partials follow it.
  const bool in_epilogue = partials && cfg_.final_softcap == 0.0f;
  const bool done =
      kernels::matmul(pool_, model_.output(), last_.data(), n_out, logits_.data(),
                      in_epilogue ? kernels::MatmulEpilogue{&PartialsJob::epilogue, &job}
                                  : kernels::MatmulEpilogue{});
  soft_cap(logits_.data(), n_out * cfg_.n_vocab, cfg_.final_softcap);
  if (!partials || (in_epilogue && done)) return;
  // Kernels without an epilogue (the quantized ones, AMX's) and the soft cap: the same
  // panels, after the matmul, in parallel runs of 64 panels; the bits are the epilogue's.
  constexpr int64_t kPanelsPerTask = 64;
  const int64_t tasks_per_row = (panels + kPanelsPerTask - 1) / kPanelsPerTask;
  pool_.parallel_for(n_out * tasks_per_row, [&](int64_t task) {
    const int64_t r = task / tasks_per_row;
    const int64_t col0 = (task % tasks_per_row) * kPanelsPerTask * sampler_kernels::kLogitPanel;
    job.run(r, 1, col0,
            std::min<int64_t>(cfg_.n_vocab - col0, kPanelsPerTask * sampler_kernels::kLogitPanel));
  });
}

}  // namespace tandem
