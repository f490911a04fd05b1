// The server's own counters and latency histograms, and the Prometheus text of /metrics
// (these plus the scheduler's counters). Thread-safe: sessions record from any I/O
// thread; render() may run concurrently with them.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "protocol/outcomes.h"
#include "scheduler/scheduler.h"

namespace tandem::server {

// tandem_generations_finished_total's labels: one per FinishReason, then "error".
inline constexpr size_t kFinishLabels = kFinishReasons + 1;

// A Prometheus histogram with fixed upper bounds (seconds).
class LatencyHistogram {
 public:
  explicit LatencyHistogram(std::vector<double> bounds);
  void observe(double seconds);
  // Appends the _bucket, _sum and _count lines for `name` (HELP and TYPE included).
  void render(std::string& out, const std::string& name, const std::string& help) const;

 private:
  std::vector<double> bounds_;
  mutable std::mutex mutex_;
  std::vector<uint64_t> counts_;  // per bound, not cumulative; one more for +Inf
  double sum_ = 0;
  uint64_t count_ = 0;
};

// What the grammar cache (structured outputs) holds of token masks (mask_budget.h).
struct GrammarCacheStats {
  uint64_t mask_bytes = 0;      // kept by every grammar it made, cached or in use
  uint64_t mask_budget = 0;     // their bound
  uint64_t masks_not_kept = 0;  // computed for one use because the bound was reached
};

class ServerMetrics {
 public:
  ServerMetrics();

  // One answered HTTP request; endpoint is the route ("/v1/completions") or "other".
  void count_response(const std::string& endpoint, int status);
  // A generation that ended, by how: its finish reason (label "stop", "length", ...), or
  // an error of any kind (label "error").
  void count_finish(FinishReason reason);
  void count_error();
  // An answered request's prompt tokens, as its usage counts them.
  void count_prompt_tokens(int64_t tokens);
  void observe_time_to_first_token(double seconds) { ttft_.observe(seconds); }
  void observe_inter_token_latency(double seconds) { itl_.observe(seconds); }
  void observe_request_latency(double seconds) { e2e_.observe(seconds); }
  // A POST being prepared (parsed, tokenized, its grammar compiled) off the I/O thread.
  void prepare_began() { preparing_.fetch_add(1); }
  void prepare_ended() { preparing_.fetch_sub(1); }
  // Bytes of stream events queued for clients and not yet taken, over every connection
  // (each session adds and takes back its own), and the connections open.
  void add_stream_backlog(int64_t bytes) { stream_backlog_.fetch_add(bytes); }
  int64_t stream_backlog() const { return stream_backlog_.load(); }
  // Bytes set aside for request bodies being received, over every connection: a body's
  // Content-Length (or the --max-body of a chunked one) from its header until it has arrived.
  // False, setting nothing aside, when `bytes` more would pass `limit`.
  bool reserve_body(int64_t bytes, int64_t limit) {
    int64_t now = bodies_.load();
    do {
      if (now + bytes > limit) return false;
    } while (!bodies_.compare_exchange_weak(now, now + bytes));
    return true;
  }
  void release_body(int64_t bytes) { bodies_.fetch_sub(bytes); }
  int64_t bodies() const { return bodies_.load(); }
  void connection_opened() { connections_.fetch_add(1); }
  void connection_closed() { connections_.fetch_sub(1); }

  // The whole /metrics page, in Prometheus text exposition format 0.0.4; the grammar
  // cache's figures where the model has one.
  std::string render(const SchedulerMetrics& scheduler,
                     const GrammarCacheStats* grammars = nullptr) const;

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, int>, uint64_t> responses_;
  std::array<uint64_t, kFinishLabels> finishes_{};  // by FinishReason, then errors
  uint64_t prompt_tokens_ = 0;
  LatencyHistogram ttft_;
  LatencyHistogram itl_;
  LatencyHistogram e2e_;
  std::atomic<int64_t> preparing_{0};
  std::atomic<int64_t> stream_backlog_{0};
  std::atomic<int64_t> connections_{0};
  std::atomic<int64_t> bodies_{0};
};

}  // namespace tandem::server
