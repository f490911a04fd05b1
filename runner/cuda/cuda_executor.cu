#include "runner/cuda/cuda_executor.h"

#include <algorithm>
#include <cstdio>
#include <deque>
#include <map>
#include <mutex>

#include "runner/cuda/cuda_check.h"
#include "runner/cuda/device_model.h"
#include "runner/cuda/kernel_timer.h"
#include "runner/cuda/sampler_kernel.h"
#include "runner/cuda/step_buffers.h"
#include "runner/cuda/step_staging.h"
#include "runner/device/cpu_executor.h"
#include "runner/sampler/sampler.h"

namespace tandem {

std::string cuda_unavailable_reason() {
  int n = 0;
  const cudaError_t status = cudaGetDeviceCount(&n);
  if (status != cudaSuccess)
    return std::string("no usable CUDA driver or device (") + cudaGetErrorString(status) + ")";
  if (n == 0) return "no CUDA device found";
  return {};
}

std::string cuda_device_description(int device) {
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, device) != cudaSuccess) return {};
  return std::string(prop.name) + ", " + std::to_string(prop.totalGlobalMem >> 30) + " GiB";
}

namespace cuda {
namespace {

KvElement kv_element(KvType type) {
  switch (type) {
    case KvType::kF32:
      return KvElement::kF32;
    case KvType::kF16:
      return KvElement::kF16;
    case KvType::kBf16:
      return KvElement::kBF16;
    case KvType::kQ8_0:
      break;
  }
  throw std::invalid_argument(
      "--kv-dtype q8_0 is not supported with --device cuda (use f16, "
      "bf16 or f32)");
}

int64_t kv_tokens(const ModelConfig& c, const CudaExecutorOptions& o, int32_t served) {
  if (o.kv_tokens > 0) return std::max<int64_t>(o.kv_tokens, served);
  const auto per_token =
      static_cast<int64_t>(KvCache::bytes_per_token(c.n_layer, c.kv_dim(), o.kv_type));
  return std::max<int64_t>(served, std::min<int64_t>(o.kv_budget_bytes / per_token, 1 << 22));
}

// One submitted step, from submit() to collect().
struct Submitted {
  int context = 0;  // StepBuffers' staging slot
  int previous_context = -1;
  bool device_inputs = false;
  size_t n_rows = 0;
  std::vector<size_t> sampled_row;
  std::vector<HostRow> host_rows;
  bool any_logprobs = false, any_prompt_logprobs = false;
};

class CudaExecutor final : public StepExecutor {
 public:
  CudaExecutor(std::shared_ptr<const Model> model, CudaExecutorOptions options);
  ~CudaExecutor() override;

  DeviceInfo info() const override { return info_; }
  void execute(const StepPlan& plan, std::span<int32_t> tokens) override;
  void execute_step(const StepPlan& plan, StepResult& result) override;
  bool asynchronous() const override { return true; }
  void submit(const StepPlan& plan, bool device_inputs) override;
  bool ready() override;
  void collect(StepResult& result) override;
  bool can_chain_on_device(const StepPlan& plan) const override;
  bool device_timing(double& busy_seconds, double& gap_median_us) const override;

 private:
  void enqueue_forward(const StepStaging& s);
  void enqueue_layer(int32_t l, int32_t n_tokens);
  void add_projection(const DeviceMatrix& w, const float* in, const float* post_norm, int32_t n);
  void run_graph(const StepStaging& s);
  void sample_on_host(const Submitted& step, StepResult& result);
  void record_timing(const Submitted& step);
  void mark(const char* group) {
    if (timer_) timer_->mark(group);
  }

  std::shared_ptr<const Model> model_;
  const ModelConfig& cfg_;
  CudaExecutorOptions options_;
  DeviceInfo info_;
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<DeviceModel> weights_;
  KvView kv_;
  std::unique_ptr<StepBuffers> buffers_;
  StepStaging staging_;
  std::deque<Submitted> in_flight_;
  int last_context_ = -1;
  std::map<int32_t, cudaGraphExec_t> graphs_;  // decode steps by row count
  std::unique_ptr<KernelTimer> timer_;         // options.profile
  Sampler host_sampler_;
  std::vector<uint32_t> mask_;

