// `tandem generate`: runs one prompt through the CPU runner and prints the
// continuation as it is produced, then the prompt and generation speeds.
#include <chrono>
#include <cstdio>
#include <iostream>
#include <numeric>
#include <optional>
#include <random>

#include "app/command.h"
#include "runner/device/kv_cache.h"
#include "runner/model/forward.h"
#include "runner/model/model.h"
#include "runner/sampler/sampler.h"
#include "runner/tokenizer/tokenizer.h"
#include "runner/util/thread_pool.h"

namespace tandem::app {
namespace {

struct GenerateOptions {
  std::string model;
  std::string prompt;
  int32_t max_tokens = 64;
  float temperature = 0.0f;
  int32_t top_k = 0;
  float top_p = 1.0f;
  float min_p = 0.0f;
  std::optional<uint64_t> seed;
  int threads = 0;
  bool ignore_eos = false;
};

int run_generate(const GenerateOptions& o) {
  using Clock = std::chrono::steady_clock;
  std::unique_ptr<Model> model;
  std::unique_ptr<Tokenizer> tokenizer;
  try {
    model = Model::load(o.model);
    tokenizer = Tokenizer::from_gguf(model->file());
  } catch (const gguf::GgufError& e) {
    throw UsageError(e.what());
  }
  const ModelConfig& cfg = model->config();
  std::vector<int32_t> prompt = tokenizer->encode(o.prompt, /*add_special=*/true,
                                                  /*parse_special=*/true);
  if (prompt.empty()) throw UsageError("--prompt: encodes to no tokens");
  const int64_t total = static_cast<int64_t>(prompt.size()) + o.max_tokens;
  if (total > cfg.context_length)
    throw UsageError("--max-tokens: prompt (" + std::to_string(prompt.size()) +
                     " tokens) + max tokens exceed the context length " +
                     std::to_string(cfg.context_length));

  ThreadPool pool(o.threads > 0 ? o.threads : default_thread_count());
  const int32_t bs = KvCache::kDefaultBlockSize;
  KvCache kv(cfg.n_layer, cfg.kv_dim(), static_cast<int32_t>((total + bs - 1) / bs), bs);
  std::vector<int32_t> blocks(kv.n_blocks());
  std::iota(blocks.begin(), blocks.end(), 0);
  ForwardPass forward(*model, kv, pool);
  Sampler sampler(SamplerConfig{cfg.n_vocab, tokenizer->eog_ids()});

  SamplingParams params;
  params.temperature = o.temperature;
  params.top_k = o.top_k;
  params.top_p = o.top_p;
  params.min_p = o.min_p;
  params.ignore_eos = o.ignore_eos;
  params.seed = o.seed ? *o.seed : std::random_device{}();

  Detokenizer detok(*tokenizer);
  std::vector<int32_t> input = prompt;
  int32_t position = 0;
  int32_t generated = 0;
  double prompt_seconds = 0, decode_seconds = 0;
  bool eog = false;
  while (generated < o.max_tokens && !eog) {
    const auto start = Clock::now();
    ForwardRow row{input, position, blocks, true};
    std::span<float> logits = forward.run({&row, 1});
    position += static_cast<int32_t>(input.size());
    const int32_t token = sampler.sample(logits, params, position);
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    (generated == 0 ? prompt_seconds : decode_seconds) += seconds;
    ++generated;
    const auto& eogs = tokenizer->eog_ids();
    eog = !o.ignore_eos && std::find(eogs.begin(), eogs.end(), token) != eogs.end();
    if (!eog) std::cout << detok.push(token) << std::flush;
    input.assign(1, token);
  }
  std::cout << detok.flush() << "\n";
  std::fprintf(stderr,
               "prompt: %zu tokens in %.3f s (%.1f tok/s); generated %d tokens, decode %.1f "
               "tok/s (%d threads, seed %llu)\n",
               prompt.size(), prompt_seconds, prompt.size() / prompt_seconds, generated,
               generated > 1 ? (generated - 1) / decode_seconds : 0.0, pool.size(),
               static_cast<unsigned long long>(params.seed));
  return 0;
}

}  // namespace

Subcommand make_generate_command(CLI::App& app) {
  auto opts = std::make_shared<GenerateOptions>();
  CLI::App* cmd = app.add_subcommand("generate", "Generate a continuation of a prompt");
  cmd->add_option("--model", opts->model, "GGUF model file")->required()->check(CLI::ExistingFile);
  cmd->add_option("--prompt", opts->prompt, "Prompt text")->required();
  cmd->add_option("--max-tokens", opts->max_tokens, "Tokens to generate")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--temperature", opts->temperature, "Sampling temperature (0: greedy)")
      ->check(CLI::Range(0.0f, 100.0f));
  cmd->add_option("--top-k", opts->top_k, "Keep the k most likely tokens (0: off)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--top-p", opts->top_p, "Nucleus sampling mass in (0, 1] (1: off)")
      ->check(CLI::Range(1e-6f, 1.0f));
  cmd->add_option("--min-p", opts->min_p, "Minimum probability relative to the top [0, 1)")
      ->check(CLI::Range(0.0f, 0.999999f));
  cmd->add_option("--seed", opts->seed, "Sampling seed (default: random, printed)");
  cmd->add_option("--threads", opts->threads, "Compute threads (default: all cores)")
      ->check(CLI::Range(1, 1024));
  cmd->add_flag("--ignore-eos", opts->ignore_eos, "Keep generating past end-of-sequence");
  return {cmd, [opts] { return run_generate(*opts); }};
}

}  // namespace tandem::app
