#include "server/server_metrics.h"

#include <algorithm>
#include <cstdio>

namespace tandem::server {
namespace {

std::string number(double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.9g", value);
  return buffer;
}

void header(std::string& out, const std::string& name, const char* type, const std::string& help) {
  out += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

void sample(std::string& out, const std::string& name, double value) {
  out += name + " " + number(value) + "\n";
}

void metric(std::string& out, const std::string& name, const char* type, const std::string& help,
            double value) {
  header(out, name, type, help);
  sample(out, name, value);
}

// Vectors of bounds, seconds: TTFT and end-to-end spans are long, inter-token gaps short.
std::vector<double> ttft_bounds() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
}
std::vector<double> itl_bounds() {
  return {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5};
}
std::vector<double> e2e_bounds() {
  return {0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300};
}

// The finish counters under their labels, those counted at least once, sorted by label.
std::map<std::string, uint64_t> finish_counts(const std::array<uint64_t, kFinishLabels>& counts) {
  std::map<std::string, uint64_t> labelled;
  for (size_t i = 0; i < kFinishLabels; ++i) {
    if (counts[i] == 0) continue;
    labelled[i + 1 == kFinishLabels ? "error" : finish_reason_name(static_cast<FinishReason>(i))] =
        counts[i];
  }
  return labelled;
}

}  // namespace

LatencyHistogram::LatencyHistogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void LatencyHistogram::observe(double seconds) {
  size_t i = 0;
  while (i < bounds_.size() && seconds > bounds_[i]) ++i;
  std::lock_guard lock(mutex_);
  ++counts_[i];
  sum_ += seconds;
  ++count_;
}

void LatencyHistogram::render(std::string& out, const std::string& name,
                              const std::string& help) const {
  std::vector<uint64_t> counts;
  double sum;
  uint64_t count;
  {
    std::lock_guard lock(mutex_);
    counts = counts_;
    sum = sum_;
    count = count_;
  }
  header(out, name, "histogram", help);
  uint64_t cumulative = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cumulative += counts[i];
    out += name + "_bucket{le=\"" + number(bounds_[i]) + "\"} " + std::to_string(cumulative) + "\n";
  }
  out += name + "_bucket{le=\"+Inf\"} " + std::to_string(count) + "\n";
  sample(out, name + "_sum", sum);
  out += name + "_count " + std::to_string(count) + "\n";
}

ServerMetrics::ServerMetrics() : ttft_(ttft_bounds()), itl_(itl_bounds()), e2e_(e2e_bounds()) {}

void ServerMetrics::count_response(const std::string& endpoint, int status) {
  std::lock_guard lock(mutex_);
  ++responses_[{endpoint, status}];
}

void ServerMetrics::count_finish(FinishReason reason) {
  std::lock_guard lock(mutex_);
  ++finishes_[static_cast<size_t>(reason)];
}

void ServerMetrics::count_error() {
  std::lock_guard lock(mutex_);
  ++finishes_[kFinishLabels - 1];
}

void ServerMetrics::count_prompt_tokens(int64_t tokens) {
  std::lock_guard lock(mutex_);
  prompt_tokens_ += static_cast<uint64_t>(std::max<int64_t>(tokens, 0));
}

