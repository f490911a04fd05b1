// The whole forward pass of one step (all layers, attention, head, sampling) on the
// smollm2-135m shape: batch-1, 8-row and 32-row decode steps, as tok/s; a 512- and a
// 1024-token prefill in one step; a 16-row decode step at context 1024 for each KV element
// type, and one row at contexts 1024 and 256 (the forward pass alone). The model is
// written once with make-model (F16 and BF16, vocab from ../shared's llama-spm GGUF when
// present, so the head is 32000 wide as in perf-notes), or read from TANDEM_BENCH_MODEL.
// The decode steps and prefills also print their matmul work as a fraction of the peak
// measured beside them (report_peak_fractions; TANDEM_BENCH_CEILINGS=0 skips that, for a
// `perf record` of the steps alone).
//   build-test/bench/bench_forward --benchmark_repetitions=5 --benchmark_report_aggregates_only
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <numeric>
#include <random>
#include <string>
#include <utility>

#include "runner/device/cpu_executor.h"
#include "runner/kernels/ceilings.h"
#include "runner/model/forward.h"
#include "runner/model/forward_profile.h"
#include "runner/model/make_model.h"
#include "runner/model/model.h"
#include "runner/model/roofline.h"
#include "runner/util/thread_pool.h"

namespace {

using tandem::gguf::TensorType;

std::shared_ptr<const tandem::Model> bench_model(TensorType dtype) {
  static std::map<TensorType, std::shared_ptr<const tandem::Model>> cache;
  if (auto it = cache.find(dtype); it != cache.end()) return it->second;
  std::filesystem::path path;
  if (const char* env = std::getenv("TANDEM_BENCH_MODEL")) {
    path = env;
  } else {
    tandem::make_model::MakeModelOptions o;
    o.shape = "smollm2-135m";
    o.dtype = dtype;
    const std::filesystem::path vocab =
        std::filesystem::path(TANDEM_SOURCE_DIR) / "../shared/vocab/ggml-vocab-llama-spm.gguf";
    if (std::filesystem::exists(vocab)) o.vocab = vocab;
    path = std::filesystem::temp_directory_path() /
           ("tandem-bench-smollm2-" + std::string(tandem::gguf::type_name(dtype)) + ".gguf");
    o.out = path;
    if (!std::filesystem::exists(path)) tandem::make_model::write_random_model(o);
  }
  return cache[dtype] = tandem::Model::load(path);
}

// With TANDEM_BENCH_PHASES set, each case times its steps phase by phase
// (forward_profile.h) and prints a counter per phase, microseconds a step (the phases add
// up to the step; the clock reads cost about a microsecond a step). Unset: no timing.
tandem::ForwardProfile* phase_profile() {
  static tandem::ForwardProfile profile;
  return std::getenv("TANDEM_BENCH_PHASES") != nullptr ? &profile : nullptr;
}
void report_phases(benchmark::State& state, tandem::ForwardProfile* profile) {
  if (profile == nullptr || profile->steps == 0) return;
  for (int i = 0; i < tandem::kForwardPhaseCount; ++i) {
    if (profile->seconds[i] <= 0) continue;
    const auto phase = static_cast<tandem::ForwardPhase>(i);
    state.counters[std::string(tandem::forward_phase_name(phase)) + "_us"] =
        profile->seconds[i] * 1e6 / static_cast<double>(profile->steps);
  }
}

// The ceilings for `threads` threads (kernels/ceilings.h), measured again when the last
// measurement is over 30 s old: Google Benchmark calls a case several times while it sizes
// the iteration count, and measuring after each call (about 1.5 s) would double a run.
const tandem::kernels::MachineCeilings& recent_ceilings(int threads) {
  using Clock = std::chrono::steady_clock;
  static std::map<int, std::pair<Clock::time_point, tandem::kernels::MachineCeilings>> cache;
  auto it = cache.find(threads);
  if (it == cache.end() || Clock::now() - it->second.first > std::chrono::seconds(30)) {
    tandem::ThreadPool pool(threads);
    const tandem::kernels::MachineCeilings c = tandem::kernels::measure_ceilings(pool);
    it = cache.insert_or_assign(threads, std::make_pair(Clock::now(), c)).first;
  }
  return it->second.second;
}

// A step's matmul work against the peak of the instruction its weights run on (issue 21's
// first targets, issue 15's prefill ones). `rows` tokens pass the layers and `logit_rows`
// of them the output head. The ceilings come from recent_ceilings, with the case's thread
// count, measured after its steps: the step's pool blocks 150 us after its last job
// (thread_pool.cpp), so the ceilings' own pool measures alone, in the same minute of a
// shared host. Counters (roofline.h's figures): GFLOP/s over the whole step, `peak_frac`
// of the peak, and with TANDEM_BENCH_PHASES `matmul_peak_frac`: the matmul phases alone
// (qkv, attn_out, gate_up, down, and output, whose norm is a few microseconds of it).
void report_peak_fractions(benchmark::State& state, const tandem::Model& model, int threads,
                           double rows, double logit_rows, double seconds_per_step,
                           const tandem::ForwardProfile* profile) {
  if (state.iterations() == 0 || seconds_per_step <= 0) return;
  if (const char* env = std::getenv("TANDEM_BENCH_CEILINGS"); env && std::string(env) == "0")
    return;
  // Every step computes logits (a prefill's for its last token), so it reads the head.
  const double step_rate = 1 / seconds_per_step;
  const tandem::Roofline r =
      tandem::roofline(model.work_per_token(), recent_ceilings(threads),
                       {rows * step_rate, logit_rows * step_rate, step_rate, step_rate});
  if (r.peak_gflops <= 0) return;
  state.counters["GFLOP/s"] = r.gflops;
  state.counters["peak_frac"] = r.peak_fraction;
  if (profile == nullptr || profile->steps == 0) return;
  double matmul_seconds = 0;
  for (tandem::ForwardPhase phase :
       {tandem::ForwardPhase::kQkv, tandem::ForwardPhase::kAttnOut, tandem::ForwardPhase::kGateUp,
        tandem::ForwardPhase::kDown, tandem::ForwardPhase::kOutput})
    matmul_seconds += profile->seconds[static_cast<int>(phase)];
  // The same work over the matmul phases' share of the steps.
  if (matmul_seconds > 0)
    state.counters["matmul_peak_frac"] =
        r.peak_fraction * seconds_per_step * static_cast<double>(profile->steps) / matmul_seconds;
}

// Seconds a step of the timed loop took, by the steady clock (the real time the cases
// report), from its start.
double seconds_per_step(const benchmark::State& state,
                        std::chrono::steady_clock::time_point start) {
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  return state.iterations() > 0 ? elapsed.count() / static_cast<double>(state.iterations()) : 0;
}

// Decode steps for `batch` rows, each with a 32-token prompt already in the cache, greedy,
// each row asking for `logprobs` (-1: none).
void decode_step(benchmark::State& state, TensorType dtype, int32_t logprobs) {
  const int batch = static_cast<int>(state.range(0));
  const int threads = static_cast<int>(state.range(1));
  auto model = bench_model(dtype);
  tandem::CpuExecutorOptions options;
  options.threads = threads;
  options.kv_tokens = 16 * 1024;
  options.profile = phase_profile();
  tandem::CpuExecutor exec(model, options);
  constexpr int kPrompt = 32, kBlocksPerRow = 16;  // room for 256 positions
  tandem::StepPlan prefill, decode;
  for (int r = 0; r < batch; ++r) {
    tandem::StepRow row;
    row.request_id = r;
    row.tokens.resize(kPrompt);
    std::iota(row.tokens.begin(), row.tokens.end(), 100 + r);
    row.kv_blocks.resize(kBlocksPerRow);
    std::iota(row.kv_blocks.begin(), row.kv_blocks.end(), r * kBlocksPerRow);
    row.sampling.temperature = 0;
    row.sampling.logprobs = logprobs;
    prefill.rows.push_back(row);
    row.tokens = {7};
    row.position = kPrompt;
    decode.rows.push_back(row);
  }
  std::vector<int32_t> tokens(batch);
  exec.execute(prefill, tokens);
  if (options.profile != nullptr) options.profile->clear();
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    // Re-decode the same position: the work is identical to a real decode step.
    exec.execute(decode, tokens);
    benchmark::DoNotOptimize(tokens.data());
  }
  const double step_seconds = seconds_per_step(state, start);
  state.counters["tok/s"] =
      benchmark::Counter(static_cast<double>(batch), benchmark::Counter::kIsIterationInvariantRate);
  report_phases(state, options.profile);
  report_peak_fractions(state, *model, threads, batch, batch, step_seconds, options.profile);
}
void BM_DecodeStep(benchmark::State& state, TensorType dtype) { decode_step(state, dtype, -1); }
// Issue 16's logprobs against none over the whole step (the output matmul computes the
// softmax partials, the sampler combines them): logprobs:5 against logprobs:-1, side by side.
void BM_DecodeStepLogprobs(benchmark::State& state, TensorType dtype) {
  decode_step(state, dtype, static_cast<int32_t>(state.range(2)));
}

