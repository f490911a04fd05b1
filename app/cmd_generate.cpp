// `tandem generate`: runs one prompt through the same Engine and scheduler that serve
// requests, prints the continuation as it streams (a stdout sink), then the prompt and
// generation speeds. Only the sink differs from a server request.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <future>
#include <iostream>
#include <limits>
#include <numeric>
#include <optional>
#include <random>

#include "app/cli_checks.h"
#include "app/command.h"
#include "runner/model/forward_profile.h"
#include "runner/model/roofline.h"
#include "scheduler/engine.h"

namespace tandem::app {
namespace {

using Clock = std::chrono::steady_clock;

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
  std::string kv_dtype = "f16";
  std::string device = "cpu";
  bool ignore_eos = false;
  bool ceilings = false;
  bool profile = false;
  SpecFlags spec;
};

// Prints text as the scheduler thread hands it over; the main thread waits on `done`.
class StdoutSink final : public RequestSink {
 public:
  struct Outcome {
    bool ok = false;
    std::string error;
    Usage usage;
    std::optional<Clock::time_point> first_text;
    Clock::time_point end;
  };

  std::future<Outcome> outcome() { return done_.get_future(); }

  void on_text(std::string_view delta) override {
    if (!outcome_.first_text) outcome_.first_text = Clock::now();
    std::cout << delta << std::flush;
  }
  void on_finish(FinishReason, const Usage& usage) override {
    outcome_.ok = true;
    outcome_.usage = usage;
    settle();
  }
  void on_error(ErrorKind kind, std::string_view message) override {
    outcome_.error = std::string(error_kind_name(kind)) + ": " + std::string(message);
    settle();
  }

 private:
  void settle() {
    outcome_.end = Clock::now();
    done_.set_value(std::move(outcome_));
  }

  Outcome outcome_;
  std::promise<Outcome> done_;
};

GenerationRequest make_request(const GenerateOptions& o, std::vector<int32_t> prompt) {
  GenerationRequest request;
  request.prompt = std::move(prompt);
  request.max_tokens = o.max_tokens;
  request.sampling.temperature = o.temperature;
  request.sampling.top_k = o.top_k;
  request.sampling.top_p = o.top_p;
  request.sampling.min_p = o.min_p;
  request.sampling.ignore_eos = o.ignore_eos;
  request.sampling.seed = o.seed ? *o.seed : std::random_device{}();
  return request;
}

double seconds(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

// Measures the machine's ceilings with the engine's thread count and prints the run's
// speeds against them: decode (one row per step) against the memory floor, the prompt
// (many rows, of which only the last goes through the output head) against the compute
// peak. Decode is left out when fewer than two tokens were generated (nothing timed).
void print_ceiling_fractions(const Engine& engine, double prompt_tokens, double prompt_seconds,
                             double decode_tok_s) {
  ThreadPool pool(engine.threads());
  const kernels::MachineCeilings c = kernels::measure_ceilings(pool);
  const Model::TokenWork work = engine.model().work_per_token();
  const Roofline decode =
      roofline(work, c, {decode_tok_s, decode_tok_s, decode_tok_s, decode_tok_s});
  const Roofline prompt =
      roofline(work, c, {prompt_tokens / prompt_seconds, 1 / prompt_seconds, 0, 0});
  std::string decode_text = "decode: not timed";
  if (decode_tok_s > 0) {
    char text[160];
    std::snprintf(text, sizeof(text),
                  "decode: %.2f of the memory floor (%.1f MB of weights per token: %.1f GB/s of "
                  "%.1f)",
                  decode.bandwidth_fraction, work.weight_bytes / 1e6, decode.weight_gbps,
                  c.read_gbps_all_threads);
    decode_text = text;
  }
  std::fprintf(stderr, "%s\n%s; prompt: %.1f GFLOP/s, %.2f of the %s peak (%.0f)\n",
               kernels::describe(c).c_str(), decode_text.c_str(), prompt.gflops,
               prompt.peak_fraction, kernels::peak_name(work.peak), prompt.peak_gflops);
}

// Where the steps' time went, phase by phase (forward_profile.h), the largest first: the
// run's prompt step(s) and decode steps together.
void print_profile(const ForwardProfile& profile) {
  const double total = profile.total();
  if (profile.steps == 0 || total <= 0) return;
  std::array<int, kForwardPhaseCount> order;
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return profile.seconds[a] > profile.seconds[b]; });
  std::fprintf(stderr, "where the steps' time went (%lld steps, %.3f s):\n",
               static_cast<long long>(profile.steps), total);
  for (int i : order) {
    std::fprintf(stderr, "  %-14s %9.2f ms  %5.1f%%\n",
                 forward_phase_name(static_cast<ForwardPhase>(i)), profile.seconds[i] * 1e3,
                 100.0 * profile.seconds[i] / total);
  }
}

