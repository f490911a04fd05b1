#include "scheduler/engine.h"

namespace tandem {

Engine::Engine(EngineOptions options) {
  model_ = Model::load(options.model);
  tokenizer_ = Tokenizer::from_gguf(model_->file());
  model_name_ = model_->file().get_string_or("general.name", options.model.stem().string());
  if (model_name_.empty()) model_name_ = options.model.stem().string();

  CpuExecutorOptions exec;
  exec.threads = options.threads;
  exec.kv_tokens = options.kv_tokens;
  exec.eog_ids = tokenizer_->eog_ids();
  auto executor = std::make_unique<CpuExecutor>(model_, exec);
  threads_ = executor->threads();
  device_ = std::make_unique<Device>(std::move(executor));
  scheduler_ = std::make_unique<Scheduler>(*device_, *tokenizer_, options.scheduler);
}

Engine::~Engine() {
  // The scheduler finalizes its steps in flight before the device's worker goes away.
  scheduler_->stop();
  scheduler_.reset();
  device_.reset();
}

}  // namespace tandem