  mutable std::mutex timing_mutex_;
  double busy_seconds_ = 0;
  std::vector<float> gaps_us_;  // idle time before each chained step (the last 4096)
  size_t next_gap_ = 0;
};

CudaExecutor::CudaExecutor(std::shared_ptr<const Model> model, CudaExecutorOptions options)
    : model_(std::move(model)),
      cfg_(model_->config()),
      options_(std::move(options)),
      host_sampler_(SamplerConfig{model_->config().n_vocab, options_.eog_ids, options_.token_pieces,
                                  options_.eot_id}) {
  if (const std::string why = cuda_unavailable_reason(); !why.empty())
    throw CudaUnavailable("--device cuda: " + why);
  if (cfg_.head_dim > 256)
    throw std::invalid_argument("--device cuda: head size " + std::to_string(cfg_.head_dim) +
                                " is over the GPU attention kernel's 256");
  const KvElement element = kv_element(options_.kv_type);
  TANDEM_CUDA_CHECK(cudaSetDevice(options_.device));
  TANDEM_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  if (options_.profile) {
    timer_ = std::make_unique<KernelTimer>(stream_);
    options_.graphs = false;
  }
  CpuExecutorOptions served;
  served.context_length = options_.context_length;
  const int32_t context = served_context(cfg_, served);
  weights_ = std::make_unique<DeviceModel>(*model_, context);

  kv_.element = element;
  kv_.block_size = KvCache::kDefaultBlockSize;
  kv_.kv_dim = cfg_.kv_dim();
  kv_.n_blocks = (kv_tokens(cfg_, options_, context) + kv_.block_size - 1) / kv_.block_size;
  TANDEM_CUDA_CHECK(cudaMalloc(&kv_.base, 2 * cfg_.n_layer * kv_.pool_bytes()));
  buffers_ = std::make_unique<StepBuffers>(cfg_, options_.max_sequences,
                                           options_.max_step_tokens + options_.max_sequences);

  info_.vocab_size = cfg_.n_vocab;
  info_.context_length = context;
  info_.kv_block_size = kv_.block_size;
  info_.kv_blocks = static_cast<int32_t>(kv_.n_blocks);
  info_.eog_ids = options_.eog_ids;
  info_.kv_type = kv_type_name(options_.kv_type);
  info_.kv_bytes_per_token =
      static_cast<int64_t>(KvCache::bytes_per_token(cfg_.n_layer, cfg_.kv_dim(), options_.kv_type));
}

CudaExecutor::~CudaExecutor() {
  cudaStreamSynchronize(stream_);
  if (timer_) std::fprintf(stderr, "cuda profile, per step:\n%s", timer_->report().c_str());
  timer_.reset();
  for (auto& [rows, graph] : graphs_) cudaGraphExecDestroy(graph);
  buffers_.reset();
  weights_.reset();
  cudaFree(kv_.base);
  cudaStreamDestroy(stream_);
}

void CudaExecutor::execute(const StepPlan& plan, std::span<int32_t> tokens) {
  StepResult result;
  result.tokens.assign(plan.rows.size(), kNoToken);
  execute_step(plan, result);
  std::copy(result.tokens.begin(), result.tokens.end(), tokens.begin());
}

void CudaExecutor::execute_step(const StepPlan& plan, StepResult& result) {
  while (!in_flight_.empty()) {  // a synchronous caller never leaves steps behind, but be safe
    StepResult ignored;
    collect(ignored);
  }
  submit(plan, false);
  collect(result);
}

bool CudaExecutor::can_chain_on_device(const StepPlan& plan) const {
  return std::none_of(plan.rows.begin(), plan.rows.end(),
                      [](const StepRow& r) { return sampled_on_host(r); });
}

// The step's whole forward pass, embeddings to sampled tokens, on the stream.
void CudaExecutor::enqueue_forward(const StepStaging& s) {
  StepBuffers& b = *buffers_;
  const int32_t n = s.n_tokens(), n_logits = s.n_logits();
  if (timer_) timer_->start();
  embed(weights_->embedding(), b.token_meta().token, cfg_.embed_scale, b.x, n, stream_);
  mark("embed");
  for (int32_t l = 0; l < cfg_.n_layer; ++l) enqueue_layer(l, n);
  rms_norm(b.x, b.logit_source(), weights_->output_norm(), b.last, n_logits, cfg_.n_embd,
           cfg_.rms_eps, stream_);
  mark("norm");
  matmul(weights_->output(), b.last, n_logits, b.logits, false, stream_);
  soft_cap(b.logits, int64_t{n_logits} * cfg_.n_vocab, cfg_.final_softcap, stream_);
  mark("output matmul");
  const auto n_sample = static_cast<int32_t>(s.sample_rows.size());
  if (n_sample > 0)
    launch_sample(b.sample_rows(), n_sample, b.edits(), b.logits, cfg_.n_vocab, b.sampled,
                  b.scratch, stream_);
  mark("sampler");
}

// x += post_norm(Wo attention(rope(Wqkv norm(x)))); x += post_norm(Wdown ffn(norm(x)))
void CudaExecutor::enqueue_layer(int32_t l, int32_t n) {
  StepBuffers& b = *buffers_;
  const cuda::DeviceLayer& w = weights_->layers()[l];
  const bool local = cfg_.is_local_layer(l);
  matmul(w.qkv, b.x, n, b.qkv, false, stream_, NormIn{w.attn_norm, cfg_.rms_eps});
  mark("norm + qkv");
  const QkvParams qp{cfg_.n_head,
                     cfg_.n_head_kv,
                     cfg_.head_dim,
                     cfg_.n_rot,
                     cfg_.rope_style == RopeStyle::kNeox,
                     weights_->rope_frequencies(local),
                     cfg_.rope_attn_factor,
                     w.qkv_bias,
                     w.q_norm,
                     w.k_norm,
                     cfg_.rms_eps};
  qk_rope_store(b.qkv, qp, b.token_meta(), kv_, l, n, stream_);
  mark("rope + store");
  const AttentionParams ap{cfg_.n_head,     cfg_.n_head_kv,    cfg_.head_dim,
                           cfg_.attn_scale, cfg_.attn_softcap, local ? cfg_.sliding_window : 0};
  attention(b.qkv, ap, b.token_meta(), kv_, l, b.attn, n, stream_);
  mark("attention");
  add_projection(w.attn_out, b.attn, w.post_attn_norm, n);
  mark("out matmul");

  const auto act = cfg_.activation == tandem::Activation::kSilu ? cuda::Activation::kSilu
                                                                : cuda::Activation::kGeluTanh;
  gated_matmul(w.gate_up, b.x, n, cfg_.n_ff, act, b.ffn, stream_, NormIn{w.ffn_norm, cfg_.rms_eps});
  mark("norm + gate-up");
  add_projection(w.down, b.ffn, w.post_ffn_norm, n);
  mark("down matmul");
}

// x += post_norm(W in): the residual add is the matmul's epilogue, or, for families with
// post-norms (gemma), the norm's.
void CudaExecutor::add_projection(const DeviceMatrix& w, const float* in, const float* post_norm,
                                  int32_t n) {
  StepBuffers& b = *buffers_;
  if (!cfg_.post_norms) return matmul(w, in, n, b.x, true, stream_);
  matmul(w, in, n, b.proj, false, stream_);
  norm_add(b.proj, post_norm, b.x, n, cfg_.n_embd, cfg_.rms_eps, stream_);
}

// A decode step of n rows replays the graph captured for n rows (captured on first use):
// one launch instead of ~8 per layer, which is most of a small model's step time.
void CudaExecutor::run_graph(const StepStaging& s) {
  const int32_t rows = s.n_tokens();
  auto it = graphs_.find(rows);
  if (it == graphs_.end()) {
    cudaGraph_t graph = nullptr;
    TANDEM_CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
    enqueue_forward(s);
    TANDEM_CUDA_CHECK(cudaStreamEndCapture(stream_, &graph));
    cudaGraphExec_t exec = nullptr;
    const cudaError_t status = cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphDestroy(graph);
    TANDEM_CUDA_CHECK(status);
    it = graphs_.emplace(rows, exec).first;
  }
  TANDEM_CUDA_CHECK(cudaGraphLaunch(it->second, stream_));
}

void CudaExecutor::submit(const StepPlan& plan, bool device_inputs) {
  TANDEM_CUDA_CHECK(cudaSetDevice(options_.device));
  const StagingLimits limits{cfg_.n_vocab, info_.context_length, info_.kv_blocks,
                             info_.kv_block_size, options_.eog_ids};
  stage_step(plan, device_inputs, limits, staging_);  // validates before anything is enqueued
  set_dependent_launch(options_.dependent_launch);
  if (device_inputs && (!staging_.decode_only || last_context_ < 0))
    throw std::logic_error("cuda submit: device inputs need a decode step after another step");
  StepBuffers& b = *buffers_;
  if (!b.fits(staging_)) {
    TANDEM_CUDA_CHECK(cudaStreamSynchronize(stream_));  // the steps in flight use the buffers
    b.grow_device(staging_);
    for (auto& [rows, graph] : graphs_) cudaGraphExecDestroy(graph);
    graphs_.clear();
  }
  Submitted step;
  step.context = (last_context_ + 1) % StepBuffers::kSlots;
  step.previous_context = last_context_;
  step.device_inputs = device_inputs;
  step.n_rows = plan.rows.size();
  step.sampled_row = staging_.sampled_row;
  StagingSlot& slot = b.slot(step.context);
  // Before the host rows move: the slot's pinned logits buffer is sized by them.
  const size_t meta_bytes = b.pack(staging_, step.context);
  step.host_rows = std::move(staging_.host_rows);
  for (const StepRow& r : plan.rows) {
    step.any_logprobs = step.any_logprobs || (r.sample && r.sampling.logprobs >= 0);
    step.any_prompt_logprobs = step.any_prompt_logprobs || r.sampling.prompt_logprobs >= 0;
  }

  TANDEM_CUDA_CHECK(cudaEventRecord(slot.start, stream_));
  TANDEM_CUDA_CHECK(
      cudaMemcpyAsync(b.meta_device(), slot.meta, meta_bytes, cudaMemcpyHostToDevice, stream_));
  if (device_inputs)  // the tokens the previous step's sampler wrote, row for row
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(const_cast<int32_t*>(b.token_meta().token), b.sampled,
                                      step.n_rows * sizeof(int32_t), cudaMemcpyDeviceToDevice,
                                      stream_));
  for (const KvSlotCopy& c : staging_.kv_copies)
    copy_kv_slots(kv_, cfg_.n_layer, c.from, c.to, c.slots, stream_);
  if (staging_.decode_only && options_.graphs)
    run_graph(staging_);
  else
    enqueue_forward(staging_);
  TANDEM_CUDA_CHECK(cudaGetLastError());
  if (!staging_.sample_rows.empty())
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(slot.tokens, b.sampled,
                                      staging_.sample_rows.size() * sizeof(int32_t),
                                      cudaMemcpyDeviceToHost, stream_));
  size_t at = 0;  // the host rows' logits, one after another
  for (const HostRow& h : step.host_rows) {
    const size_t floats = static_cast<size_t>(h.logit_rows) * cfg_.n_vocab;
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(slot.logits + at,
                                      b.logits + static_cast<size_t>(h.first_logit) * cfg_.n_vocab,
                                      floats * sizeof(float), cudaMemcpyDeviceToHost, stream_));
    at += floats;
  }
  TANDEM_CUDA_CHECK(cudaEventRecord(slot.end, stream_));
  if (timer_) {  // profiling: each step alone
    TANDEM_CUDA_CHECK(cudaStreamSynchronize(stream_));
    timer_->settle();
  }
  last_context_ = step.context;
  in_flight_.push_back(std::move(step));
}

