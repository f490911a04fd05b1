// `tandem bench`: the load generator. Parses and checks the flags (a bad combination is a
// usage error naming the flag), then hands the run to bench::run_bench.
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <iostream>
#include <memory>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "app/cli_checks.h"
#include "app/command.h"
#include "bench/bench_run.h"
#include "runner/gguf/gguf.h"
#include "scheduler/engine.h"

namespace tandem::app {
namespace {

// "N" or "LO:HI" into [lo, hi]; false when malformed.
bool parse_token_range(const std::string& text, int32_t& lo, int32_t& hi) {
  auto number = [](std::string_view s, int32_t& v) {
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    return ec == std::errc() && end == s.data() + s.size() && v >= 1;
  };
  const size_t colon = text.find(':');
  if (colon == std::string::npos) {
    if (!number(text, lo)) return false;
    hi = lo;
    return true;
  }
  return number(std::string_view(text).substr(0, colon), lo) &&
         number(std::string_view(text).substr(colon + 1), hi) && lo <= hi;
}

// > 0; "inf" allowed where infinite makes sense. CLI11's PositiveNumber prints DBL_MAX.
// A number >= least (and, with allow_infinite, inf). A rate's least keeps the arrival
// offsets within what a timer can hold: at 1e-300 requests a second the first gap overflowed
// the clock, and every request went at once.
CLI::Validator positive(bool allow_infinite, double least = 0) {
  char bound[32];
  std::snprintf(bound, sizeof bound, least > 0 ? ">= %g" : "> 0", least);
  const std::string text = bound;
  return CLI::Validator(
      [allow_infinite, least, text](std::string& s) {
        char* end = nullptr;
        const double v = std::strtod(s.c_str(), &end);
        const bool ok = end != s.c_str() && *end == '\0' && v > 0 && v >= least &&
                        (allow_infinite || std::isfinite(v));
        return ok ? std::string()
                  : "expects a " + std::string(allow_infinite ? "" : "finite ") + "number " + text +
                        (allow_infinite ? " or inf" : "");
      },
      allow_infinite ? "POSITIVE|inf" : "POSITIVE");
}

// --json-schema must be JSON before anything runs: the run would otherwise start the
// engine or contact the server and end in a raw parser exception.
void check_schema_file(const std::filesystem::path& path) {
  std::string text;
  try {
    text = bench::read_schema(path);  // the run's own reader
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  try {
    const nlohmann::json parsed = nlohmann::json::parse(text);
    static_cast<void>(parsed);
  } catch (const nlohmann::json::parse_error& e) {
    throw UsageError("--json-schema: " + path.string() + " is not JSON (a syntax error at byte " +
                     std::to_string(e.byte) + ")");
  }
}

struct BenchFlags {
  bench::BenchOptions options;
  SpecFlags spec;
  std::string prompt_tokens = "32";
  std::string prefill_chunk = "auto";
};

// The flags that set the in-process engine, as `tandem serve` takes them: each needs --model.
void add_engine_flags(CLI::App& cmd, BenchFlags& f, CLI::Option* model) {
  bench::BenchOptions& o = f.options;
  const std::initializer_list<CLI::Option*> flags = {
      cmd.add_option("--threads", o.threads, "With --model: compute threads")
          ->check(CLI::Range(1, 1024)),
      cmd.add_option("--max-batch", o.max_batch, "With --model: requests at once")
          ->check(CLI::Range(1, 4096)),
      cmd.add_option("--max-step-tokens", o.max_step_tokens, "With --model: tokens fed per step")
          ->check(CLI::Range(1, 1 << 20)),
      cmd.add_option("--kv-tokens", o.kv_tokens, "With --model: KV cache capacity")
          ->check(CLI::Range(int64_t{16}, int64_t{1} << 32)),
      cmd.add_option("--max-queue", o.max_queue, "With --model: requests waiting for admission")
          ->check(CLI::Range(1, 1 << 20)),  // as serve's
      cmd.add_option("--ceilings", o.ceilings,
                     "With --model: measure the CPU's ceilings after the runs (~2 s) and report "
                     "speeds as fractions of them (default true)"),
      add_kv_dtype_option(cmd, o.kv_dtype),
      add_device_option(cmd, o.device),
      add_prefill_chunk_option(cmd, f.prefill_chunk),
  };
  for (CLI::Option* flag : flags) flag->needs(model);
  for (CLI::Option* flag : add_spec_options(cmd, f.spec)) flag->needs(model);
  cmd.add_flag("--spec-compare", o.spec_compare,
               "With --model and --spec-tokens: a run without speculative decoding, then one "
               "with it, outputs checked")
      ->needs(model);
}

}  // namespace

Subcommand make_bench_command(CLI::App& app) {
  auto flags = std::make_shared<BenchFlags>();
  bench::BenchOptions& o = flags->options;
  CLI::App* cmd =
      app.add_subcommand("bench", "Measure serving throughput and latency (like vllm bench serve)");
  auto* url = cmd->add_option("--url", o.url, "An OpenAI-compatible server, http://HOST:PORT");
  auto* model = cmd->add_option("--model", o.model, "Start tandem in-process on this GGUF file")
                    ->check(CLI::ExistingFile);
  url->excludes(model);
  cmd->add_option("--api-key", o.api_key, "With --url: sent as 'Authorization: Bearer KEY'")
      ->needs(url);
  cmd->add_option("--served-model-name", o.served_model_name,
                  "With --model: the model's id (default: the file's stem); with --url: the id "
                  "the requests name (default: the first /v1/models lists)")
      ->check(non_empty_name());
  auto* overlap = cmd->add_option("--overlap", o.overlap,
                                  "on, off, or compare: off then on, outputs checked (--model)")
                      ->check(CLI::IsMember({"on", "off", "compare"}));
  auto* prefix_cache =
      cmd->add_option("--prefix-cache", o.prefix_cache,
                      "on, off, or compare: off then on, outputs checked (--model)")
          ->check(CLI::IsMember({"on", "off", "compare"}));
  cmd->add_option("--shared-prefix-tokens", o.shared_prefix_tokens,
                  "Tokens every prompt starts with, before its own --prompt-tokens")
      ->check(CLI::Range(0, 1 << 24));
  cmd->add_option("--concurrency", o.concurrency, "Closed loop: requests in flight at most")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--request-rate", o.request_rate,
                  "Open loop: Poisson arrivals, requests per second (default inf: all at once)")
      ->check(positive(true, 0.001));
  cmd->add_option("--burstiness", o.burstiness,
                  "Gamma shape of the arrival gaps: 1 Poisson, <1 burstier, >1 steadier")
      ->check(positive(false));
  cmd->add_option("--requests", o.requests, "Requests to send (default 64)")
      ->check(CLI::Range(1, 10000000));
  cmd->add_option("--prompt-tokens", flags->prompt_tokens,
                  "Prompt length in tokens: N, or LO:HI drawn uniformly (default 32)")
      ->check(CLI::Validator(
          [](std::string& s) {
            int32_t lo = 0, hi = 0;
            return parse_token_range(s, lo, hi) ? std::string()
                                                : "expects N or LO:HI with 1 <= LO <= HI";
          },
          "N|LO:HI"));
  cmd->add_option("--max-tokens", o.max_tokens,
                  "Tokens to generate per request (ignore_eos; default 128)")
      ->check(CLI::Range(1, 1 << 24));
  cmd->add_option("--temperature", o.temperature, "Sampling temperature (default 1)")
      ->check(finite_range(0, 100));
  auto* stream =
      cmd->add_flag("--stream", o.stream, "Stream responses (SSE): TTFT, TPOT and ITL need it");
  auto* offline = cmd->add_flag("--offline", o.offline,
                                "With --model: submit straight to the scheduler, no HTTP");
  offline->needs(model);
  cmd->add_option("--seed", o.seed, "Workload seed: prompts, request seeds, arrivals (default 0)")
      ->check(uint64_value());
  auto* json =
      cmd->add_option("--json", o.json_path, "Write every figure and the settings to this file");
  cmd->add_flag("--json-detailed", o.json_detailed,
                "With --json: also write each request's timings, token counts and text (as vllm "
                "bench serve --save-detailed)")
      ->needs(json);
  cmd->add_option("--json-schema", o.json_schema,
                  "Constrain outputs to this JSON Schema (response_format json_schema); with "
                  "--model, runs unconstrained and constrained side by side")
      ->check(CLI::ExistingFile);
  cmd->add_flag("--embeddings", o.embeddings,
                "POST /v1/embeddings, each prompt one input (with --model: the engine's "
                "pooling): throughput in prompt tokens, latency per request")
      ->excludes(stream)
      ->excludes("--json-schema")
      ->excludes("--max-tokens")
      ->excludes("--temperature");
  add_engine_flags(*cmd, *flags, model);

