// What one benchmark run measured: per-request timings, and the summary `tandem bench`
// reports like vllm bench serve and sglang.bench_serving do (throughputs; TTFT, TPOT, ITL
// and end-to-end latency as mean / p50 / p90 / p99, in milliseconds). Pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tandem::bench {

// One request as the client saw it. Times are seconds.
struct RequestRecord {
  bool ok = false;
  bool streamed = false;      // timings per token were seen: TTFT, TPOT and ITL count it
  std::string error;          // why it failed, when !ok
  double start_seconds = 0;   // when it was sent, from the start of the run
  double ttft = 0;            // to the first content (text) received
  double e2e = 0;             // to the end of the response
  std::vector<double> itl;    // gaps between successive content chunks
  int64_t prompt_tokens = 0;  // from usage (else what was sent)
  int64_t output_tokens = 0;  // from usage
  // usage.prompt_tokens_details.cached_tokens: prompt tokens the server's prefix cache
  // served; -1 when the server did not say.
  int64_t cached_tokens = -1;
  std::string text;  // the generated text, for comparing runs
  std::string finish_reason;
};

// Mean, median and tail of a sample; all zero for an empty one.
struct Distribution {
  double mean = 0, p50 = 0, p90 = 0, p99 = 0, min = 0, max = 0;
  int64_t count = 0;
};

// The p-th percentile (p in [0, 100]) by linear interpolation between closest ranks, as
// numpy.percentile does by default. `sorted` must be ascending; 0 when empty.
double percentile(const std::vector<double>& sorted, double p);
Distribution distribution(std::vector<double> sample);

struct RunSummary {
  int64_t completed = 0;
  int64_t failed = 0;
  double duration_seconds = 0;  // the run's wall time
  int64_t prompt_tokens = 0;    // over completed requests
  int64_t output_tokens = 0;
  // Of prompt_tokens, those the completed requests' usage reported cached (a repeated run
  // against one server finds its prompts there); -1 when no response reported it.
  int64_t cached_prompt_tokens = -1;
  double requests_per_second = 0;
  double output_tokens_per_second = 0;
  double total_tokens_per_second = 0;  // prompt + output
  // In milliseconds. TPOT is per request: (e2e - ttft) / (output_tokens - 1), for requests
  // with more than one output token; ITL pools every gap of every request. TTFT, TPOT and
  // ITL count streamed requests only (a whole response has no first token to time).
  Distribution ttft_ms, tpot_ms, itl_ms, e2e_ms;
  std::string first_error;  // one example, when failed > 0
};

RunSummary summarize(const std::vector<RequestRecord>& records, double duration_seconds);

}  // namespace tandem::bench
