#include "runner/device/cpu_executor.h"

#include <algorithm>
#include <atomic>

namespace tandem {

int64_t cpu_kv_tokens(const ModelConfig& config, const CpuExecutorOptions& options) {
  if (options.kv_tokens > 0) return options.kv_tokens;
  const int64_t per_token = static_cast<int64_t>(
      KvCache::bytes_per_token(config.n_layer, config.kv_dim(), options.kv_type));
  // At least one full context, so any request that fits the model fits the cache.
  return std::max<int64_t>(config.context_length,
                           std::min<int64_t>(options.kv_budget_bytes / per_token, 1 << 20));
}

namespace {
int32_t block_count(const ModelConfig& config, const CpuExecutorOptions& options) {
  const int64_t tokens = cpu_kv_tokens(config, options);
  return static_cast<int32_t>((tokens + KvCache::kDefaultBlockSize - 1) /
                              KvCache::kDefaultBlockSize);
}
}  // namespace

CpuExecutor::CpuExecutor(std::shared_ptr<const Model> model, CpuExecutorOptions options)
    : model_(std::move(model)),
      pool_(options.threads > 0 ? options.threads : default_thread_count()),
      kv_(model_->config().n_layer, model_->config().kv_dim(),
          block_count(model_->config(), options), options.kv_type, model_->config().head_dim),
      forward_(*model_, kv_, pool_) {
  const ModelConfig& c = model_->config();
  for (int i = 0; i < pool_.size(); ++i)
    samplers_.emplace_back(SamplerConfig{c.n_vocab, options.eog_ids});
  info_.vocab_size = c.n_vocab;
  info_.context_length = c.context_length;
  info_.kv_block_size = kv_.block_size();
  info_.kv_blocks = kv_.n_blocks();
  info_.kv_type = kv_type_name(kv_.type());
  info_.kv_bytes_per_token =
      static_cast<int64_t>(KvCache::bytes_per_token(c.n_layer, c.kv_dim(), kv_.type()));
  info_.eog_ids = options.eog_ids;
}

void CpuExecutor::execute(const StepPlan& plan, std::span<int32_t> tokens) {
  const size_t n = plan.rows.size();
  rows_.clear();
  logit_row_.assign(n, -1);
  int32_t n_logits = 0;
  for (size_t i = 0; i < n; ++i) {
    const StepRow& r = plan.rows[i];
    rows_.push_back(ForwardRow{r.tokens, r.position, r.kv_blocks, r.sample});
    if (r.sample) logit_row_[i] = n_logits++;
  }
  std::span<float> logits = forward_.run(rows_);

  // Sample the rows in parallel; a row's token depends only on its logits, its
  // parameters and its position, never on which thread's sampler draws it.
  const int64_t vocab = model_->config().n_vocab;
  std::atomic<size_t> next{0};
  pool_.run_on_all([&](int thread, int) {
    for (size_t i = next.fetch_add(1); i < n; i = next.fetch_add(1)) {
      if (logit_row_[i] < 0) {
        tokens[i] = kNoToken;
        continue;
      }
      const StepRow& r = plan.rows[i];
      const int64_t position = r.position + static_cast<int64_t>(r.tokens.size());
      tokens[i] = samplers_[thread].sample(logits.subspan(logit_row_[i] * vocab, vocab), r.sampling,
                                           position);
    }
  });
}

}  // namespace tandem
