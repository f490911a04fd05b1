// What the two load paths (HTTP client, direct to the scheduler) share: how requests are
// paced and what a run returns. Pacing: request i is sent at its planned arrival time or
// when one of `concurrency` slots frees up, whichever is later, always in index order.
#pragma once

#include <charconv>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "bench/summary.h"
#include "protocol/pooling.h"
#include "runner/grammar/compiled_grammar.h"

namespace tandem::bench {

struct LoadOptions {
  int32_t concurrency = 0;  // requests in flight at most; 0: no bound (open loop)
  bool stream = false;      // HTTP only: the scheduler path always sees every token
  // Embedding requests: /v1/embeddings over HTTP, pooling requests (max_tokens 0) on the
  // scheduler path, pooled so. A record's text is the embedding's floats, for comparing runs.
  bool embeddings = false;
  Pooling pooling = Pooling::kLast;
  float temperature = 1.0f;
  // Structured output (--json-schema): every request's output fits this schema, and ends
  // where the grammar does (no ignore_eos). The text for HTTP, the compiled grammar for the
  // scheduler path; empty and null: unconstrained.
  std::string json_schema;
  std::shared_ptr<const grammar::CompiledGrammar> grammar;
  // Called once per finished request (from the load's own thread), for the progress bar.
  std::function<void(const RequestRecord&)> on_done;
};

// An embedding as a record's text: each float's shortest form, space-separated, so two
// runs' embeddings compare as their texts do (--overlap compare), bit for bit.
inline std::string embedding_text(std::span<const float> embedding) {
  std::string text;
  char buffer[32];
  for (float x : embedding) {
    const auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, x);
    text.append(buffer, ec == std::errc() ? end : buffer);
    text += ' ';
  }
  return text;
}

using Clock = std::chrono::steady_clock;

inline double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

struct LoadResult {
  std::vector<RequestRecord> records;  // in request order
  // The run's start to its last response. With --request-rate the first request waits
  // its own arrival gap inside it, as in vllm bench serve.
  double duration_seconds = 0;
};

}  // namespace tandem::bench