void args(benchmark::internal::Benchmark* b) {
  // 8: the batch of issue 16's n = 8 choices, whose target needs it to cost < 1.6 x batch 1.
  // Batch 1 on one thread too: the two-thread figure against it is the pool's scaling.
  b->Args({1, 1});
  for (int batch : {1, 8, 32}) b->Args({batch, 2});
  b->ArgNames({"batch", "threads"})->Unit(benchmark::kMillisecond)->UseRealTime();
}

// A decode step of 16 rows (or 1), each at position context - 1 with its own `context`
// cached positions (random K and V, stored through KvCache::store as a prefill would), BF16
// weights: what the KV element type changes is the bytes each row's attention reads. One
// row: the attention's key chunks as tasks of their own (attention.cpp); at context 256 a
// task per chunk and KV head, as a chat's first turns give. scattered:0 gives each row
// consecutive blocks, as a fresh pool does; scattered:1 a random permutation of the pool,
// as a server's pool becomes once requests of every length have come and gone (each
// row's next block anywhere in the cache).
void decode_at_context(benchmark::State& state, tandem::KvType kv_type, int context,
                       bool shared_prefix = false) {
  const int blocks_per_row = context / 16;
  const int n_rows = static_cast<int>(state.range(1));
  const bool scattered = state.range(2) != 0;
  auto model = bench_model(TensorType::kBF16);
  const tandem::ModelConfig& c = model->config();
  tandem::ThreadPool pool(static_cast<int>(state.range(0)));
  tandem::KvCache kv(c.n_layer, c.kv_dim(), n_rows * blocks_per_row, kv_type, c.head_dim);
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::vector<float> k(c.kv_dim()), v(c.kv_dim());
  for (int b = 0; b < n_rows * blocks_per_row; ++b)
    for (int slot = 0; slot < 16; ++slot)
      for (int l = 0; l < c.n_layer; ++l) {
        for (float& x : k) x = normal(rng);
        for (float& x : v) x = normal(rng);
        kv.store(l, b, slot, k.data(), v.data());
      }
  tandem::ForwardPass forward(*model, kv, pool);
  std::vector<int32_t> order(static_cast<size_t>(n_rows) * blocks_per_row);
  std::iota(order.begin(), order.end(), 0);
  if (scattered) std::shuffle(order.begin(), order.end(), rng);
  std::vector<std::vector<int32_t>> tables(n_rows, std::vector<int32_t>(blocks_per_row));
  std::vector<int32_t> inputs(n_rows);
  std::vector<tandem::ForwardRow> rows;
  for (int r = 0; r < n_rows; ++r) {
    std::copy_n(order.begin() + r * blocks_per_row, blocks_per_row, tables[r].begin());
    if (shared_prefix && r > 0)
      std::copy_n(tables[0].begin(), blocks_per_row - 1, tables[r].begin());
    inputs[r] = 100 + r;
    rows.push_back({{&inputs[r], 1}, context - 1, tables[r], true});
  }
  tandem::ForwardProfile* profile = phase_profile();
  if (profile != nullptr) profile->clear();
  forward.set_profile(profile);
  for (auto _ : state) benchmark::DoNotOptimize(forward.run(rows).data());
  report_phases(state, profile);
  state.counters["tok/s"] = benchmark::Counter(static_cast<double>(n_rows),
                                               benchmark::Counter::kIsIterationInvariantRate);
  state.counters["KV_MB/step"] = static_cast<double>(n_rows) * context *
                                 tandem::KvCache::bytes_per_token(c.n_layer, c.kv_dim(), kv_type) /
                                 1e6;
}
void BM_DecodeAtContext1024(benchmark::State& state, tandem::KvType kv_type) {
  decode_at_context(state, kv_type, 1024);
}
void BM_DecodeAtContext256(benchmark::State& state, tandem::KvType kv_type) {
  decode_at_context(state, kv_type, 256);
}
// The rows' first 1008 positions in the same blocks (the first row's), the last block each
// row's own: requests whose prompts share a prefix the prefix cache held, whose chunks the
// attention walks once for all of them (attention_plan.cpp). KV_MB/step counts every
// row's keys, as the rows see them.
void BM_DecodeSharedPrefix1024(benchmark::State& state, tandem::KvType kv_type) {
  decode_at_context(state, kv_type, 1024, true);
}

