// An engine: a model, its tokenizer, the CPU device (worker thread + compute pool) and
// the scheduler that drives it, assembled and started in the right order. `tandem serve`
// puts the HTTP server in front of one; `tandem bench --offline` submits to it directly.
// scheduler() is thread-safe as Scheduler is; the rest is immutable after construction.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "runner/cuda/cuda_executor.h"
#include "runner/device/cpu_executor.h"
#include "runner/device/device.h"
#include "runner/grammar/grammar_cache.h"
#include "runner/model/model.h"
#include "runner/tokenizer/tokenizer.h"
#include "scheduler/model_card.h"
#include "scheduler/scheduler.h"

namespace tandem {

struct EngineOptions {
  std::filesystem::path model;  // a GGUF file
  // The names requests may use (--served-model-name); the first is the id responses
  // report. Empty: the file's stem.
  std::vector<std::string> served_names;
  // A chat template overriding the file's (--chat-template): its source and where it came
  // from (the path, for /v1/models and the startup line). nullopt: the GGUF's own.
  std::optional<std::string> chat_template;
  std::string chat_template_origin;
  // --reasoning-format deepseek: chat answers carry a thinking model's reasoning apart from
  // its content by default (ChatTemplateCard::split_reasoning).
  bool split_reasoning = false;
  // false: no chat request reaches this engine (generate, bench's completions), so the
  // GGUF's template is not compiled: one tandem cannot parse must not refuse the model.
  // The card then has no template.
  bool chat = true;
  int32_t context_length = 0;  // --ctx-size: at most the model's; 0: the model's
  // /v1/embeddings' pooling (--pooling): nullopt takes the file's {arch}.pooling_type, and
  // last where it has none (vLLM's default for a decoder model served for embeddings).
  std::optional<Pooling> pooling;
  int threads = 0;                // compute threads; 0: all cores
  int64_t kv_tokens = 0;          // KV cache capacity; 0: a 2 GiB budget (cpu_executor.h)
  KvType kv_type = KvType::kF16;  // the KV cache's element type (--kv-dtype)
  // false: sliding-window layers keep every position like the global ones (the layout
  // before their own block group; tests compare the two).
  bool local_kv_group = true;
  // Where steps run (--device): "cpu", or "cuda" (the GPU executor, runner/cuda/).
  std::string device = "cpu";
  // KV positions whose pages the CPU executor writes at startup (CpuExecutorOptions::
  // kv_prefault_tokens): `generate` and `bench --model` ask for what their requests can
  // use, so that no step of theirs maps a fresh page. 0: none. Ignored with cuda (device
  // memory has no first write to pay).
  int64_t kv_prefault_tokens = 0;
  // Compiled grammars (structured outputs, tools) kept for later requests: at most this
  // many bytes (--grammar-cache-mib).
  size_t grammar_cache_bytes = grammar::GrammarCache::kDefaultBudgetBytes;
  // Non-null: the CPU executor times every step phase by phase into it (forward_profile.h;
  // `tandem generate --profile`). Read it once the engine is stopped. Refused with cuda.
  ForwardProfile* profile = nullptr;
  SchedulerOptions scheduler;
};

// A chat template (the GGUF's or --chat-template's) that does not compile, a --ctx-size
// beyond the model's context, or --device cuda where no GPU can be used (or with an option
// the GPU executor cannot honour). what() is one line naming the problem.
struct EngineOptionError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Engine {
 public:
  // Loads the model and tokenizer and builds the device and scheduler; the scheduler
  // loop is not running yet. Throws gguf::GgufError for a bad or unsupported model file,
  // EngineOptionError for a chat template that does not compile or a bad context length.
  explicit Engine(EngineOptions options);
  ~Engine();  // stops the scheduler, then the device

  void start() { scheduler_->start(); }
  void stop() { scheduler_->stop(); }

  Scheduler& scheduler() { return *scheduler_; }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  const ModelConfig& config() const { return model_->config(); }
  const Model& model() const { return *model_; }
  const DeviceInfo& device_info() const { return device_->info(); }
  int threads() const { return threads_; }
  // "cpu, N compute threads", or the GPU's name and memory with --device cuda.
  const std::string& device_description() const { return device_description_; }
  // The model as /v1/models and the bench describe it.
  const ModelCard& card() const { return card_; }
  // Structured output: the card's grammars, compiled for this model's vocabulary.
  grammar::GrammarCache& grammars() { return *card_.grammars; }

 private:
  std::shared_ptr<const Model> model_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::unique_ptr<Device> device_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<StepExecutor> make_executor(const EngineOptions& options);

  ModelCard card_;
  int threads_ = 0;
  std::string device_description_;
};

}  // namespace tandem
