// n choices against separate requests (issue 16's target: `n: 8` at 128 tokens is >= 5x
// faster than 8 separate requests sent one after another). Through the Engine's scheduler,
// the path a server request takes after tokenizing: one submit of 8 choices of a prompt
// (the prompt prefilled once, the choices decoded as one batch), against 8 submits of
// the same requests, each waiting for the one before. Prints medians and the ratio;
// asserts nothing.
//   build/bench/bench_choices [MODEL.gguf] [--threads N] [--runs R] [--only n|separate]
//   (--only runs one side alone, for a profiler; no ratio then)
//   (MODEL defaults to /tmp/smollm2-bf16.gguf, made by
//    `build/tandem make-model --shape smollm2-135m --dtype bf16 --out /tmp/smollm2-bf16.gguf`)
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "protocol/choice_seed.h"
#include "scheduler/engine.h"

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kChoices = 8;
constexpr int32_t kTokens = 128;

// Counts finished requests; wait() blocks until `expected` have finished.
class Finishes {
 public:
  void done() {
    std::lock_guard lock(mutex_);
    ++count_;
    cv_.notify_all();
  }
  void wait(int expected) {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return count_ >= expected; });
    count_ = 0;
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  int count_ = 0;
};

class CountingSink : public tandem::RequestSink {
 public:
  explicit CountingSink(Finishes& finishes) : finishes_(finishes) {}
  void on_text(std::string_view) override {}
  void on_finish(tandem::FinishReason, const tandem::Usage& usage) override {
    tokens = usage.completion_tokens;
    finishes_.done();
  }
  void on_error(tandem::ErrorKind, std::string_view message) override {
    std::fprintf(stderr, "bench_choices: request failed: %.*s\n", int(message.size()),
                 message.data());
    std::exit(1);
  }
  int64_t tokens = 0;

 private:
  Finishes& finishes_;
};

tandem::GenerationRequest request(const std::vector<int32_t>& prompt, int index,
                                  Finishes& finishes) {
  tandem::GenerationRequest r;
  r.prompt = prompt;
  r.sampling.temperature = 1.0f;
  r.sampling.seed = tandem::choice_seed(2024, index);
  r.sampling.ignore_eos = true;
  r.max_tokens = kTokens;
  r.sink = std::make_shared<CountingSink>(finishes);
  return r;
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double run_choices(tandem::Engine& engine, const std::vector<int32_t>& prompt, Finishes& f) {
  const auto start = Clock::now();
  std::vector<tandem::GenerationRequest> list;
  for (int i = 0; i < kChoices; ++i) list.push_back(request(prompt, i, f));
  if (!engine.scheduler().submit(std::move(list)).accepted()) std::exit(1);
  f.wait(kChoices);
  return seconds_since(start);
}

double run_separate(tandem::Engine& engine, const std::vector<int32_t>& prompt, Finishes& f) {
  const auto start = Clock::now();
  for (int i = 0; i < kChoices; ++i) {
    if (!engine.scheduler().submit(request(prompt, i, f)).accepted()) std::exit(1);
    f.wait(1);
  }
  return seconds_since(start);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  tandem::EngineOptions options;
  options.model = "/tmp/smollm2-bf16.gguf";
  int runs = 3;
  std::string only;  // "", "n" or "separate"
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--threads" && i + 1 < argc) {
      options.threads = std::atoi(argv[++i]);
    } else if (arg == "--runs" && i + 1 < argc) {
      runs = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--only" && i + 1 < argc) {
      only = argv[++i];
      if (only != "n" && only != "separate") {
        std::fprintf(stderr, "bench_choices: --only takes n or separate, not '%s'\n", only.c_str());
        return 2;
      }
    } else if (arg.empty() || arg[0] == '-') {
      std::fprintf(stderr,
                   "bench_choices: unknown option '%s' (usage: bench_choices [MODEL.gguf] "
                   "[--threads N] [--runs R] [--only n|separate])\n",
                   arg.c_str());
      return 2;
    } else {
      options.model = arg;
    }
  }
  options.kv_tokens = 16384;
  std::unique_ptr<tandem::Engine> loaded;
  try {
    loaded = std::make_unique<tandem::Engine>(options);
  } catch (const std::exception& e) {  // a missing or unreadable model: one line, not an abort
    std::fprintf(stderr, "bench_choices: %s\n", e.what());
    return 2;
  }
  tandem::Engine& engine = *loaded;
  engine.start();
  const std::vector<int32_t> prompt = engine.tokenizer().encode(
      "Write a short story about a lighthouse keeper who finds a message in a bottle.", true,
      false);
  Finishes finishes;
  run_choices(engine, prompt, finishes);  // warm-up: pages the weights in
  std::vector<double> together, apart;
  for (int r = 0; r < runs; ++r) {
    if (only != "separate") together.push_back(run_choices(engine, prompt, finishes));
    if (only != "n") apart.push_back(run_separate(engine, prompt, finishes));
  }
  if (!only.empty()) {
    const std::vector<double>& side = only == "n" ? together : apart;
    std::printf("%s: median %.3f s over %d runs (%.1f tokens/s)\n",
                only == "n" ? "n=8 in one request" : "8 requests one after another", median(side),
                runs, kChoices * kTokens / median(side));
    engine.stop();
    return 0;
  }
  const double t = median(together), a = median(apart);
  std::printf("model %s, %d threads, prompt %zu tokens, %d x %d tokens, median of %d runs\n",
              options.model.c_str(), engine.threads(), prompt.size(), kChoices, kTokens, runs);
  std::printf("  n=%d in one request:        %8.3f s  (%7.1f tokens/s)\n", kChoices, t,
              kChoices * kTokens / t);
  std::printf("  %d requests one after another: %8.3f s  (%7.1f tokens/s)\n", kChoices, a,
              kChoices * kTokens / a);
  // Each run's two sides are timed back to back, so their own ratio drifts less with the
  // machine's speed (these VMs move by a third within an hour) than the medians' ratio.
  std::vector<double> ratios;
  for (int r = 0; r < runs; ++r) ratios.push_back(apart[r] / together[r]);
  std::printf("  ratio (separate / n): %.2fx (target >= 5x); median of the runs' own: %.2fx\n",
              a / t, median(ratios));
  engine.stop();
  return 0;
}
