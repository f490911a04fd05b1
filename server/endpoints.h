// The HTTP API without the sockets: routes a request to its endpoint and answers it
// whole (models, health, metrics, tokenize, errors), or turns a completion request into
// a GenerationPlan for the session to submit and stream. Thread-safe: any I/O thread may
// call it at once (the tokenizer and the scheduler's submit are).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "protocol/api_error.h"
#include "protocol/chat_template.h"
#include "protocol/completion_request.h"
#include "protocol/responses.h"
#include "runner/tokenizer/tokenizer.h"
#include "scheduler/request.h"
#include "scheduler/scheduler.h"
#include "server/server_metrics.h"

namespace tandem::server {

// What the endpoints need from an HTTP request (views into the session's parsed message).
// The body is read as JSON whatever the Content-Type says: OpenAI's clients send
// application/json, and `curl -d` sends a form type with a JSON body.
struct ApiRequest {
  std::string_view method;         // "GET", "POST", ...; HEAD is answered as GET
  std::string_view target;         // "/v1/completions?x=y" or "http://host/v1/...": the
                                   // query and the scheme and host are ignored
  std::string_view authorization;  // the Authorization header, or empty
  std::string_view body;
};

// A whole response.
struct HttpAnswer {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra: Allow, Retry-After, ...
};

// A validated, tokenized completion request, ready for Scheduler::submit once the session
// has attached its sink.
struct GenerationPlan {
  GenerationRequest request;
  ResponseHeader header;  // id, created, model, seed: shared by every body and chunk
  Endpoint endpoint = Endpoint::kCompletions;
  bool stream = false;
  bool include_usage = false;
};

// The model as the API describes it.
struct ServedModelInfo {
  std::string id;  // what /v1/models lists and responses name
  int32_t context_length = 0;
  int32_t vocab_size = 0;
  int64_t kv_capacity_tokens = 0;  // the KV pool's size: no request may need more
  ChatTemplate chat_template = ChatTemplate::kChatml;
};

// The answer for an ApiError: its JSON body, plus Retry-After for 503, Allow for 405
// (given), WWW-Authenticate for 401.
HttpAnswer error_answer(const ApiError& error, std::string_view allow = {});

// Compares in time that depends only on the lengths, not on where the strings differ.
bool constant_time_equal(std::string_view a, std::string_view b);

class Endpoints {
 public:
  // scheduler, tokenizer and metrics must outlive this object. An empty api_key: no auth.
  Endpoints(Scheduler& scheduler, const Tokenizer& tokenizer, ServedModelInfo model,
            std::string api_key, ServerMetrics& metrics);

  // The route's name for metrics ("/v1/completions", or "other" for unknown paths).
  static std::string route_name(std::string_view target);

  std::variant<HttpAnswer, GenerationPlan> handle(const ApiRequest& request);

  // /health answers 200 only while serving (model loaded, scheduler running).
  void set_serving(bool serving) { serving_.store(serving); }
  bool serving() const { return serving_.load(); }

  Scheduler& scheduler() { return scheduler_; }
  ServerMetrics& metrics() { return metrics_; }

 private:
  std::variant<HttpAnswer, GenerationPlan> completion(std::string_view body, Endpoint endpoint);
  HttpAnswer tokenize(std::string_view body) const;
  HttpAnswer detokenize(std::string_view body) const;
  HttpAnswer models() const;
  HttpAnswer health() const;
  HttpAnswer metrics_page() const;
  uint64_t draw_seed();

  Scheduler& scheduler_;
  const Tokenizer& tokenizer_;
  ServedModelInfo model_;
  std::string api_key_;
  ServerMetrics& metrics_;
  std::string bos_text_;
  std::string eos_text_;
  int64_t created_ = 0;
  std::atomic<bool> serving_{false};
  std::atomic<uint64_t> next_response_ = 1;
};

}  // namespace tandem::server
