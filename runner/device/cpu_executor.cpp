#include "runner/device/cpu_executor.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <limits>

namespace tandem {

int32_t served_context(const ModelConfig& config, const CpuExecutorOptions& options) {
  return options.context_length > 0 ? std::min(options.context_length, config.context_length)
                                    : config.context_length;
}

namespace {

int32_t local_layer_count(const ModelConfig& config, const CpuExecutorOptions& options) {
  if (!options.local_kv_group) return 0;
  int32_t n = 0;
  for (int32_t l = 0; l < config.n_layer; ++l) n += config.is_local_layer(l) ? 1 : 0;
  return n;
}

int32_t local_blocks_wanted(const ModelConfig& config, const CpuExecutorOptions& options) {
  if (local_layer_count(config, options) == 0) return 0;
  return std::max(options.max_sequences, 1) *
         local_blocks_per_sequence(config.sliding_window, std::max(options.max_step_tokens, 1),
                                   KvCache::kDefaultBlockSize);
}

}  // namespace

int64_t cpu_kv_tokens(const ModelConfig& config, const CpuExecutorOptions& options) {
  if (options.kv_tokens > 0) return options.kv_tokens;
  const int32_t n_local = local_layer_count(config, options);
  const int64_t global_bytes =
      std::max<int64_t>(1, static_cast<int64_t>(KvCache::bytes_per_token(
                               config.n_layer - n_local, config.kv_dim(), options.kv_type)));
  const int64_t local_bytes = static_cast<int64_t>(
      n_local > 0 ? KvCache::bytes_per_token(n_local, config.kv_dim(), options.kv_type) : 0);
  const int64_t budget = options.kv_budget_bytes;
  // The local group holds min(wanted, global) tokens: the global tokens left once the
  // wanted local group is paid for, when that leaves at least as many; else both groups
  // the same size (the local one capped by the global one).
  const int64_t wanted = int64_t{local_blocks_wanted(config, options)} * KvCache::kDefaultBlockSize;
  const int64_t beyond = (budget - wanted * local_bytes) / global_bytes;
  const int64_t tokens = beyond >= wanted ? beyond : budget / (global_bytes + local_bytes);
  // At least one full context, so any request that fits the model fits the cache.
  return std::max<int64_t>(served_context(config, options), std::min<int64_t>(tokens, 1 << 20));
}

double cpu_kv_bytes(const ModelConfig& config, const CpuExecutorOptions& options) {
  const int32_t n_local = local_layer_count(config, options);
  const int64_t tokens = cpu_kv_tokens(config, options);
  const int32_t block = KvCache::kDefaultBlockSize;
  const int64_t global_blocks = (tokens + block - 1) / block;
  const int64_t local_blocks = cpu_kv_local_blocks(
      config, options,
      static_cast<int32_t>(std::min<int64_t>(global_blocks, std::numeric_limits<int32_t>::max())));
  const auto bytes = [&](int32_t layers) {
    return layers > 0 ? static_cast<double>(
                            KvCache::bytes_per_token(layers, config.kv_dim(), options.kv_type))
                      : 0.0;
  };
  return static_cast<double>(global_blocks * block) * bytes(config.n_layer - n_local) +
         static_cast<double>(local_blocks * block) * bytes(n_local);
}

int32_t cpu_kv_local_blocks(const ModelConfig& config, const CpuExecutorOptions& options,
                            int32_t global_blocks) {
  return std::min(local_blocks_wanted(config, options), global_blocks);
}

std::span<const uint32_t> grammar_mask(grammar::Matcher& matcher, std::vector<uint32_t>& buffer) {
  buffer.resize(matcher.mask_words());
  matcher.fill_mask(buffer);
  return buffer;
}

namespace {
int32_t block_count(const ModelConfig& config, const CpuExecutorOptions& options) {
  const int64_t tokens = cpu_kv_tokens(config, options);
  return static_cast<int32_t>((tokens + KvCache::kDefaultBlockSize - 1) /
                              KvCache::kDefaultBlockSize);
}

KvCache make_kv_cache(const ModelConfig& c, const CpuExecutorOptions& options) {
  const int32_t blocks = block_count(c, options);
  std::vector<bool> local(c.n_layer);
  for (int32_t l = 0; l < c.n_layer; ++l) local[l] = c.is_local_layer(l);
  return KvCache(c.n_layer, c.kv_dim(), blocks, options.kv_type, c.head_dim,
                 KvCache::kDefaultBlockSize, local, cpu_kv_local_blocks(c, options, blocks));
}
}  // namespace

CpuExecutor::CpuExecutor(std::shared_ptr<const Model> model, CpuExecutorOptions options)
    : model_(std::move(model)),
      pool_(options.threads > 0 ? options.threads : default_thread_count()),
      kv_(make_kv_cache(model_->config(), options)),
      forward_(*model_, kv_, pool_, served_context(model_->config(), options)) {
  const ModelConfig& c = model_->config();
  for (int i = 0; i < pool_.size(); ++i)
    samplers_.emplace_back(
        SamplerConfig{c.n_vocab, options.eog_ids, options.token_pieces, options.eot_id});
  masks_.resize(static_cast<size_t>(pool_.size()));
  info_.vocab_size = c.n_vocab;
  info_.context_length = served_context(c, options);
  info_.kv_block_size = kv_.block_size();
  info_.pools = true;
  info_.verifies = true;
  info_.embedding_size = c.n_embd;
  info_.kv_blocks = kv_.n_blocks();
  info_.kv_type = kv_type_name(kv_.type());
  info_.kv_bytes_per_token = static_cast<int64_t>(kv_.global_bytes_per_token());
  info_.kv_local_blocks = kv_.n_local_blocks();
  info_.sliding_window = kv_.has_local_group() ? c.sliding_window : 0;
  info_.kv_local_bytes_per_token = static_cast<int64_t>(kv_.local_bytes_per_token());
  info_.eog_ids = options.eog_ids;
  profile_ = options.profile;
  forward_.set_profile(profile_);
  prefault(options.kv_prefault_tokens);
}

void CpuExecutor::prefault(int64_t tokens) {
  if (tokens <= 0) return;
  const int64_t blocks =
      std::min<int64_t>((tokens + kv_.block_size() - 1) / kv_.block_size(), kv_.n_blocks());
  const auto start = std::chrono::steady_clock::now();
  pool_.parallel_for(kv_.n_layer(), [&](int64_t layer) {
    kv_.prefault(static_cast<int32_t>(layer), static_cast<int32_t>(blocks));
  });
  info_.kv_prefaulted_tokens = blocks * kv_.block_size();
  info_.kv_prefault_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void CpuExecutor::execute(const StepPlan& plan, std::span<int32_t> tokens) {
  StepResult result;
  result.tokens.assign(plan.rows.size(), kNoToken);
  execute_step(plan, result);
  std::copy(result.tokens.begin(), result.tokens.end(), tokens.begin());
}

void CpuExecutor::execute_step(const StepPlan& plan, StepResult& result) {
  const size_t n = plan.rows.size();
  rows_.clear();
  logit_row_.assign(n, -1);
  bool any_logprobs = false, any_prompt_logprobs = false, any_pooled = false, any_verify = false;
  int32_t n_logits = 0;
  for (size_t i = 0; i < n; ++i) {
    const StepRow& r = plan.rows[i];
    // A verify row samples after every token; a scoring row scores every token.
    const bool all = r.sampling.prompt_logprobs >= 0 || r.verify;
    any_verify = any_verify || r.verify;
    // Rows whose log-probabilities the sampler reports (not post-sampling ones, which
    // describe the draw) get their logits' partials from the output matmul.
    const bool sampled_logprobs =
        r.sample && r.sampling.logprobs >= 0 && !r.sampling.post_sampling_probs;
    const bool partials = sampled_logprobs || (all && r.sampling.prompt_logprobs >= 0);
    // A row that sampling will change in place keeps its raw logits apart for the chosen
    // token's log-probability (sampler.h, RowHistory::raw).
    // (Where it guesses wrong the sampler copies the row itself: the same bits.)
    const bool raw = sampled_logprobs && (Sampler::may_touch_row(r.sampling) || r.grammar ||
                                          r.position < r.stop_banned_until);
    rows_.push_back(ForwardRow{r.tokens, r.position, r.kv_blocks, r.sample, all, r.kv_local_blocks,
                               r.pooling, partials, raw});
    any_pooled = any_pooled || r.pooling != Pooling::kNone;
    if (r.sample || all) logit_row_[i] = n_logits;
    n_logits += all ? static_cast<int32_t>(r.tokens.size()) : (r.sample ? 1 : 0);
    any_logprobs = any_logprobs || (r.sample && r.sampling.logprobs >= 0);
    any_prompt_logprobs = any_prompt_logprobs || (all && !r.verify);
  }
  for (const StepRow& r : plan.rows) {
    kv_.copy_slots(r.kv_copy.from, r.kv_copy.to, r.kv_copy.slots);
  }
  std::span<float> logits = forward_.run(rows_);
  PhaseClock clock(profile_);
  result.tokens.assign(n, kNoToken);
  if (any_logprobs) result.logprobs.assign(n, RowLogprobs{});
  if (any_prompt_logprobs) result.prompt_logprobs.assign(n, {});
  if (any_pooled) pool_states(plan, result);
  if (any_verify) result.accepted.assign(n, 0);
  if (any_verify && any_logprobs) result.draft_logprobs.assign(n, {});

  // Sample the rows in parallel; a row's token depends only on its logits, its
  // parameters, its history and its position, never on which thread's sampler draws it.
  const int64_t vocab = model_->config().n_vocab;
  std::atomic<size_t> next{0};
  pool_.run_on_all([&](int thread, int) {
    for (size_t i = next.fetch_add(1); i < n; i = next.fetch_add(1)) {
      if (logit_row_[i] < 0) continue;
      const StepRow& r = plan.rows[i];
      Sampler& sampler = samplers_[thread];
      const auto row_logits = [&](int64_t k) {
        return logits.subspan((logit_row_[i] + k) * vocab, static_cast<size_t>(vocab));
      };
      const auto row_partials = [&](int64_t k) { return logit_partials(logit_row_[i] + k); };
      const auto count = static_cast<int64_t>(r.tokens.size());
      if (r.verify) {
        VerifyOut out{any_logprobs ? &result.logprobs[i] : nullptr,
                      any_logprobs ? &result.draft_logprobs[i] : nullptr, 0};
        result.tokens[i] = verify_row(r, logits.subspan(logit_row_[i] * vocab, count * vocab),
                                      logit_row_[i], sampler, masks_[thread], out);
        result.accepted[i] = out.accepted;
        continue;
      }
      if (r.sampling.prompt_logprobs >= 0) {
        // Token j's logits score token j + 1: the chunk's next token, or the prompt's next
        // one after the chunk; the last prompt token's logits score the sampled token.
        for (int64_t j = 0; j < count; ++j) {
          const int32_t target =
              j + 1 < count ? r.tokens[j + 1] : (r.sample ? -1 : r.next_prompt_token);
          if (target < 0) continue;
          result.prompt_logprobs[i].emplace_back();
          sampler.logprobs_of(row_logits(j), target, r.sampling.prompt_logprobs,
                              result.prompt_logprobs[i].back(), row_partials(j));
        }
      }
      if (!r.sample) continue;
      const int64_t last = r.sampling.prompt_logprobs >= 0 ? count - 1 : 0;
      const int64_t position = r.position + count;
      RowHistory history;
      history.ban_stop = position < r.stop_banned_until;
      if (r.penalty_prompt) history.prompt = *r.penalty_prompt;
      history.output = r.penalty_output;
      RowLogprobs* logprobs = any_logprobs ? &result.logprobs[i] : nullptr;
      if (r.grammar) history.allowed = grammar_mask(*r.grammar, masks_[thread]);
      history.state = r.sampler_state.get();
      history.partials = row_partials(last);
      history.raw = forward_.raw_logits(logit_row_[i] + last);
      result.tokens[i] = sampler.sample(row_logits(last), r.sampling, position, history, logprobs);
      // False only for a row whose grammar had ended: it is finished, and its token dropped.
      if (r.grammar) r.grammar->advance(result.tokens[i]);
    }
  });
  clock.mark(ForwardPhase::kSample);
}

// A verify row (StepRow::verify): after each of its tokens in turn, the token that a decode
// step fed that token alone would sample (the same logits, by the laws; the same position
// key, history, min_tokens ban and grammar state), until one differs from the draft that
// follows it. The penalties' history and the grammar take each accepted draft, as the
// decode steps would have.
int32_t CpuExecutor::verify_row(const StepRow& r, std::span<float> logits, int32_t first_logit_row,
                                Sampler& sampler, std::vector<uint32_t>& mask,
                                VerifyOut& out) const {
  const auto count = static_cast<int64_t>(r.tokens.size());
  const auto vocab = static_cast<int64_t>(logits.size()) / count;
  std::vector<int32_t> output = r.penalty_output;  // grows by the accepted drafts
  const bool penalties = r.sampling.has_output_penalties();
  RowLogprobs entry;
  for (int64_t j = 0;; ++j) {
    const int64_t position = r.position + j + 1;  // of the token sampled after tokens[j]
    if (j > 0 && penalties) output.push_back(r.tokens[j]);
    RowHistory history;
    history.ban_stop = position < r.stop_banned_until;
    if (r.penalty_prompt) history.prompt = *r.penalty_prompt;
    history.output = output;
    if (r.grammar) history.allowed = grammar_mask(*r.grammar, mask);
    history.state = r.sampler_state.get();  // advanced by each accepted draft's draw
    history.partials = logit_partials(first_logit_row + j);
    history.raw = forward_.raw_logits(first_logit_row + j);
    const int32_t token =
        sampler.sample(logits.subspan(j * vocab, static_cast<size_t>(vocab)), r.sampling, position,
                       history, out.last ? &entry : nullptr);
    // A grammar that has ended takes nothing more: the row is finished there.
    const bool open = !r.grammar || r.grammar->advance(token);
    if (j + 1 == count || token != r.tokens[j + 1] || !open) {
      if (out.last) *out.last = std::move(entry);
      return token;
    }
    ++out.accepted;
    if (out.drafts) out.drafts->push_back(std::move(entry));
    entry = {};
  }
}

// The forward pass's partials of a logit row (ForwardPass::partials), as the sampler takes
// them; empty where the row asked for none.
LogitPartials CpuExecutor::logit_partials(int64_t logit_row) const {
  const std::span<const float> both = forward_.partials(logit_row);
  const size_t half = both.size() / 2;
  return {both.first(half), both.subspan(half)};
}

// Each pooling row's states summed in fixed point (protocol/pooling.h), in token order.
void CpuExecutor::pool_states(const StepPlan& plan, StepResult& result) const {
  const auto e = static_cast<size_t>(model_->config().n_embd);
  result.pooled.assign(plan.rows.size(), {});
  for (size_t i = 0; i < plan.rows.size(); ++i) {
    if (plan.rows[i].pooling == Pooling::kNone) continue;
    std::vector<int64_t>& sum = result.pooled[i];
    sum.assign(e + 1, 0);
    const std::span<const float> states = forward_.hidden(i);
    for (size_t at = 0; at < states.size(); at += e)
      sum[e] += add_to_pooled(states.subspan(at, e), std::span(sum).first(e));
  }
}

}  // namespace tandem
