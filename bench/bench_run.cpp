#include "bench/bench_run.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/http_load.h"
#include "bench/offline_load.h"
#include "bench/progress.h"
#include "bench/report.h"
#include "bench/workload.h"
#include "runner/model/roofline.h"
#include "scheduler/engine.h"
#include "server/http_server.h"

namespace tandem::bench {
namespace {

using nlohmann::json;

WorkloadSpec workload_spec(const BenchOptions& o) {
  WorkloadSpec spec;
  spec.requests = o.requests;
  spec.prompt_tokens_min = o.prompt_tokens_min;
  spec.prompt_tokens_max = o.prompt_tokens_max;
  spec.max_tokens = o.max_tokens;
  spec.shared_prefix_tokens = o.shared_prefix_tokens;
  spec.seed = o.seed;
  spec.request_rate = o.request_rate;
  spec.burstiness = o.burstiness;
  return spec;
}

json settings_json(const BenchOptions& o, const std::string& target, const std::string& path) {
  json s = {{"target", target},
            {"path", path},
            {"overlap", o.url.empty() ? json(o.overlap) : json(nullptr)},
            {"concurrency", o.concurrency > 0 ? json(o.concurrency) : json(nullptr)},
            {"request_rate", std::isfinite(o.request_rate) ? json(o.request_rate) : json("inf")},
            {"burstiness", o.burstiness},
            {"requests", o.requests},
            {"prompt_tokens_min", o.prompt_tokens_min},
            {"prompt_tokens_max", o.prompt_tokens_max},
            {"shared_prefix_tokens", o.shared_prefix_tokens},
            {"max_tokens", o.max_tokens},
            {"temperature", o.temperature},
            {"stream", o.stream},
            {"embeddings", o.embeddings},
            {"seed", o.seed},
            // Whether every run's requests set it (each run's own "ignore_eos" says): a run
            // constrained by --json-schema ends where its schema does.
            {"ignore_eos", o.json_schema.empty()}};
  if (!o.json_schema.empty()) s["json_schema"] = o.json_schema.string();
  if (!o.model.empty()) {
    s["threads"] = o.threads;
    s["max_batch"] = o.max_batch;
    s["max_step_tokens"] = o.max_step_tokens;
    s["prefill_chunk"] =
        o.prefill_chunk == 0 ? nlohmann::json("auto") : nlohmann::json(o.prefill_chunk);
    s["kv_tokens"] = o.kv_tokens;
    s["kv_dtype"] = o.kv_dtype;
    s["device"] = o.device;
    s["prefix_cache"] = o.prefix_cache;
    s["max_queue"] = o.max_queue;
    s["spec_tokens"] = o.spec_tokens;
    s["spec_ngram"] = std::to_string(o.spec_ngram_min) + ":" + std::to_string(o.spec_ngram_max);
    s["spec_max_batch"] = o.spec_max_batch;
    s["spec_compare"] = o.spec_compare;
  }
  return s;
}

LoadOptions load_options(const BenchOptions& o, ProgressBar& progress) {
  LoadOptions load;
  load.concurrency = o.concurrency;
  load.stream = o.stream;
  load.embeddings = o.embeddings;
  load.temperature = o.temperature;
  load.on_done = [&progress](const RequestRecord& r) { progress.advance(r.ok); };
  return load;
}

std::string describe_load(const BenchOptions& o) {
  std::ostringstream s;
  s << o.requests << " requests, prompt ";
  if (o.shared_prefix_tokens > 0) s << o.shared_prefix_tokens << " shared + ";
  if (o.prompt_tokens_min == o.prompt_tokens_max)
    s << o.prompt_tokens_min;
  else
    s << o.prompt_tokens_min << ".." << o.prompt_tokens_max;
  if (o.embeddings) {
    s << " tokens, /v1/embeddings (nothing generated), ";
  } else {
    s << " tokens, max " << o.max_tokens << " tokens";
  }
  // With --model and --json-schema, an unconstrained run goes first unless overlap is
  // compared (bench_model's modes).
  if (o.embeddings)
    ;
  else if (o.json_schema.empty())
    s << " (ignore_eos), ";
  else if (o.url.empty() && o.overlap != "compare")
    s << " (ignore_eos in the unconstrained run only), ";
  else
    s << " (no ignore_eos: outputs end where the schema does), ";
  if (o.concurrency > 0) s << "concurrency " << o.concurrency << ", ";
  if (std::isfinite(o.request_rate))
    s << "rate " << o.request_rate << "/s (burstiness " << o.burstiness << "), ";
  else if (o.concurrency <= 0)
    s << "all at once, ";
  if (o.embeddings)
    s << "whole responses timed";
  else if (o.offline)
    s << "every token timed";  // the sink sees each delta, stream or not
  else
    s << (o.stream ? "streamed" : "not streamed");
  s << ", seed " << o.seed;
  return s.str();
}

// The first request of the workload, cut to a few tokens and sent at once.
PlannedRequest warmup_request(const std::vector<PlannedRequest>& workload) {
  PlannedRequest warm = workload.front();
  warm.max_tokens = std::min(warm.max_tokens, 4);
  warm.arrival_seconds = 0;
  return warm;
}

struct ModeRun {
  RunReport report;
  std::vector<RequestRecord> records;
  std::string model_id;  // the engine's ModelCard id, as `tandem serve` lists it
  int threads = 0;       // the engine's compute threads
  Model::TokenWork work;
};

// The engine settings a run compares: overlap, the prefix cache, and structured output.
struct Mode {
  bool overlap = true;
  bool prefix_cache = true;
  std::string label;
  bool constrained = false;  // outputs constrained by --json-schema
  int32_t spec_tokens = 0;   // speculative decoding's drafts at most (0: off)
};

// What the device did between two readings of the scheduler's metrics.
DeviceFigures device_figures(const SchedulerMetrics& before, const SchedulerMetrics& after,
                             double duration_seconds) {
  DeviceFigures device;
  device.busy_seconds = after.device_busy_seconds - before.device_busy_seconds;
  device.idle_seconds = after.device_idle_seconds - before.device_idle_seconds;
  device.idle_fraction = duration_seconds > 0 ? device.idle_seconds / duration_seconds : 0;
  device.steps = after.steps - before.steps;
  device.chained_steps = after.chained_steps - before.chained_steps;
  device.rows_fed = after.rows_fed - before.rows_fed;
  device.logit_rows = after.logit_rows - before.logit_rows;
  device.logit_steps = after.logit_steps - before.logit_steps;
  device.prefix_queried_tokens = after.prefix_queried_tokens - before.prefix_queried_tokens;
  device.prefix_hit_tokens = after.prefix_hit_tokens - before.prefix_hit_tokens;
  device.preemptions = after.preemptions - before.preemptions;
  device.spec_verify_rows = after.spec_verify_rows - before.spec_verify_rows;
  device.spec_draft_tokens = after.spec_draft_tokens - before.spec_draft_tokens;
  device.spec_accepted_tokens = after.spec_accepted_tokens - before.spec_accepted_tokens;
  if (after.gpu_busy_seconds >= 0 && duration_seconds > 0) {
    const double busy = after.gpu_busy_seconds - before.gpu_busy_seconds;
    device.gpu_idle_fraction = std::max(0.0, 1.0 - busy / duration_seconds);
    device.chained_gap_median_us = after.chained_gap_median_us;
  }
  return device;
}

// One pass of the workload against a fresh engine with the given mode.
ModeRun run_engine_mode(const BenchOptions& o, const Mode& mode,
                        const std::vector<PlannedRequest>& workload) {
  const bool overlap = mode.overlap;
  const std::string& label = mode.label;
  EngineOptions eo;
  eo.model = o.model;
  eo.chat = false;  // the workload is completions: the model's chat template plays no part
  if (!o.served_model_name.empty()) eo.served_names = {o.served_model_name};
  eo.threads = o.threads;
  eo.kv_tokens = o.kv_tokens;
  const std::optional<KvType> kv_type = parse_kv_type(o.kv_dtype);
  if (!kv_type) throw std::invalid_argument("--kv-dtype: unknown type " + o.kv_dtype);
  eo.kv_type = *kv_type;
  eo.device = o.device;
  eo.scheduler.overlap = overlap;
  eo.scheduler.max_batch = o.max_batch;
  eo.scheduler.max_step_tokens = o.max_step_tokens;
  eo.scheduler.paced_prefill = o.prefill_chunk == 0;
  eo.scheduler.prefill_chunk = o.prefill_chunk;
  eo.scheduler.max_queue = o.max_queue;
  eo.scheduler.prefix_cache = mode.prefix_cache;
  eo.scheduler.spec_tokens = mode.spec_tokens;
  eo.scheduler.spec_ngram_min = o.spec_ngram_min;
  eo.scheduler.spec_ngram_max = o.spec_ngram_max;
  eo.scheduler.spec_max_batch = o.spec_max_batch;
  // Every position the workload and its warmup can write, mapped before the runs (engine.h):
  // a fresh page's first write would otherwise land inside the measured steps. A request
  // takes at most its tokens plus one block (its last, part-filled), the warmup as much.
  for (const PlannedRequest& r : workload)
    eo.kv_prefault_tokens += static_cast<int64_t>(r.prompt.size()) + r.max_tokens + 16;
  if (!workload.empty())
    eo.kv_prefault_tokens += static_cast<int64_t>(workload[0].prompt.size()) + 20;
  Engine engine(eo);
  engine.start();

  // One short request first, so that neither mode pays for first-touch costs (page faults
  // on the mapped weights, packing) inside its measured run.
  LoadOptions warm_options;
  warm_options.embeddings = o.embeddings;
  warm_options.pooling = engine.card().pooling;
  run_offline(engine.scheduler(), {warmup_request(workload)}, warm_options);

  ProgressBar progress(label, static_cast<int64_t>(workload.size()),
                       o.progress && ProgressBar::stderr_is_terminal());
  LoadOptions load = load_options(o, progress);
  load.pooling = engine.card().pooling;
  if (mode.constrained) {
    load.json_schema = read_schema(o.json_schema);
    try {
      // Compiled once here, as the server's cache does for the first request.
      load.grammar = engine.grammars().json_schema(load.json_schema);
    } catch (const grammar::GrammarError& e) {
      throw std::invalid_argument(std::string("--json-schema: ") + e.what());
    }
  }
  SchedulerMetrics before, after;
  LoadResult result;
  if (o.offline) {
    before = engine.scheduler().metrics();
    result = run_offline(engine.scheduler(), workload, load);
    after = engine.scheduler().metrics();
  } else {
    // tandem serve's HTTP server in front of the engine, on a port of the system's choice.
    server::ServerOptions server_options;
    server_options.host = "127.0.0.1";
    server_options.port = 0;
    server_options.shutdown_grace_seconds = 1;
    // Ctrl-C ends the bench, as it does with --url and --offline; the server caught it, and
    // the run went on with every later request refused (and a compare's second run whole).
    server_options.handle_signals = false;
    server::HttpServer http(engine.scheduler(), engine.tokenizer(), engine.card(), server_options);
    ServerUrl url;
    url.host = "127.0.0.1";
    url.port = std::to_string(http.listen());
    std::thread serving([&http] { http.run(); });
    before = engine.scheduler().metrics();
    try {
      result = run_http(url, engine.card().id, workload, load);
    } catch (...) {
      http.request_stop();
      serving.join();
      throw;
    }
    after = engine.scheduler().metrics();
    http.request_stop();
    serving.join();
  }
  progress.finish();
  engine.stop();

  ModeRun run;
  run.model_id = engine.card().id;
  run.threads = engine.threads();
  run.work = engine.model().work_per_token();
  run.report.label = label;
  run.report.path = o.offline ? "offline" : "http";
  run.report.overlap = overlap ? "on" : "off";
  run.report.prefix_cache = mode.prefix_cache ? "on" : "off";
  run.report.spec_tokens = mode.spec_tokens;
  run.report.ignore_eos = !mode.constrained;
  run.report.summary = summarize(result.records, result.duration_seconds);
  run.report.outputs_digest = outputs_digest(result.records);
  run.report.device = device_figures(before, after, result.duration_seconds);
  run.records = std::move(result.records);
  if (o.json_detailed) run.report.records = run.records;
  return run;
}

// A workload whose longest prompt leaves no room for one output token in the served
// context fails every request, after the model has loaded and the warm-up has run: a bad
// flag, found before any work starts. context: 0 when the server does not say.
void check_workload_fits(const WorkloadSpec& spec, int64_t context, const std::string& where) {
  const int64_t longest = int64_t{std::max(spec.shared_prefix_tokens, 0)} + spec.prompt_tokens_max;
  if (context <= 0 || longest < context) return;
  const std::string flag =
      spec.shared_prefix_tokens > 0 ? "--shared-prefix-tokens/--prompt-tokens" : "--prompt-tokens";
  throw std::invalid_argument(flag + ": prompts of up to " + std::to_string(longest) +
                              " tokens leave no room for output in " + where + "'s context of " +
                              std::to_string(context) + " tokens");
}

// The same pool a server's /tokenize gives for the passage, so --url against `tandem
// serve` on this model sends the very same prompts; and the context a server of the model
// would serve (the model's, at most --kv-tokens).
std::vector<int32_t> engine_token_pool(const BenchOptions& o, int64_t& context) {
  const std::unique_ptr<Model> model = Model::load(o.model);
  const std::unique_ptr<Tokenizer> tokenizer = Tokenizer::from_gguf(model->file());
  context = model->config().context_length;
  if (o.kv_tokens > 0) context = std::min<int64_t>(context, o.kv_tokens);
  return distinct_ids(tokenizer->encode(pool_passage(), /*add_special=*/false,
                                        /*parse_special=*/false));
}

void write_json(const std::string& path, const json& document) {
  std::ofstream file(path);
  if (!file) throw std::runtime_error("--json: cannot write " + path);
  // Generated texts may end inside a character (a token's bytes), so invalid UTF-8 is
  // written as U+FFFD rather than failing the report.
  file << document.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
  if (!file) throw std::runtime_error("--json: cannot write " + path);
}

// A run against --url: its report, and the settings into the document.
void bench_url(const BenchOptions& o, const WorkloadSpec& spec, std::ostream& out, json& document,
               std::vector<RunReport>& reports) {
  ServerUrl url = parse_server_url(o.url);
  url.api_key = o.api_key;
  const ServerInfo info = discover_server(url, o.served_model_name);
  check_workload_fits(spec, info.context_length, "the server");
  const std::vector<PlannedRequest> workload = plan_workload(spec, info.token_pool);
  out << "tandem bench: " << o.url << " (model " << (info.model.empty() ? "?" : info.model) << "), "
      << describe_load(o) << "\n";
  out << "prompt tokens from " << info.pool_source << " (" << info.token_pool.size()
      << " distinct ids)\n\n"
      << std::flush;  // a log read while the run goes on shows what it is waiting for
  // One short request first, as vllm bench serve does: it checks the server answers and
  // keeps first-touch costs (cold weights, first allocations) out of the measured run.
  LoadOptions warm_options;
  warm_options.embeddings = o.embeddings;
  const LoadResult warm = run_http(url, info.model, {warmup_request(workload)}, warm_options);
  if (!warm.records.front().ok)
    throw std::runtime_error("the first request failed: " + warm.records.front().error);
  ProgressBar progress("http", o.requests, o.progress && ProgressBar::stderr_is_terminal());
  LoadOptions load = load_options(o, progress);
  if (!o.json_schema.empty()) load.json_schema = read_schema(o.json_schema);
  const LoadResult result = run_http(url, info.model, workload, load);
  progress.finish();
  RunReport report;
  report.label = "http";
  report.path = "http";
  report.ignore_eos = o.json_schema.empty();
  report.summary = summarize(result.records, result.duration_seconds);
  report.outputs_digest = outputs_digest(result.records);
  if (o.json_detailed) report.records = result.records;
  reports.push_back(report);
  document["settings"] = settings_json(o, o.url, "http");
  document["settings"]["model_name"] = info.model;
  document["settings"]["prompt_token_pool"] = {{"source", info.pool_source},
                                               {"distinct_ids", info.token_pool.size()}};
}

// Overlap (or the prefix cache) off (runs[0]) against on (runs[1]): the figures into the
// document and out. Returns 1 when a request failed or the outputs differ.
int compare_modes(const std::vector<ModeRun>& runs, const std::vector<RunReport>& reports,
                  const std::string& what, json& document, std::ostream& out) {
  const size_t n = runs[0].records.size();
  const RunSummary& off = runs[0].report.summary;
  const RunSummary& on = runs[1].report.summary;
  int64_t mismatches = 0;
  int64_t first_mismatch = -1;
  for (size_t i = 0; i < n; ++i) {
    const RequestRecord& a = runs[0].records[i];
    const RequestRecord& b = runs[1].records[i];
    if (a.ok && b.ok && a.text == b.text && a.output_tokens == b.output_tokens) continue;
    if (first_mismatch < 0) first_mismatch = static_cast<int64_t>(i);
    ++mismatches;
  }
  // Embeddings generate nothing: their throughput is the prompt tokens (total).
  const bool pooled = off.output_tokens == 0 && on.output_tokens == 0;
  const double on_rate = pooled ? on.total_tokens_per_second : on.output_tokens_per_second;
  const double off_rate = pooled ? off.total_tokens_per_second : off.output_tokens_per_second;
  const double ratio = off_rate > 0 ? on_rate / off_rate : 0;
  // TTFT is timed only for streamed requests (summary.h): without, there is no ratio.
  const bool ttft_timed = off.ttft_ms.count > 0 && on.ttft_ms.count > 0 && off.ttft_ms.p50 > 0;
  const double ttft_ratio = ttft_timed ? on.ttft_ms.p50 / off.ttft_ms.p50 : 0;
  document["comparison"] = {{"compared", what},
                            {"throughput_ratio_on_over_off", ratio},
                            {"ttft_p50_ratio_on_over_off", ttft_timed ? json(ttft_ratio) : json()},
                            {"identical_outputs", mismatches == 0},
                            {"mismatched_requests", mismatches}};
  out << format_table(reports) << "\n";
  char line[200];
  std::snprintf(line, sizeof line, "%s on/off %s throughput: %.3fx (%.1f vs %.1f tok/s)",
                what.c_str(), pooled ? "total (prompt)" : "output", ratio, on_rate, off_rate);
  out << line;
  if (ttft_timed) {
    std::snprintf(line, sizeof line, "; TTFT p50 %.3fx", ttft_ratio);
    out << line;
  }
  out << "\n";
  out << "Outputs identical: " << (mismatches == 0 ? "yes" : "NO") << " (" << n - mismatches << "/"
      << n << " requests)\n";
  if (off.failed + on.failed > 0) {
    std::cerr << "tandem bench: " << off.failed + on.failed
              << " requests failed; first: " << (off.failed ? off.first_error : on.first_error)
              << "\n";
    return 1;
  }
  if (mismatches > 0) {
    std::cerr << "tandem bench: " << what << " on and off gave different outputs for " << mismatches
              << " of " << n << " requests (first: request " << first_mismatch << ")\n";
    return 1;
  }
  return 0;
}

// Unconstrained (runs[0]) against --json-schema (runs[1]): output throughput side by side.
// The outputs differ by design, so only the figures are compared.
int compare_constrained(const std::vector<ModeRun>& runs, json& document, std::ostream& out) {
  const RunSummary& plain = runs[0].report.summary;
  const RunSummary& constrained = runs[1].report.summary;
  const double ratio = plain.output_tokens_per_second > 0
                           ? constrained.output_tokens_per_second / plain.output_tokens_per_second
                           : 0;
  document["comparison"] = {{"compared", "json_schema"},
                            {"throughput_ratio_constrained_over_unconstrained", ratio}};
  std::vector<RunReport> reports = {runs[0].report, runs[1].report};
  out << format_table(reports) << "\n";
  char line[200];
  std::snprintf(line, sizeof line,
                "json_schema/unconstrained output throughput: %.3fx (%.1f vs %.1f tok/s)\n", ratio,
                constrained.output_tokens_per_second, plain.output_tokens_per_second);
  out << line;
  return plain.failed + constrained.failed > 0 ? 1 : 0;
}

// Measures the CPU's ceilings with the runs' thread count (the engines have stopped) and
// fills each run's figures against them; the ceilings go to the document and one line out.
void add_ceiling_fractions(std::vector<ModeRun>& runs, json& document, std::ostream& out) {
  ThreadPool pool(runs.front().threads);
  const kernels::MachineCeilings c = kernels::measure_ceilings(pool);
  document["ceilings"] = {{"threads", c.threads},
                          {"f32_fma_gflops", c.f32_fma_gflops},
                          {"bf16_dot_gflops", c.bf16_dot_gflops},
                          {"amx_bf16_gflops", c.amx_bf16_gflops},
                          {"int8_dot_gops", c.int8_dot_gops},
                          {"amx_int8_gops", c.amx_int8_gops},
                          {"read_gbps_one_thread", c.read_gbps_one_thread},
                          {"read_gbps_all_threads", c.read_gbps_all_threads},
                          {"weights_peak", kernels::peak_name(runs.front().work.peak)}};
  out << kernels::describe(c) << "; the weights run on "
      << kernels::peak_name(runs.front().work.peak) << "\n";
  for (size_t i = 0; i < runs.size(); ++i) {
    const RunSummary& s = runs[i].report.summary;
    DeviceFigures& d = *runs[i].report.device;
    if (s.duration_seconds <= 0) continue;
    // The work the steps did, as the scheduler counted it (the warm-up excluded).
    const double per_second = 1 / s.duration_seconds;
    const Roofline r = roofline(
        runs[i].work, c,
        {static_cast<double>(d.rows_fed) * per_second,
         static_cast<double>(d.logit_rows) * per_second, static_cast<double>(d.steps) * per_second,
         static_cast<double>(d.logit_steps) * per_second});
    d.matmul_gflops = r.gflops;
    d.peak_fraction = r.peak_fraction;
    d.weight_gbps = r.weight_gbps;
    d.bandwidth_fraction = r.bandwidth_fraction;
  }
}

// The runs --model makes, one per setting compared (at most one compare at a time).
std::vector<Mode> engine_modes(const BenchOptions& o) {
  const bool cache = o.prefix_cache != "off";
  const bool schema = !o.json_schema.empty();
  const bool overlap = o.overlap == "on";
  const int32_t spec = o.spec_tokens;
  if (o.overlap == "compare")
    return {{false, cache, "overlap off", schema, spec}, {true, cache, "overlap on", schema, spec}};
  if (schema)
    return {{overlap, cache, "unconstrained", false, spec},
            {overlap, cache, "json_schema", true, spec}};
  if (o.prefix_cache == "compare")
    return {{overlap, false, "prefix cache off", false, spec},
            {overlap, true, "prefix cache on", false, spec}};
  if (o.spec_compare)
    return {{overlap, cache, "speculation off", false, 0},
            {overlap, cache, "speculation on", false, spec}};
  return {{overlap, cache, overlap ? "overlap on" : "overlap off", false, spec}};
}

// The drafts a run with speculative decoding verified, and how many it accepted.
void print_speculation(const RunReport& run, std::ostream& out) {
  if (!run.device) return;
  const DeviceFigures& d = *run.device;
  char line[200];
  std::snprintf(line, sizeof line,
                "Speculation: %llu draft tokens in %llu verify rows, %llu accepted (%.1f%%); "
                "%llu steps\n",
                static_cast<unsigned long long>(d.spec_draft_tokens),
                static_cast<unsigned long long>(d.spec_verify_rows),
                static_cast<unsigned long long>(d.spec_accepted_tokens),
                d.spec_draft_tokens > 0 ? 100.0 * static_cast<double>(d.spec_accepted_tokens) /
                                              static_cast<double>(d.spec_draft_tokens)
                                        : 0.0,
                static_cast<unsigned long long>(d.steps));
  out << line;
}

// The runs of an in-process engine (--model), one per mode (engine_modes): their reports,
// the settings and, for a compare, the comparison into the document.
int bench_model(const BenchOptions& o, const WorkloadSpec& spec, std::ostream& out, json& document,
                std::vector<RunReport>& reports) {
  int64_t context = 0;
  const std::vector<int32_t> pool = engine_token_pool(o, context);
  check_workload_fits(spec, context, "the model");
  const std::vector<PlannedRequest> workload = plan_workload(spec, pool);
  const std::string path = o.offline ? "offline" : "http";
  out << "tandem bench: " << o.model.string() << " in process, "
      << (o.offline ? "offline (straight into the scheduler, no HTTP)"
                    : "over HTTP (tandem serve on 127.0.0.1, an ephemeral port)")
      << "\n"
      << describe_load(o) << "\n";
  if (!o.json_schema.empty()) {
    out << "constrained by " << o.json_schema.string()
        << " (response_format json_schema: no ignore_eos, outputs end where the schema does)\n";
  }
  out << "\n";
  const bool schema = !o.json_schema.empty();
  std::vector<ModeRun> runs;
  for (const Mode& mode : engine_modes(o)) runs.push_back(run_engine_mode(o, mode, workload));
  if (o.ceilings && o.device == "cpu") add_ceiling_fractions(runs, document, out);
  for (const ModeRun& run : runs) reports.push_back(run.report);
  document["settings"] = settings_json(o, o.model.string(), path);
  document["settings"]["model_name"] = runs.front().model_id;
  if (schema) document["settings"]["json_schema"] = o.json_schema.string();
  document["settings"]["prompt_token_pool"] = {
      {"source", "the model's tokenizer on the prompt passage"}, {"distinct_ids", pool.size()}};
  if (runs.size() < 2) return 0;
  if (schema && o.overlap != "compare") return compare_constrained(runs, document, out);
  const char* compared = o.overlap == "compare" ? "Overlap"
                         : o.spec_compare       ? "Speculation"
                                                : "Prefix cache";
  const int status = compare_modes(runs, reports, compared, document, out);
  if (o.spec_compare) print_speculation(runs.back().report, out);
  return status;
}

}  // namespace

std::string read_schema(const std::filesystem::path& path) {
  std::ifstream file(path);
  if (!file) throw std::invalid_argument("--json-schema: cannot read " + path.string());
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

int run_bench(const BenchOptions& o, std::ostream& out) {
  if (o.url.empty() == o.model.empty())
    throw std::invalid_argument("exactly one of --url and --model is required");
  if (o.prompt_tokens_min < 1 || o.prompt_tokens_max < o.prompt_tokens_min)
    throw std::invalid_argument("--prompt-tokens: needs 1 <= LO <= HI");
  if ((o.overlap == "compare") + (o.prefix_cache == "compare") + o.spec_compare > 1)
    throw std::invalid_argument(
        "--overlap compare, --prefix-cache compare and --spec-compare: one at a time");
  // Before the banner, as the engine would refuse it only after.
  if (o.spec_tokens > 0 && o.device == "cuda")
    throw std::invalid_argument("--spec-tokens: speculative decoding needs --device cpu");
  if (o.spec_compare && !o.json_schema.empty())
    throw std::invalid_argument("--spec-compare and --json-schema: one comparison at a time");
  if (o.spec_compare && o.spec_tokens == 0)
    throw std::invalid_argument("--spec-compare needs --spec-tokens N (the drafts compared)");
  const WorkloadSpec spec = workload_spec(o);
  json document;
  std::vector<RunReport> reports;
  int status = 0;
  if (!o.url.empty()) {
    bench_url(o, spec, out, document, reports);
    if (!o.json_schema.empty()) document["settings"]["json_schema"] = o.json_schema.string();
  } else {
    status = bench_model(o, spec, out, document, reports);
  }

  document["runs"] = json::array();
  for (const RunReport& r : reports) document["runs"].push_back(run_json(r));
  if (reports.size() == 1) {
    out << format_table(reports);
    if (reports[0].spec_tokens > 0) print_speculation(reports[0], out);
  }
  for (const RunReport& r : reports) {
    if (r.summary.failed > 0 && status == 0)
      std::cerr << "tandem bench: " << r.summary.failed << " of "
                << r.summary.failed + r.summary.completed
                << " requests failed; first: " << r.summary.first_error << "\n";
    if (r.summary.completed == 0) status = 1;
  }
  if (!o.json_path.empty()) write_json(o.json_path, document);
  return status;
}

}  // namespace tandem::bench