bool CudaExecutor::ready() {
  if (in_flight_.empty()) return true;
  return cudaEventQuery(buffers_->slot(in_flight_.front().context).end) != cudaErrorNotReady;
}

void CudaExecutor::collect(StepResult& result) {
  if (in_flight_.empty()) throw std::logic_error("cuda collect: no step in flight");
  Submitted step = std::move(in_flight_.front());
  in_flight_.pop_front();
  StagingSlot& slot = buffers_->slot(step.context);
  TANDEM_CUDA_CHECK(cudaEventSynchronize(slot.end));
  record_timing(step);
  result.tokens.assign(step.n_rows, kNoToken);
  for (size_t i = 0; i < step.sampled_row.size(); ++i)
    result.tokens[step.sampled_row[i]] = slot.tokens[i];
  if (step.any_logprobs) result.logprobs.assign(step.n_rows, RowLogprobs{});
  if (step.any_prompt_logprobs) result.prompt_logprobs.assign(step.n_rows, {});
  sample_on_host(step, result);
}

// Rows with penalties, a grammar, log-probabilities or infill: the CPU Sampler on their
// logits, as CpuExecutor samples them (its token replaces the device's).
void CudaExecutor::sample_on_host(const Submitted& step, StepResult& result) {
  const float* logits = buffers_->slot(step.context).logits;
  const auto vocab = static_cast<size_t>(cfg_.n_vocab);
  for (const HostRow& h : step.host_rows) {
    std::span<float> rows(const_cast<float*>(logits), static_cast<size_t>(h.logit_rows) * vocab);
    logits += rows.size();
    const auto row = [&](int64_t k) { return rows.subspan(k * vocab, vocab); };
    if (h.sampling.prompt_logprobs >= 0) {
      const auto count = static_cast<int64_t>(h.tokens.size());
      for (int64_t j = 0; j < count; ++j) {
        const int32_t target =
            j + 1 < count ? h.tokens[j + 1] : (h.sample ? -1 : h.next_prompt_token);
        if (target < 0) continue;
        auto& out = result.prompt_logprobs[h.row];
        out.emplace_back();
        host_sampler_.logprobs_of(row(j), target, h.sampling.prompt_logprobs, out.back());
      }
    }
    if (!h.sample) continue;
    RowHistory history;
    history.ban_stop = h.ban_stop;
    if (h.penalty_prompt) history.prompt = *h.penalty_prompt;
    history.output = h.penalty_output;
    if (h.grammar) history.allowed = grammar_mask(*h.grammar, mask_);
    history.state = h.sampler_state.get();
    RowLogprobs* lp = result.logprobs.empty() ? nullptr : &result.logprobs[h.row];
    result.tokens[h.row] =
        host_sampler_.sample(row(h.logit_rows - 1), h.sampling, h.position, history, lp);
    if (h.grammar) h.grammar->advance(result.tokens[h.row]);
  }
}

