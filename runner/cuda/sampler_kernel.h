// The fused sampler on the GPU: every row of a step sampled by one kernel launch, from logits
// that stay in device memory. A row's token is the CPU Sampler's token for the same logits and
// parameters (runner/sampler/sampler.h is the contract), with one documented exception: a
// top_p cut within float rounding of p (see sampler_kernel.cu). A plain C++ header (no CUDA
// headers), so host code built by g++ can fill the rows and call the launcher.
#pragma once

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>

namespace tandem::cuda {

// One edit of a row's logits, applied in list order: logit_bias first, then the bans
// (ignore_eos: eog ids; min_tokens not reached: eog ids and stop_token_ids, as bias -100).
// Ids outside the vocabulary are ignored, as on the CPU.
struct LogitEdit {
  int32_t id;
  float bias;  // added to the logit; <= -100 bans the token (-inf)
};

// One sampled row, uploaded each step. POD: the executor fills an array of them on the host.
struct SampleRow {
  int32_t logits_row = 0;    // which row of the logits buffer (vocab floats each)
  float temperature = 1.0f;  // <= 0 or NaN (or 1/T not finite): greedy
  int32_t top_k = 0;         // 0 or >= vocab: off
  float top_p = 1.0f;        // >= 1: off
  float min_p = 0.0f;        // <= 0: off; set it with set_min_p(), which fills log_min_p
  // std::min(std::log(min_p), 0.0f) as the host's libm computes it: the CPU's min_p cut, which
  // the device's own logf could miss by an ulp. Read only when min_p > 0.
  float log_min_p = 0.0f;
  uint64_t seed = 0;
  int64_t position = 0;  // the position of the token being sampled (Philox counter)
  int32_t edits_begin = 0, edits_end = 0;  // this row's range in the edits array

  // Sets min_p and the cut the kernel reads. Always use this (or set both fields alike).
  void set_min_p(float p) {
    min_p = p;
    log_min_p = p > 0.0f ? std::min(std::log(p), 0.0f) : 0.0f;
  }
};

// Scratch the kernel needs for up to max_rows rows of `vocab` entries, in bytes. Also readies
// the kernel for `vocab` on the current device (its shared-memory limit, a host call), so
// that launches captured in a graph afterwards make no such call.
size_t sample_scratch_bytes(int32_t max_rows, int32_t vocab);

// Samples rows[i] into tokens[i] for i < n_rows (n_rows <= the scratch's max_rows). Every
// pointer is device memory; logits (n_logit_rows x vocab floats) are only read, so rows may
// share a logits row. `stream` is a cudaStream_t. Enqueues only (no synchronization, no host
// allocation), so it can be captured in a CUDA graph once sample_scratch_bytes (or a launch)
// has run for this vocabulary on this device. One thread block per row. Throws
// std::runtime_error when the launch fails.
void launch_sample(const SampleRow* rows, int32_t n_rows, const LogitEdit* edits, float* logits,
                   int32_t vocab, int32_t* tokens, void* scratch, void* stream);

}  // namespace tandem::cuda