std::string ServerMetrics::render(const SchedulerMetrics& s,
                                  const GrammarCacheStats* grammars) const {
  std::string out;
  out.reserve(8192);
  uint64_t prompt_tokens = 0;
  {
    std::lock_guard lock(mutex_);
    prompt_tokens = prompt_tokens_;
    header(out, "tandem_http_requests_total", "counter",
           "HTTP requests answered, by endpoint and status code.");
    for (const auto& [key, count] : responses_) {
      out += "tandem_http_requests_total{endpoint=\"" + key.first + "\",status=\"" +
             std::to_string(key.second) + "\"} " + std::to_string(count) + "\n";
    }
    header(out, "tandem_generations_finished_total", "counter",
           "Generations ended, by reason (stop, length, cancelled, error).");
    for (const auto& [reason, count] : finish_counts(finishes_)) {
      out += "tandem_generations_finished_total{reason=\"" + reason + "\"} " +
             std::to_string(count) + "\n";
    }
  }
  metric(out, "tandem_prompt_tokens_total", "counter",
         "Prompt tokens of the generation requests answered, as their usage counts them (each "
         "prompt once, cached tokens included).",
         static_cast<double>(prompt_tokens));
  metric(out, "tandem_prefill_tokens_total", "counter",
         "Prompt tokens computed by prefill steps (cached and shared ones excluded, ones "
         "recomputed after a preemption included).",
         static_cast<double>(s.prompt_tokens));
  metric(out, "tandem_generation_tokens_total", "counter",
         "Tokens generated and accepted (discarded ones excluded).",
         static_cast<double>(s.completion_tokens));
  ttft_.render(out, "tandem_time_to_first_token_seconds",
               "Time from a request's arrival to its first generated text.");
  itl_.render(out, "tandem_inter_token_latency_seconds",
              "Time between consecutive pieces of generated text of a request.");
  e2e_.render(out, "tandem_e2e_request_latency_seconds",
              "Time from a generation request's arrival to its end.");
  metric(out, "tandem_requests_running", "gauge", "Requests admitted and generating.", s.running);
  metric(out, "tandem_requests_waiting", "gauge", "Requests waiting for admission.", s.waiting);
  metric(out, "tandem_requests_preparing", "gauge",
         "Requests being parsed, tokenized or having their output grammar compiled.",
         static_cast<double>(preparing_.load()));
  metric(out, "tandem_http_connections", "gauge", "Client connections open.",
         static_cast<double>(connections_.load()));
  metric(out, "tandem_request_body_bytes", "gauge",
         "Bytes set aside for request bodies being received, over every connection (bounded "
         "by --body-total-mib).",
         static_cast<double>(bodies_.load()));
  metric(out, "tandem_stream_backlog_bytes", "gauge",
         "Bytes of streamed events queued for clients that have not taken them yet, over every "
         "connection (bounded by --stream-backlog-total-mib).",
         static_cast<double>(stream_backlog_.load()));
  metric(out, "tandem_prefill_chunk_tokens", "gauge",
         "Prompt tokens a step may take beside decoding requests now for one waiting prompt "
         "(--prefill-chunk: paced by step times under auto, a share more for each further "
         "request waiting for its first token).",
         s.prefill_chunk_tokens);
  metric(out, "tandem_prefill_sustained_share", "gauge",
         "Share of the last 10 s of steps' time that went to prompt tokens; from 0.55 prompts "
         "are not paced (the load is prompts, and pacing would only queue them).",
         s.prefill_sustained_share);
  metric(out, "tandem_kv_blocks_used", "gauge", "KV cache blocks reserved by requests.",
         s.kv_blocks_used);
  metric(out, "tandem_kv_blocks_capacity", "gauge", "KV cache blocks in the pool (used plus free).",
         s.kv_blocks_total);
  metric(out, "tandem_kv_blocks_cached", "gauge",
         "KV cache blocks registered in the prefix cache (referenced or not).", s.kv_blocks_cached);
  metric(out, "tandem_kv_bytes_per_token", "gauge",
         "Bytes one token takes in the KV cache (its global layers, every layer when none "
         "is a sliding-window one; K and V, in its element type).",
         static_cast<double>(s.kv_bytes_per_token));
  if (s.kv_local_blocks_total > 0) {
    metric(out, "tandem_kv_local_blocks_used", "gauge",
           "Sliding-window layers' KV blocks held by requests (only their windows).",
           s.kv_local_blocks_used);
    metric(out, "tandem_kv_local_blocks_capacity", "gauge",
           "Sliding-window layers' KV blocks in their own pool.", s.kv_local_blocks_total);
    metric(out, "tandem_kv_local_bytes_per_token", "gauge",
           "Bytes one token position of a sliding-window block takes (those layers, K and V).",
           static_cast<double>(s.kv_local_bytes_per_token));
  }
  metric(out, "tandem_kv_capacity_tokens", "gauge", "Token positions the KV cache holds.",
         static_cast<double>(s.kv_capacity_tokens));
  metric(out, "tandem_prefix_cache_queried_tokens_total", "counter",
         "Prompt tokens looked up in the prefix cache at admission.",
         static_cast<double>(s.prefix_queried_tokens));
  metric(out, "tandem_prefix_cache_hit_tokens_total", "counter",
         "Prompt tokens found in the prefix cache (not prefilled).",
         static_cast<double>(s.prefix_hit_tokens));
  metric(out, "tandem_spec_verify_rows_total", "counter",
         "Speculative decoding: rows that verified drafts (--spec-tokens).",
         static_cast<double>(s.spec_verify_rows));
  metric(out, "tandem_spec_draft_tokens_total", "counter",
         "Speculative decoding: draft tokens verified.", static_cast<double>(s.spec_draft_tokens));
  metric(out, "tandem_spec_accepted_tokens_total", "counter",
         "Speculative decoding: draft tokens accepted (each a token that took no step of its "
         "own).",
         static_cast<double>(s.spec_accepted_tokens));
  metric(out, "tandem_preemptions_total", "counter",
         "Running requests preempted when the KV pool ran dry (recomputed later).",
         static_cast<double>(s.preemptions));
  metric(out, "tandem_device_busy_seconds_total", "counter",
         "Seconds the device spent executing steps.", s.device_busy_seconds);
  metric(out, "tandem_device_idle_seconds_total", "counter",
         "Seconds the device waited for a launch while requests were live.", s.device_idle_seconds);
  if (s.gpu_busy_seconds >= 0) {  // a GPU's own clock (--device cuda)
    metric(out, "tandem_gpu_busy_seconds_total", "counter",
           "Seconds the GPU spent running steps, on its own clock.", s.gpu_busy_seconds);
    metric(out, "tandem_gpu_chained_gap_microseconds", "gauge",
           "Median time the GPU sat idle between a step and the chained step after it "
           "(the last 4096 chained steps; -1 before any).",
           s.chained_gap_median_us);
  }
  metric(out, "tandem_steps_total", "counter", "Steps executed.", static_cast<double>(s.steps));
  metric(out, "tandem_chained_steps_total", "counter",
         "Decode steps launched chained to their predecessor (overlap).",
         static_cast<double>(s.chained_steps));
  header(out, "tandem_chain_breaks_total", "counter",
         "Steps whose successor could not be chained, by reason.");
  for (int i = 0; i < kChainBreakReasons; ++i) {
    out += std::string("tandem_chain_breaks_total{reason=\"") +
           chain_break_name(static_cast<ChainBreak>(i)) + "\"} " +
           std::to_string(s.chain_breaks[i]) + "\n";
  }
  metric(out, "tandem_discarded_tokens_total", "counter",
         "Tokens sampled for rows already finished: never streamed or counted.",
         static_cast<double>(s.discarded_tokens));
  if (grammars != nullptr) {
    metric(out, "tandem_grammar_mask_bytes", "gauge",
           "Bytes of token masks kept by compiled grammars (structured outputs, tools), cached "
           "or held by running requests.",
           static_cast<double>(grammars->mask_bytes));
    metric(out, "tandem_grammar_mask_budget_bytes", "gauge",
           "The bound on those bytes (--grammar-cache-mib, at least 32 MiB).",
           static_cast<double>(grammars->mask_budget));
    metric(out, "tandem_grammar_masks_not_kept_total", "counter",
           "Token masks computed for one use because the bound was reached (each such walk "
           "runs in the step's sampling, which every request of the step waits on).",
           static_cast<double>(grammars->masks_not_kept));
  }
  return out;
}

}  // namespace tandem::server
