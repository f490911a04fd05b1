#include "scheduler/engine.h"

namespace tandem {

Engine::Engine(EngineOptions options) {
  model_ = Model::load(options.model);
  tokenizer_ = Tokenizer::from_gguf(model_->file());

  CpuExecutorOptions exec;
  exec.threads = options.threads;
  exec.kv_tokens = options.kv_tokens;
  exec.kv_type = options.kv_type;
  exec.eog_ids = tokenizer_->eog_ids();
  auto executor = std::make_unique<CpuExecutor>(model_, exec);
  threads_ = executor->threads();
  device_ = std::make_unique<Device>(std::move(executor));
  scheduler_ = std::make_unique<Scheduler>(*device_, *tokenizer_, options.scheduler);

  const DeviceInfo& info = device_->info();
  card_.id = options.served_name.empty() ? options.model.stem().string() : options.served_name;
  card_.context_length = model_->config().context_length;
  card_.vocab_size = tokenizer_->vocab_size();
  card_.kv_capacity_tokens = int64_t{info.kv_blocks} * int64_t{info.kv_block_size};
  card_.kv_type = info.kv_type;
  card_.kv_bytes_per_token = info.kv_bytes_per_token;
  card_.chat_template =
      detect_chat_template(model_->file().get_string_or("tokenizer.chat_template", ""));
}

Engine::~Engine() {
  // The scheduler finalizes its steps in flight before the device's worker goes away.
  scheduler_->stop();
  scheduler_.reset();
  device_.reset();
}

}  // namespace tandem