int run_generate(const GenerateOptions& o) {
  ForwardProfile profile;
  EngineOptions options;
  options.profile = o.profile ? &profile : nullptr;
  // The KV pages the request can write, mapped before it runs (engine.h): a token per byte
  // of the prompt bounds its tokens, plus the specials the tokenizer may add.
  options.kv_prefault_tokens = static_cast<int64_t>(o.prompt.size()) + 8 + o.max_tokens;
  options.model = o.model;
  options.chat = false;  // the prompt is raw text, never rendered through a chat template
  options.threads = o.threads;
  options.kv_type = *parse_kv_type(o.kv_dtype);
  options.device = o.device;
  o.spec.set(options.scheduler);
  std::unique_ptr<Engine> engine;
  try {
    engine = std::make_unique<Engine>(options);
  } catch (const gguf::GgufError& e) {
    throw UsageError(e.what());
  } catch (const EngineOptionError& e) {
    throw UsageError(e.what());
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("--kv-dtype: ") + e.what());
  }
  std::vector<int32_t> prompt = engine->tokenizer().encode(o.prompt, /*add_special=*/true,
                                                           /*parse_special=*/true);
  if (prompt.empty()) throw UsageError("--prompt: encodes to no tokens");
  const int32_t context = engine->config().context_length;
  // A prompt too long on its own is the prompt's fault, whatever --max-tokens says.
  if (static_cast<int64_t>(prompt.size()) >= context)
    throw UsageError("--prompt: prompt (" + std::to_string(prompt.size()) +
                     " tokens) exceeds the context length " + std::to_string(context) +
                     " (it needs room for at least one generated token)");
  if (static_cast<int64_t>(prompt.size()) + o.max_tokens > context)
    throw UsageError("--max-tokens: prompt (" + std::to_string(prompt.size()) + " tokens) + " +
                     std::to_string(o.max_tokens) + " max tokens exceed the context length " +
                     std::to_string(context));

  GenerationRequest request = make_request(o, std::move(prompt));
  const uint64_t seed = request.sampling.seed;
  const size_t prompt_tokens = request.prompt.size();
  auto sink = std::make_shared<StdoutSink>();
  request.sink = sink;
  std::future<StdoutSink::Outcome> pending = sink->outcome();
  engine->start();
  const Clock::time_point start = Clock::now();
  const SubmitResult submitted = engine->scheduler().submit(std::move(request));
  if (!submitted.accepted()) throw UsageError("--prompt: " + submitted.message);
  const StdoutSink::Outcome outcome = pending.get();
  std::cout << "\n";
  if (!outcome.ok) {
    std::fprintf(stderr, "tandem generate: %s\n", outcome.error.c_str());
    return 1;
  }
  // The prompt's time runs to the first text; the rest is decode.
  const Clock::time_point first = outcome.first_text.value_or(outcome.end);
  const double prompt_seconds = seconds(start, first);
  const double decode_seconds = seconds(first, outcome.end);
  const int64_t generated = outcome.usage.completion_tokens;
  const double decode_tok_s =
      generated > 1 && decode_seconds > 0 ? (generated - 1) / decode_seconds : 0.0;
  const ModelCard& card = engine->card();
  std::string kv_local;  // the sliding-window layers' own pool, when the model has one
  if (card.kv_local_capacity_tokens > 0)
    kv_local = "; sliding-window layers " + std::to_string(card.kv_local_capacity_tokens) +
               " tokens at " + std::to_string(card.kv_local_bytes_per_token) + " bytes/token";
  const DeviceInfo& device = engine->device_info();
  if (device.kv_prefaulted_tokens > 0)
    kv_local += "; the first " + std::to_string(device.kv_prefaulted_tokens) +
                " positions' pages written at load, " +
                std::to_string(static_cast<int>(device.kv_prefault_seconds * 1000 + 0.5)) + " ms";
  // Decode is timed from the first text to the end: not with fewer than two tokens, nor
  // when no text came before the end (every token a skipped special one).
  char decode_text[64];
  if (decode_tok_s > 0)
    std::snprintf(decode_text, sizeof(decode_text), "%.1f tok/s", decode_tok_s);
  else if (generated < 2)
    std::snprintf(decode_text, sizeof(decode_text), "not timed (fewer than two tokens)");
  else
    std::snprintf(decode_text, sizeof(decode_text), "not timed (no text before the end)");
  std::fprintf(stderr,
               "prompt: %zu tokens in %.3f s (%.1f tok/s); generated %lld tokens, decode %s "
               "(device %s, seed %llu, KV %s at %lld bytes/token, %lld tokens%s)\n",
               prompt_tokens, prompt_seconds, prompt_tokens / prompt_seconds,
               static_cast<long long>(generated), decode_text, engine->device_description().c_str(),
               static_cast<unsigned long long>(seed), engine->card().kv_type.c_str(),
               static_cast<long long>(engine->card().kv_bytes_per_token),
               static_cast<long long>(engine->card().kv_capacity_tokens), kv_local.c_str());
  if (o.spec.tokens > 0) {
    const SchedulerMetrics m = engine->scheduler().metrics();
    std::fprintf(stderr,
                 "speculative decoding: %llu steps, %llu verified drafts, %llu of %llu draft "
                 "tokens accepted\n",
                 static_cast<unsigned long long>(m.steps),
                 static_cast<unsigned long long>(m.spec_verify_rows),
                 static_cast<unsigned long long>(m.spec_accepted_tokens),
                 static_cast<unsigned long long>(m.spec_draft_tokens));
  }
  if (o.ceilings || o.profile) engine->stop();  // every step done; the threads idle
  if (o.profile) print_profile(profile);
  if (o.ceilings) print_ceiling_fractions(*engine, prompt_tokens, prompt_seconds, decode_tok_s);
  return 0;
}

}  // namespace
Subcommand make_generate_command(CLI::App& app) {
  auto opts = std::make_shared<GenerateOptions>();
  CLI::App* cmd = app.add_subcommand("generate", "Generate a continuation of a prompt");
  cmd->add_option("--model", opts->model, "GGUF model file")->required()->check(CLI::ExistingFile);
  cmd->add_option("--prompt", opts->prompt, "Prompt text")->required();
  cmd->add_option("--max-tokens", opts->max_tokens, "Tokens to generate")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  cmd->add_option("--temperature", opts->temperature, "Sampling temperature (0: greedy)")
      ->check(finite_range(0, 100))
      ->capture_default_str();
  cmd->add_option("--top-k", opts->top_k, "Keep the k most likely tokens (0: off)")
      ->check(CLI::Range(0, std::numeric_limits<int32_t>::max()))
      ->capture_default_str();
  cmd->add_option("--top-p", opts->top_p, "Nucleus sampling mass in (0, 1] (1: off)")
      ->check(finite_range(1e-6, 1))
      ->capture_default_str();
  cmd->add_option("--min-p", opts->min_p, "Minimum probability relative to the top [0, 1)")
      ->check(finite_range(0, 0.999999))
      ->capture_default_str();
  cmd->add_option("--seed", opts->seed, "Sampling seed (default: random, printed)")
      ->check(uint64_value());
  add_kv_dtype_option(*cmd, opts->kv_dtype);
  add_device_option(*cmd, opts->device);
  add_spec_options(*cmd, opts->spec);
  cmd->add_option("--threads", opts->threads, "Compute threads (default: all cores)")
      ->check(CLI::Range(1, 1024));
  cmd->add_flag("--ignore-eos", opts->ignore_eos, "Keep generating past end-of-sequence");
  cmd->add_flag("--ceilings", opts->ceilings,
                "Then measure the CPU's ceilings (~2 s) and print the speeds as fractions of them");
  cmd->add_flag("--profile", opts->profile,
                "Then print where the steps' time went, phase by phase (the CPU forward pass "
                "and sampler)");
  return {cmd, [opts] {
            if (opts->ceilings && opts->device != "cpu")
              throw UsageError("--ceilings: measures the CPU, so it needs --device cpu");
            return run_generate(*opts);
          }};
}

}  // namespace tandem::app