  return {cmd, [flags, url, model, overlap, prefix_cache, json] {
            bench::BenchOptions& o = flags->options;
            if (url->count() == 0 && model->count() == 0)
              throw UsageError("--url or --model is required");
            if (overlap->count() > 0 && model->count() == 0)
              throw UsageError("--overlap needs --model (it sets the in-process engine)");
            if (prefix_cache->count() > 0 && model->count() == 0)
              throw UsageError("--prefix-cache needs --model (it sets the in-process engine)");
            if (json->count() > 0) check_output_path("--json", o.json_path, /*in_place=*/true);
            if (!o.json_schema.empty()) check_schema_file(o.json_schema);
            parse_token_range(flags->prompt_tokens, o.prompt_tokens_min, o.prompt_tokens_max);
            o.prefill_chunk = prefill_chunk_value(flags->prefill_chunk);
            o.spec_tokens = flags->spec.tokens;
            o.spec_ngram_min = flags->spec.ngram_min();
            o.spec_ngram_max = flags->spec.ngram_max();
            o.spec_max_batch = flags->spec.max_batch;
            try {
              return bench::run_bench(o, std::cout);
            } catch (const std::invalid_argument& e) {
              throw UsageError(e.what());
            } catch (const gguf::GgufError& e) {
              throw UsageError(std::string("--model: ") + e.what());
            } catch (const EngineOptionError& e) {
              throw UsageError(e.what());  // it names its flag, as serve prints it
            }
          }};
}

}  // namespace tandem::app
