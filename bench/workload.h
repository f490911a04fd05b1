// The workload `tandem bench` sends: synthetic prompts of exact token counts, per-request
// seeds and arrival times, all a pure function of the settings and --seed, so that two runs
// (or overlap off and on) send the same requests in the same order. Pure values; no I/O.
#pragma once

#include <cstdint>
#include <limits>
#include <string_view>
#include <vector>

namespace tandem::bench {

struct WorkloadSpec {
  int32_t requests = 64;
  int32_t prompt_tokens_min = 32;  // each prompt's length is drawn uniformly from [min, max]
  int32_t prompt_tokens_max = 32;
  int32_t max_tokens = 128;
  // Tokens every prompt starts with (one prefix for the whole run, drawn from the pool
  // with its own stream), before the request's own prompt_tokens: SGLang's
  // generated-shared-prefix workload, what a common system prompt looks like.
  int32_t shared_prefix_tokens = 0;
  uint64_t seed = 0;
  // Requests per second of the open loop; infinity sends every request at once (the
  // closed loop's concurrency then paces them).
  double request_rate = std::numeric_limits<double>::infinity();
  // Gamma shape of the inter-arrival times: 1 is a Poisson process, < 1 burstier, > 1
  // more regular (vllm bench serve's --burstiness).
  double burstiness = 1.0;
};

struct PlannedRequest {
  std::vector<int32_t> prompt;  // token ids, sent as they are (no BOS added)
  uint64_t seed = 0;            // the request's sampling seed, below 2^31
  int32_t max_tokens = 0;
  double arrival_seconds = 0;  // offset from the start of the run
};

// Seconds from the start at which each of n requests arrives: cumulative sums of gamma
// inter-arrival gaps with mean 1/rate and shape `burstiness` (the first request arrives
// after one gap, as in vllm). An infinite rate gives all zeros.
std::vector<double> arrival_offsets(int32_t n, double rate, double burstiness, uint64_t seed);

// The token ids prompts are drawn from: the distinct ids of `sample_ids` (a tokenized
// passage of ordinary text, so no control or special tokens), first-seen order kept.
std::vector<int32_t> distinct_ids(const std::vector<int32_t>& sample_ids);

// A passage of plain English text whose tokens make the prompt pool.
std::string_view pool_passage();

// The whole workload. Throws std::invalid_argument when the pool is empty.
std::vector<PlannedRequest> plan_workload(const WorkloadSpec& spec,
                                          const std::vector<int32_t>& token_pool);

// A 64-bit mix (splitmix64), used to derive independent streams from --seed.
uint64_t mix_seed(uint64_t x);

}  // namespace tandem::bench
