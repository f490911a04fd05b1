#include "scheduler/engine.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string_view>

#include "runner/sampler/token_pieces.h"
#include "scheduler/model_fingerprint.h"

namespace tandem {
namespace {

// The template's BOS/EOS variables are the tokenizer's token texts, as transformers
// passes its bos_token and eos_token.
std::optional<std::string> token_text(const Tokenizer& tokenizer, int32_t id) {
  if (id < 0) return std::nullopt;
  return tokenizer.token_text(id);
}

// Whether a text is one control token, which skip_special_tokens drops from the output.
bool is_control_token_text(const Tokenizer& tokenizer, const std::string& text) {
  const std::vector<int32_t> ids = tokenizer.encode(text, false, /*parse_special=*/true);
  return ids.size() == 1 && tokenizer.token_bytes(ids[0], /*render_special=*/false).empty();
}

std::shared_ptr<const JinjaChatTemplate> compile_chat_template(const std::string& source,
                                                               const std::string& origin,
                                                               bool from_flag) {
  auto compiled = JinjaChatTemplate::compile(source);
  if (const auto* error = std::get_if<ChatTemplateError>(&compiled)) {
    std::string what = error->describe();
    if (!from_flag) {  // the description may end its own sentence
      if (!what.empty() && what.back() == '.') what.pop_back();
      what += "; give another with --chat-template";
    }
    throw EngineOptionError("chat template (" + origin + "): " + what);
  }
  return std::make_shared<const JinjaChatTemplate>(
      std::move(std::get<JinjaChatTemplate>(compiled)));
}

// --chat-template's, else the file's default template; beside that one, the file's
// tool_use template (the only one, where the file has no default: llama.cpp's choice).
std::optional<ChatTemplateCard> load_chat_template(const EngineOptions& options,
                                                   const gguf::File& file,
                                                   const Tokenizer& tokenizer) {
  ChatTemplateCard card;
  std::string source;
  if (options.chat_template) {
    source = *options.chat_template;
    card.origin = options.chat_template_origin;
  } else {
    source = file.get_string_or("tokenizer.chat_template", "");
    card.origin = "tokenizer.chat_template";
    const std::string tool_use = file.get_string_or("tokenizer.chat_template.tool_use", "");
    if (source.empty()) {
      source = tool_use;
      card.origin = "tokenizer.chat_template.tool_use";
    } else if (!tool_use.empty()) {
      // Beside a default that compiles, one tandem cannot parse only leaves tool requests
      // on the default (they were served so before tool_use was read), with a warning.
      try {
        card.tool_use = compile_chat_template(tool_use, "tokenizer.chat_template.tool_use",
                                              /*from_flag=*/false);
        card.tool_use_format = detect_tool_call_format(tool_use);
      } catch (const EngineOptionError& e) {
        std::fprintf(stderr, "tandem: warning: %s; requests with tools use the default template\n",
                     e.what());
      }
    }
    if (source.empty()) return std::nullopt;  // chat requests get a 400 saying so
  }
  card.compiled = compile_chat_template(source, card.origin, options.chat_template.has_value());
  card.source = source;
  card.bos_token = token_text(tokenizer, tokenizer.bos_id());
  card.eos_token = token_text(tokenizer, tokenizer.eos_id());
  card.tool_format = detect_tool_call_format(source);
  card.reasoning = detect_reasoning_markers(source);
  card.reasoning_markers_are_control =
      card.reasoning && (is_control_token_text(tokenizer, card.reasoning->open) ||
                         is_control_token_text(tokenizer, card.reasoning->close));
  card.split_reasoning = options.split_reasoning;
  return card;
}

// Every token's piece (rendered without special tokens), for the sampler's infill step.
std::shared_ptr<const TokenPieces> token_pieces(const Tokenizer& tokenizer) {
  auto pieces = std::make_shared<TokenPieces>();
  for (int32_t id = 0; id < tokenizer.vocab_size(); ++id)
    pieces->push_back(tokenizer.token_bytes(id, /*render_special=*/false));
  return pieces;
}

// The end-of-turn token that the infill step answers with: tokenizer.ggml.eot_token_id, else
// the first end-of-generation id spelled as one of the turn ends llama.cpp looks for; -1,
// where none is, lets the sampler take the first end-of-generation id.
int32_t end_of_turn_id(const Tokenizer& tokenizer) {
  if (tokenizer.eot_id() >= 0) return tokenizer.eot_id();
  static constexpr std::string_view kTurnEnds[] = {
      "<|eot_id|>",      "<|im_end|>", "<|end|>", "<end_of_turn>",         "<|endoftext|>",
      "<|end_of_text|>", "<EOT>",      "_<EOT>",  "<｜end▁of▁sentence｜>", "<end_of_utterance>"};
  const std::vector<int32_t>& eog = tokenizer.eog_ids();
  for (std::string_view text : kTurnEnds) {
    const int32_t id = tokenizer.find_token(text);
    if (id >= 0 && std::find(eog.begin(), eog.end(), id) != eog.end()) return id;
  }
  return -1;
}

// The settings every executor takes from the engine's options (CpuExecutorOptions or
// CudaExecutorOptions).
template <typename ExecutorOptions>
ExecutorOptions executor_options(const EngineOptions& options, const Tokenizer& tokenizer) {
  ExecutorOptions exec;
  exec.context_length = options.context_length;
  exec.kv_tokens = options.kv_tokens;
  exec.kv_type = options.kv_type;
  exec.eog_ids = tokenizer.eog_ids();
  exec.token_pieces = token_pieces(tokenizer);
  exec.eot_id = end_of_turn_id(tokenizer);
  exec.max_sequences = options.scheduler.max_batch;
  exec.max_step_tokens = options.scheduler.max_step_tokens;
  return exec;
}

}  // namespace

std::unique_ptr<StepExecutor> Engine::make_executor(const EngineOptions& options) {
  if (options.device == "cuda") {
    if (options.profile != nullptr)
      throw EngineOptionError("--profile: times the CPU forward pass, so it needs --device cpu");
    // The GPU executor runs no verify rows (StepRow::verify) yet.
    if (options.scheduler.spec_tokens > 0)
      throw EngineOptionError("--spec-tokens: speculative decoding needs --device cpu");
    const auto exec = executor_options<CudaExecutorOptions>(options, *tokenizer_);
    try {
      auto executor = make_cuda_executor(model_, exec);
      device_description_ = cuda_device_description();
      return executor;
    } catch (const CudaUnavailable& e) {
      throw EngineOptionError(e.what());
    } catch (const std::invalid_argument& e) {
      throw EngineOptionError(e.what());
    }
  }
  if (options.device != "cpu")
    throw EngineOptionError("--device: unknown device '" + options.device + "' (cpu or cuda)");
  auto exec = executor_options<CpuExecutorOptions>(options, *tokenizer_);
  exec.threads = options.threads;
  exec.local_kv_group = options.local_kv_group;
  exec.profile = options.profile;
  exec.kv_prefault_tokens = options.kv_prefault_tokens;
  // A --kv-tokens within its range that this machine cannot hold is the flag's fault, said
  // before the allocation (which overcommit may grant, to fail page by page later, and
  // which under ASan aborts).
  const ModelConfig& config = model_->config();
  const int64_t kv_tokens = cpu_kv_tokens(config, exec);
  const double kv_bytes = cpu_kv_bytes(config, exec);
  const double memory =
      static_cast<double>(::sysconf(_SC_PHYS_PAGES)) * static_cast<double>(::sysconf(_SC_PAGESIZE));
  const auto refuse = [&](const char* what) {
    char text[192];
    std::snprintf(text, sizeof text,
                  "--kv-tokens: a KV cache of %lld tokens takes %.1f GiB, %s; give fewer",
                  static_cast<long long>(kv_tokens), kv_bytes / double(1 << 30), what);
    return EngineOptionError(text);
  };
  if (memory > 0 && kv_bytes > memory) throw refuse("more than this machine's memory");
  std::unique_ptr<CpuExecutor> executor;
  try {
    executor = std::make_unique<CpuExecutor>(model_, exec);
  } catch (const std::bad_alloc&) {
    throw refuse("which with the weights is more memory than there is");
  }
  threads_ = executor->threads();
  device_description_ =
      "cpu, " + std::to_string(threads_) + (threads_ == 1 ? " compute thread" : " compute threads");
  return executor;
}

Engine::Engine(EngineOptions options) {
  // Every running request decodes a token a step, and those rows are never cut to fit:
  // with more of them than the step holds, prompts never got a token of a step until one
  // finished (vLLM refuses max_num_batched_tokens < max_num_seqs the same way).
  if (options.scheduler.max_step_tokens < options.scheduler.max_batch) {
    throw EngineOptionError("--max-step-tokens " +
                            std::to_string(options.scheduler.max_step_tokens) +
                            " is below --max-batch " + std::to_string(options.scheduler.max_batch) +
                            ": a step must hold a token for each running request");
  }
  model_ = Model::load(options.model);
  tokenizer_ = Tokenizer::from_gguf(model_->file());
  // One embedding row per token, as llama.cpp checks token_embd's shape against the token
  // list: a longer list would name tokens the model has no row for.
  if (tokenizer_->vocab_size() != model_->config().n_vocab)
    throw gguf::GgufError(model_->file().name() + ": tokenizer.ggml.tokens holds " +
                          std::to_string(tokenizer_->vocab_size()) + " tokens, token_embd.weight " +
                          std::to_string(model_->config().n_vocab) + " rows");

  const int32_t model_context = model_->config().context_length;
  if (options.context_length > model_context) {
    throw EngineOptionError("--ctx-size " + std::to_string(options.context_length) +
                            " is beyond the model's context of " + std::to_string(model_context) +
                            " tokens");
  }
  ModelCard card;
  if (options.chat) card.chat_template = load_chat_template(options, model_->file(), *tokenizer_);

  device_ = std::make_unique<Device>(make_executor(options));
  scheduler_ = std::make_unique<Scheduler>(*device_, *tokenizer_, options.scheduler);

  const DeviceInfo& info = device_->info();
  card.names = options.served_names;
  if (card.names.empty()) card.names.push_back(options.model.stem().string());
  card.id = card.names.front();
  card.path = options.model.string();
  card.context_length = scheduler_->context_length();  // at most what the KV pool holds
  card.vocab_size = tokenizer_->vocab_size();
  card.kv_capacity_tokens = int64_t{info.kv_blocks} * int64_t{info.kv_block_size};
  card.fingerprint =
      model_fingerprint(options.model, model_->file().data_offset(), tandem_version());
  card.kv_type = info.kv_type;
  card.kv_bytes_per_token = info.kv_bytes_per_token;
  card.kv_local_capacity_tokens = int64_t{info.kv_local_blocks} * int64_t{info.kv_block_size};
  card.kv_local_bytes_per_token = info.kv_local_bytes_per_token;
  card.sliding_window = info.sliding_window;
  card.pooling = options.pooling.value_or(model_->config().pooling().value_or(Pooling::kLast));
  const int64_t type = model_->config().pooling_type;
  if (!options.pooling && !model_->config().pooling() && type > 0)
    card.pooling_refusal =
        "This model's pooling_type is " + std::to_string(type) +
        (type == 4 ? " (rank: a reranker's)" : "") +
        ", which /v1/embeddings does not serve; start the server with --pooling mean, cls or "
        "last to embed with it.";
  card.pooling_origin = options.pooling              ? "--pooling"
                        : model_->config().pooling() ? "pooling_type"
                                                     : "default";
  card.embedding_size = info.pools ? info.embedding_size : 0;
  // The vocabulary as the grammar engine sees it, once per model (the trie and the plain
  // text index cost milliseconds for a 50k vocabulary; no request rebuilds them).
  card.grammars =
      std::make_shared<grammar::GrammarCache>(grammar::Vocabulary::from_tokenizer(*tokenizer_),
                                              /*capacity=*/64, options.grammar_cache_bytes);
  card_ = std::move(card);
}

Engine::~Engine() {
  // The scheduler finalizes its steps in flight before the device's worker goes away.
  scheduler_->stop();
  scheduler_.reset();
  device_.reset();
}

}  // namespace tandem
