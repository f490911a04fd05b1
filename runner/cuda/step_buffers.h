// The GPU executor's per-step memory: the device buffers every step reuses (metadata,
// activations, logits, the sampled tokens) and three pinned staging slots on the host, one
// per step in flight (two at most) plus the one being filled. Device pointers stay put until
// a step outgrows them (the CUDA graphs captured with them are then dropped by the caller).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "runner/cuda/forward_kernels.h"
#include "runner/cuda/step_staging.h"
#include "runner/model/config.h"

namespace tandem::cuda {

struct StagingSlot {
  char* meta = nullptr;  // pinned: the step's metadata, in the device buffer's layout
  size_t meta_bytes = 0;
  int32_t* tokens = nullptr;  // pinned: the sampled tokens come back here
  int32_t token_capacity = 0;
  float* logits = nullptr;  // pinned: the host-sampled rows' logits
  size_t logit_capacity = 0;
  cudaEvent_t start = nullptr, end = nullptr;
};

class StepBuffers {
 public:
  static constexpr int kSlots = 3;

  StepBuffers(const ModelConfig& config, int32_t rows, int32_t tokens);
  ~StepBuffers();
  StepBuffers(const StepBuffers&) = delete;
  StepBuffers& operator=(const StepBuffers&) = delete;

  // Whether the device buffers hold a step of this size; if not, grow_device() (after the
  // stream has drained: steps in flight use them).
  bool fits(const StepStaging& s) const;
  void grow_device(const StepStaging& s);

  // Writes the step's metadata into slot `i` (growing that slot's host buffers; its last
  // step has been collected) and returns the bytes to copy to meta_device().
  size_t pack(const StepStaging& s, int i);
  StagingSlot& slot(int i) { return slots_[i]; }
  void* meta_device() const { return meta_; }

  TokenMeta token_meta() const;
  const int32_t* logit_source() const;
  const SampleRow* sample_rows() const;
  const LogitEdit* edits() const;

  float *x = nullptr, *qkv = nullptr, *attn = nullptr, *proj = nullptr, *ffn = nullptr,
        *last = nullptr, *logits = nullptr;
  int32_t* sampled = nullptr;  // the last sampler's tokens, by sampled row
  void* scratch = nullptr;     // the sampler's

 private:
  struct Layout {
    size_t token, position, table_start, logit_source, sample_rows, edits, tables, bytes;
  };
  Layout compute_layout() const;  // from the capacities
  void allocate_device();
  void free_device();

  const ModelConfig& cfg_;
  int32_t cap_rows_, cap_tokens_, cap_edits_ = 4096, cap_tables_;
  Layout layout_{};  // the metadata regions' offsets for the capacities (set with them)
  char* meta_ = nullptr;
  StagingSlot slots_[kSlots];
};

}  // namespace tandem::cuda
