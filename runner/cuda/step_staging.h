// A StepPlan flattened into the arrays the GPU kernels read (cuda_executor.cu uploads them
// in one copy per step): per token its id, position and block table; per logit row the
// token it scores; per sampled row the fused sampler's parameters and its logit edits.
// Plain C++ (no CUDA), so it is built and tested on machines without a GPU.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "runner/cuda/sampler_kernel.h"
#include "runner/device/device.h"

namespace tandem::cuda {

// A row the host samples (penalties, a grammar, log-probabilities, infill): what collect()
// needs of it once the step's plan may have moved on to a chained successor.
struct HostRow {
  size_t row = 0;               // index in the plan
  int32_t first_logit = 0;      // its first logit row
  int32_t logit_rows = 0;       // 1, or the chunk's length with prompt_logprobs
  std::vector<int32_t> tokens;  // the chunk (prompt logprobs score each token's successor)
  int32_t next_prompt_token = -1;
  bool sample = true;
  int64_t position = 0;  // of the sampled token
  bool ban_stop = false;
  SamplingParams sampling;
  std::shared_ptr<const std::vector<int32_t>> penalty_prompt;
  std::vector<int32_t> penalty_output;
  std::shared_ptr<grammar::Matcher> grammar;
  std::shared_ptr<SamplerState> sampler_state;
};

struct StepStaging {
  std::vector<int32_t> token, position, table_start;  // per token
  std::vector<int32_t> tables;                        // the rows' block tables, trimmed
  std::vector<int32_t> logit_source;                  // per logit row: its token
  std::vector<SampleRow> sample_rows;                 // every sampling row, in plan order
  std::vector<size_t> sampled_row;                    // sample_rows[i]'s plan row
  std::vector<LogitEdit> edits;
  std::vector<KvSlotCopy> kv_copies;
  std::vector<HostRow> host_rows;
  // Every row feeds one token, samples it and wants only its logits: the shape a CUDA
  // graph replays (keyed by the row count).
  bool decode_only = true;

  int32_t n_tokens() const { return static_cast<int32_t>(token.size()); }
  // Empties every array, keeping its capacity: one StepStaging serves every step.
  void clear();
  int32_t n_logits() const { return static_cast<int32_t>(logit_source.size()); }
};

struct StagingLimits {
  int32_t vocab_size = 0;
  int32_t context_length = 0;
  int32_t kv_blocks = 0;
  int32_t block_size = 16;
  std::span<const int32_t> eog_ids;
};

// Whether the host must see a row's logits: what the fused kernel does not do (penalties,
// DRY, grammar masks, log-probabilities, top-n-sigma, typ_p, a dynamic temperature, the infill and
// XTC steps, llama.cpp's chain orders).
bool sampled_on_host(const StepRow& row);

// Flattens `plan` into `out` (cleared first, its arrays' capacity kept). With device_inputs the
// rows' tokens are placeholders (the device feeds them). Throws std::invalid_argument, naming the
// problem, for a token outside the vocabulary, a position past the context, or a block table that
// is short or names a block outside the pool.
void stage_step(const StepPlan& plan, bool device_inputs, const StagingLimits& limits,
                StepStaging& out);

}  // namespace tandem::cuda
