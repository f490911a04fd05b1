// The CPU backend of the device: runs a StepPlan through the model's forward pass and
// the fused sampler, on the device worker thread, with its own compute pool and KV
// cache. Logits never leave it: execute() returns only the sampled token ids, and the
// few log-probabilities a row asks for.
#pragma once

#include <memory>
#include <vector>

#include "runner/device/device.h"
#include "runner/device/kv_cache.h"
#include "runner/model/forward.h"
#include "runner/model/model.h"
#include "runner/sampler/sampler.h"
#include "runner/util/thread_pool.h"

namespace tandem {

struct CpuExecutorOptions {
  int threads = 0;             // compute threads; 0: all cores
  int32_t context_length = 0;  // the longest sequence served (--ctx-size); 0: the model's
  int64_t kv_tokens = 0;       // KV cache capacity in tokens; 0: kv_budget_bytes decides
  int64_t kv_budget_bytes = int64_t{2} << 30;  // used when kv_tokens is 0
  KvType kv_type = KvType::kF16;               // the cache's element type
  std::vector<int32_t> eog_ids;                // tokens that ignore_eos bans
  // For the sampler's infill step (SamplerConfig): each token's piece, shared by every
  // pool thread's Sampler (null: no prefix merging), and the end-of-turn id (-1: the first
  // of eog_ids).
  std::shared_ptr<const TokenPieces> token_pieces;
  int32_t eot_id = -1;
  // Size the sliding-window layers' block group (kv_cache.h): the scheduler runs at most
  // max_sequences rows and feeds a row at most max_step_tokens tokens per step.
  int32_t max_sequences = 64;
  int32_t max_step_tokens = 512;
  // false: local layers keep every position in the global group (no local group), the
  // layout before the group existed; tests compare the two.
  bool local_kv_group = true;
  // Positions of every layer's blocks, from block 0 (the block pool hands out the lowest
  // free ids first), whose pages are written once at startup (KvCache::prefault), the pool's
  // threads splitting the layers; clamped to the cache; 0: none, each page is then mapped
  // by the first step that writes it.
  int64_t kv_prefault_tokens = 0;
  // Non-null: every step is timed phase by phase into it, the sampler's included
  // (forward_profile.h); it must outlive the executor.
  ForwardProfile* profile = nullptr;
};

class CpuExecutor : public StepExecutor {
 public:
  CpuExecutor(std::shared_ptr<const Model> model, CpuExecutorOptions options);

  DeviceInfo info() const override { return info_; }
  void execute(const StepPlan& plan, std::span<int32_t> tokens) override;
  // Also the log-probabilities the rows ask for (sampler.h's RowLogprobs).
  void execute_step(const StepPlan& plan, StepResult& result) override;

  int threads() const { return pool_.size(); }

 private:
  void pool_states(const StepPlan& plan, StepResult& result) const;
  // Where a verify row's log-probabilities go (null where none is asked), and how many of
  // its drafts it accepted.
  struct VerifyOut {
    RowLogprobs* last;
    std::vector<RowLogprobs>* drafts;
    int32_t accepted;
  };
  // logits: the row's, one per token, from logit row first_logit_row of the step's.
  int32_t verify_row(const StepRow& row, std::span<float> logits, int32_t first_logit_row,
                     Sampler& sampler, std::vector<uint32_t>& mask, VerifyOut& out) const;
  LogitPartials logit_partials(int64_t logit_row) const;
  void prefault(int64_t tokens);

  std::shared_ptr<const Model> model_;
  ThreadPool pool_;
  KvCache kv_;
  ForwardPass forward_;
  std::vector<Sampler> samplers_;             // one per pool thread
  std::vector<std::vector<uint32_t>> masks_;  // one grammar mask buffer per pool thread
  DeviceInfo info_;
  std::vector<ForwardRow> rows_;
  std::vector<int32_t> logit_row_;  // plan row -> index into the logits, or -1
  ForwardProfile* profile_ = nullptr;
};

// The context the executor serves: options.context_length, at most the model's.
int32_t served_context(const ModelConfig& config, const CpuExecutorOptions& options);
// A sampling row's grammar mask, written into `buffer` (resized to fit).
std::span<const uint32_t> grammar_mask(grammar::Matcher& matcher, std::vector<uint32_t>& buffer);
// The KV capacity in tokens that CpuExecutor picks for a model and options.
int64_t cpu_kv_tokens(const ModelConfig& config, const CpuExecutorOptions& options);
// The bytes of the KV cache that capacity takes: the global layers' blocks, and the local
// group's (sliding-window layers) where there is one. A double: --kv-tokens reaches 2^32.
double cpu_kv_bytes(const ModelConfig& config, const CpuExecutorOptions& options);
// The local group's size in blocks (0: the model has no sliding layers, or the group is
// off): each of max_sequences sequences may hold ceil((window + max_step_tokens) / block)
// + 1 blocks at once, the window behind a chunk's first query and the chunk; never more
// than the global group, which bounds what the sequences can hold in either group.
int32_t cpu_kv_local_blocks(const ModelConfig& config, const CpuExecutorOptions& options,
                            int32_t global_blocks);

}  // namespace tandem
