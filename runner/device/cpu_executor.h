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
  std::shared_ptr<const Model> model_;
  ThreadPool pool_;
  KvCache kv_;
  ForwardPass forward_;
  std::vector<Sampler> samplers_;             // one per pool thread
  std::vector<std::vector<uint32_t>> masks_;  // one grammar mask buffer per pool thread
  DeviceInfo info_;
  std::vector<ForwardRow> rows_;
  std::vector<int32_t> logit_row_;  // plan row -> index into the logits, or -1
};

// The context the executor serves: options.context_length, at most the model's.
int32_t served_context(const ModelConfig& config, const CpuExecutorOptions& options);
// A sampling row's grammar mask, written into `buffer` (resized to fit).
std::span<const uint32_t> grammar_mask(grammar::Matcher& matcher, std::vector<uint32_t>& buffer);
// The KV capacity in tokens that CpuExecutor picks for a model and options.
int64_t cpu_kv_tokens(const ModelConfig& config, const CpuExecutorOptions& options);

}  // namespace tandem