void CudaExecutor::record_timing(const Submitted& step) {
  StagingSlot& slot = buffers_->slot(step.context);
  float busy_ms = 0, gap_ms = -1;
  cudaEventElapsedTime(&busy_ms, slot.start, slot.end);
  if (step.device_inputs && step.previous_context >= 0)
    cudaEventElapsedTime(&gap_ms, buffers_->slot(step.previous_context).end, slot.start);
  std::lock_guard lock(timing_mutex_);
  busy_seconds_ += busy_ms / 1000.0;
  if (gap_ms < 0) return;
  if (gaps_us_.size() < 4096) {
    gaps_us_.push_back(std::max(0.0f, gap_ms * 1000.0f));
  } else {
    gaps_us_[next_gap_] = std::max(0.0f, gap_ms * 1000.0f);
    next_gap_ = (next_gap_ + 1) % gaps_us_.size();
  }
}

bool CudaExecutor::device_timing(double& busy_seconds, double& gap_median_us) const {
  std::lock_guard lock(timing_mutex_);
  busy_seconds = busy_seconds_;
  gap_median_us = -1;
  if (!gaps_us_.empty()) {
    std::vector<float> g = gaps_us_;
    std::nth_element(g.begin(), g.begin() + static_cast<ptrdiff_t>(g.size() / 2), g.end());
    gap_median_us = g[g.size() / 2];
  }
  return true;
}

}  // namespace
}  // namespace cuda

std::unique_ptr<StepExecutor> make_cuda_executor(std::shared_ptr<const Model> model,
                                                 CudaExecutorOptions options) {
  return std::make_unique<cuda::CudaExecutor>(std::move(model), std::move(options));
}

}  // namespace tandem
