// `tandem bench` as a whole: plans the workload, drives a server (--url) or an in-process
// engine (--model; --offline straight into its scheduler), with overlap on, off or both
// compared, then prints the table and writes the JSON report. Not thread-safe; one run.
#pragma once

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <limits>
#include <string>

namespace tandem::bench {

struct BenchOptions {
  std::string url;              // exclusive with model
  std::string api_key;          // --url only: sent as a bearer token
  std::filesystem::path model;  // a GGUF file
  // --model: the engine's id (default: the file's stem); --url: the id requests name
  // (default: the first /v1/models lists).
  std::string served_model_name;
  std::string overlap = "on";        // on, off or compare (--model only)
  std::string prefix_cache = "on";   // on, off or compare (--model only; not with overlap compare)
  int32_t shared_prefix_tokens = 0;  // tokens every prompt starts with
  int32_t concurrency = 0;           // 0: no bound
  double request_rate = std::numeric_limits<double>::infinity();
  double burstiness = 1.0;
  int32_t requests = 64;
  int32_t prompt_tokens_min = 32;
  int32_t prompt_tokens_max = 32;
  int32_t max_tokens = 128;
  float temperature = 1.0f;
  bool stream = false;
  bool offline = false;
  // POST /v1/embeddings instead of completions (with --model: the engine's pooling): each
  // request pools its prompt and generates nothing; throughput is prompt tokens.
  bool embeddings = false;
  uint64_t seed = 0;
  std::string json_path;       // empty: no JSON file
  bool json_detailed = false;  // the JSON also holds every request's record (request_json)
  // A JSON Schema file: with --model, the workload runs unconstrained and then with
  // response_format json_schema, side by side (with --overlap compare: constrained, off
  // against on); with --url, constrained only.
  std::filesystem::path json_schema;
  bool progress = true;  // shown only when stderr is a terminal
  // Passed to the engine with --model (as `tandem serve` takes them).
  int threads = 0;
  int32_t max_batch = 64;
  int32_t max_step_tokens = 512;
  int32_t prefill_chunk = 0;  // --prefill-chunk: 0 auto (SchedulerOptions::paced_prefill)
  int64_t kv_tokens = 0;
  std::string kv_dtype = "f16";  // the KV cache's element type (kv_cache.h's names)
  std::string device = "cpu";    // --device: cpu or cuda
  int32_t max_queue = 256;
  // Speculative decoding (SchedulerOptions::spec_*); spec_compare: a run without it, then
  // one with spec_tokens, outputs checked (--model; one compare at a time).
  int32_t spec_tokens = 0;
  int32_t spec_ngram_min = 2;
  int32_t spec_ngram_max = 4;
  int32_t spec_max_batch = 8;
  bool spec_compare = false;
  // --model on the CPU: measure the machine's ceilings after the runs and report each
  // run's matmul rate and weight streaming as fractions of them.
  bool ceilings = true;
};

// Returns the exit status: 0, or 1 when no request completed or --overlap compare found
// failed requests or differing outputs (the message goes to stderr). Throws
// std::invalid_argument for settings that cannot work (the caller's usage error) and
// std::runtime_error for the rest.
int run_bench(const BenchOptions& options, std::ostream& out);
// The text of a --json-schema file; std::invalid_argument when it cannot be read.
std::string read_schema(const std::filesystem::path& path);

}  // namespace tandem::bench