// One prompt of `tokens` tokens prefilled in one step (the forward pass alone, F16 KV, BF16
// weights): the GEMMs at M = tokens and the causal attention over the prompt.
void BM_Prefill(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  auto model = bench_model(TensorType::kBF16);
  const tandem::ModelConfig& c = model->config();
  tandem::ThreadPool pool(static_cast<int>(state.range(1)));
  const int n_blocks = (n + 15) / 16;
  tandem::KvCache kv(c.n_layer, c.kv_dim(), n_blocks, tandem::KvType::kF16, c.head_dim);
  tandem::ForwardPass forward(*model, kv, pool);
  std::vector<int32_t> table(n_blocks), prompt(n);
  std::iota(table.begin(), table.end(), 0);
  // The ids within the vocabulary of a TANDEM_BENCH_MODEL too (make-model's files have
  // small ones): an id outside it made the pass throw, and the bench terminate.
  for (int i = 0; i < n; ++i) prompt[i] = (100 + (i * 37) % 20000) % c.n_vocab;
  const tandem::ForwardRow row{prompt, 0, table, true};
  // Once untimed: the first run pays the page faults of a fresh cache and of the forward
  // pass's activations (about a fifth of a 1024-token step here), which a server pays once
  // in its life, not per prompt. A timed run reads the prompt's K and V from warm pages.
  forward.run({&row, 1});
  tandem::ForwardProfile* profile = phase_profile();
  if (profile != nullptr) profile->clear();
  forward.set_profile(profile);
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) benchmark::DoNotOptimize(forward.run({&row, 1}).data());
  const double step_seconds = seconds_per_step(state, start);
  report_phases(state, profile);
  state.counters["tok/s"] =
      benchmark::Counter(static_cast<double>(n), benchmark::Counter::kIsIterationInvariantRate);
  report_peak_fractions(state, *model, static_cast<int>(state.range(1)), n, 1, step_seconds,
                        profile);
}
BENCHMARK(BM_Prefill)
    ->Args({512, 2})
    ->Args({1024, 2})
    ->ArgNames({"tokens", "threads"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// threads 2, each row count with its blocks adjacent and scattered.
void context_args(benchmark::internal::Benchmark* b, std::initializer_list<int64_t> row_counts) {
  for (int64_t rows : row_counts)
    for (int64_t scattered : {0, 1}) b->Args({2, rows, scattered});
  b->ArgNames({"threads", "rows", "scattered"})->Unit(benchmark::kMillisecond)->UseRealTime();
}
void sixteen_rows(benchmark::internal::Benchmark* b) { context_args(b, {16}); }
void sixteen_rows_and_one(benchmark::internal::Benchmark* b) { context_args(b, {16, 1}); }
void one_row(benchmark::internal::Benchmark* b) { context_args(b, {1}); }
BENCHMARK_CAPTURE(BM_DecodeAtContext1024, f32_kv, tandem::KvType::kF32)->Apply(sixteen_rows);
BENCHMARK_CAPTURE(BM_DecodeAtContext1024, f16_kv, tandem::KvType::kF16)
    ->Apply(sixteen_rows_and_one);
BENCHMARK_CAPTURE(BM_DecodeAtContext1024, bf16_kv, tandem::KvType::kBf16)->Apply(sixteen_rows);
BENCHMARK_CAPTURE(BM_DecodeAtContext1024, q8_0_kv, tandem::KvType::kQ8_0)->Apply(sixteen_rows);
BENCHMARK_CAPTURE(BM_DecodeAtContext256, f16_kv, tandem::KvType::kF16)->Apply(one_row);
BENCHMARK_CAPTURE(BM_DecodeSharedPrefix1024, f16_kv, tandem::KvType::kF16)
    ->Args({2, 16, 0})
    ->Args({2, 4, 0})
    ->ArgNames({"threads", "rows", "scattered"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

BENCHMARK_CAPTURE(BM_DecodeStep, bf16, TensorType::kBF16)->Apply(args);
BENCHMARK_CAPTURE(BM_DecodeStep, f16, TensorType::kF16)->Apply(args);
BENCHMARK_CAPTURE(BM_DecodeStepLogprobs, bf16, TensorType::kBF16)
    ->ArgsProduct({{1, 32}, {2}, {-1, 5}})
    ->ArgNames({"batch", "threads", "logprobs"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
