// The HTTP API without the sockets: routes a request to its endpoint and answers it
// whole (models, health, metrics, tokenize, errors), or turns a completion request into
// a GenerationPlan, which the session hands back to submit() with its sink and then
// writes out. A generation's refusal or failure gets its HTTP status and error object
// here (and in protocol), never in the session. Thread-safe: any I/O thread may call it at once
// (the tokenizer and the scheduler's submit and cancel are).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "protocol/api_error.h"
#include "protocol/chat_prompt.h"
#include "protocol/completion_request.h"
#include "protocol/embedding_request.h"
#include "protocol/messages_api_request.h"
#include "protocol/response_encoder.h"
#include "protocol/responses_api_request.h"
#include "protocol/responses_api_writer.h"
#include "runner/tokenizer/tokenizer.h"
#include "scheduler/model_card.h"
#include "scheduler/request.h"
#include "scheduler/scheduler.h"
#include "server/access_log.h"
#include "server/dry_breakers.h"
#include "server/generation_response.h"
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
  std::string_view api_key;        // the X-Api-Key header (Anthropic's clients'), or empty
  std::string_view body;
  // The client's X-Request-Id where it is an id a header and a log line can carry (1-128
  // visible ASCII characters), else empty: the response's id is made from it, as vLLM's.
  std::string_view request_id;
};

// A whole response.
struct HttpAnswer {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra: Allow, Retry-After, ...
  bool close = false;  // close the connection after it (the server is stopping)
  // An error answer's error (error_answer sets it), for answer_in_route_shape.
  std::optional<ApiError> error = std::nullopt;
};

// An error answer on one of Anthropic's routes (/v1/messages...) in Anthropic's shape
// ({"type": "error", "error": {type, message}}), which its clients read; any other answer
// is left as it is. The session applies it to every answer it writes, its own refusals (a
// body over the limit, ...) included.
void answer_in_route_shape(std::string_view route, HttpAnswer& answer);
// /v1/messages and the routes under it.
bool anthropic_route(std::string_view route);

// A validated, tokenized completion request, ready for Endpoints::submit, and the encoder
// of its response (the session writes what it makes, whichever the endpoint).
struct GenerationPlan {
  // One per choice, in index order (prompt_index * n + choice), each seeded choice_seed
  // (protocol/choice_seed.h); without sinks: submit() attaches the session's.
  std::vector<GenerationRequest> choices;
  ResponseEncoder encoder;
  bool stream = false;
  AccessRecord access;    // written to the access log when the request is accepted
  bool logprobs = false;  // the response carries log-probabilities
  int32_t n = 1;          // choices per prompt
  // Per choice, completions' echo: the prompt's text, sent before the output; or empty.
  std::vector<std::string> echoes;
  ToolCallReading tools;  // chat with tools: the outputs are read for calls
  // The log-probabilities name each token "token_id:N", or are the draw's probabilities.
  LogprobsStyle logprobs_style;
  ReasoningReading reasoning = {};  // chat: the reasoning split off the content
  // /v1/responses and /v1/messages: what writes the response in the encoder's place.
  std::unique_ptr<SingleOutputWriter> writer = nullptr;
  // /v1/embeddings: one choice per input, answered with their embeddings.
  std::optional<EmbeddingsOut> embeddings = std::nullopt;
  // timings_per_token: llama-server's timings in every chunk and in the body.
  bool timings = false;
  // The writer hears each accepted token's id (SingleOutputWriter::tokens_seen).
  bool token_ids = false;
  // The session hears each choice's admission (the prefix cache's share) without timings:
  // a streamed /v1/messages writes message_start then (SingleOutputWriter::prompt_cached).
  bool admissions = false;
};

// The answer for an ApiError: its JSON body, plus Retry-After for 503, Allow for 405
// (given), WWW-Authenticate for 401.
HttpAnswer error_answer(const ApiError& error, std::string_view allow = {});

// Compares in time that depends only on the lengths, not on where the strings differ.
bool constant_time_equal(std::string_view a, std::string_view b);

class Endpoints {
 public:
  using Result = std::variant<HttpAnswer, GenerationPlan>;

  // scheduler, tokenizer and metrics must outlive this object. An empty api_key: no auth.
  Endpoints(Scheduler& scheduler, const Tokenizer& tokenizer, ModelCard model, std::string api_key,
            ServerMetrics& metrics);

  // The route's name for metrics ("/v1/completions", or "other" for unknown paths).
  static std::string route_name(std::string_view target);

  Result handle(const ApiRequest& request);

  // Submits a plan's choices, all or none, each with the sink make_sink(choice) gives: the
  // accepted requests' ids (for cancel), or the answer that refuses them (400, 503; close
  // set when stopping).
  std::variant<std::vector<uint64_t>, HttpAnswer> submit(
      GenerationPlan& plan, const std::function<std::shared_ptr<RequestSink>(int32_t)>& make_sink);
  // Cancels an accepted request that has not ended; its sink then hears kCancelled.
  void cancel(uint64_t id) { scheduler_.cancel(id); }

  // /health answers 200 only while serving (model loaded, scheduler running).
  void set_serving(bool serving) { serving_.store(serving); }
  bool serving() const { return serving_.load(); }

  ServerMetrics& metrics() { return metrics_; }

  // Where accepted generation requests are recorded; none by default. Set before serving;
  // the log must outlive this object.
  void set_access_log(AccessLog* log) { access_log_ = log; }

 private:
  struct Route;
  static const Route* find_route(std::string_view path);

  // Route handlers take the whole request; most read only its body.
  Result completions(const ApiRequest& api) { return completion(api, Endpoint::kCompletions); }
  Result chat_completions(const ApiRequest& api) {
    return completion(api, Endpoint::kChatCompletions);
  }
  Result completion(const ApiRequest& api, Endpoint endpoint);
  Result responses(const ApiRequest& api);
  Result messages(const ApiRequest& api);      // messages_endpoint.cpp
  Result count_tokens(const ApiRequest& api);  // messages_endpoint.cpp
  // llama-server's /completion and /infill (native_endpoint.cpp).
  Result native(const ApiRequest& api, bool infill);
  Result native_completion(const ApiRequest& api) { return native(api, false); }
  Result infill(const ApiRequest& api) { return native(api, true); }
  std::optional<HttpAnswer> thinking_refusal(const MessagesRequest& request) const;
  Result embeddings(const ApiRequest& api);  // embeddings_endpoint.cpp
  std::variant<std::vector<std::vector<int32_t>>, HttpAnswer> embedding_prompts(
      const EmbeddingRequest& request) const;
  // A parsed request of any generation endpoint, checked against the model and planned;
  // renames: /v1/responses's or /v1/messages's, which its refusals are named by.
  Result generation(const ApiRequest& api, CompletionRequest& request,
                    const ParamRenames* renames = nullptr);
  // The request's prompts as token ids (chat: the rendered messages), or the refusal.
  // reasoning_opened: the rendered chat prompt leaves the model inside its reasoning.
  std::variant<std::vector<std::vector<int32_t>>, HttpAnswer> prompts_of(CompletionRequest& request,
                                                                         bool* reasoning_opened);
  // calls_format: the format the choices' tool calls are read in (framed_call_format where
  // a grammar writes them).
  GenerationPlan plan_choices(CompletionRequest& request, std::vector<std::vector<int32_t>> prompts,
                              std::shared_ptr<const grammar::CompiledGrammar> grammar,
                              bool reasoning_opened, ToolCallFormat calls_format);
  // Chat whose answers split the reasoning off: the request's reasoning_format, else the
  // server's, where the template knows the family's markers. opened: the rendered prompt
  // opened the reasoning (kept unless a JSON answer's grammar writes the output).
  ReasoningReading reasoning_reading(const CompletionRequest& request, bool opened) const;
  Result apply_template(const ApiRequest& api);
  // The chat prompt as the model's template renders it, or the 400 that refuses the
  // request (the model has no template, cannot honour its reasoning_effort, or raised or
  // failed), naming param (reasoning_effort's refusal names that field).
  std::variant<std::vector<PromptSegment>, HttpAnswer> render_chat(
      const ChatInputs& inputs, const char* param = "messages") const;
  // render_chat without the reasoning_effort check, for a caller that has made it.
  std::variant<std::vector<PromptSegment>, HttpAnswer> render_template(const ChatInputs& inputs,
                                                                       const char* param) const;
  Result tokenize(const ApiRequest& api);
  Result detokenize(const ApiRequest& api);
  Result models(const ApiRequest& api);
  Result model_retrieve(std::string_view name);  // method and key already checked
  ServedModel served_model() const;              // what /v1/models lists
  std::optional<HttpAnswer> refusal(const ApiRequest& request, std::string_view route,
                                    std::string_view method, bool public_route) const;
  Result health(const ApiRequest& api);
  // llama-server's GET /props and GET /slots (props_endpoint.cpp).
  Result props(const ApiRequest& api);
  Result slots(const ApiRequest& api);
  Result metrics_page(const ApiRequest& api);
  uint64_t draw_seed();
  // How the served model writes tool calls (its chat template's family; plain JSON without).
  ToolCallFormat tool_format() const;
  std::string next_response_id(Endpoint endpoint);

  Scheduler& scheduler_;
  const Tokenizer& tokenizer_;
  ModelCard model_;
  std::string api_key_;
  ServerMetrics& metrics_;
  int64_t created_ = 0;
  std::atomic<bool> serving_{false};
  AccessLog* access_log_ = nullptr;
  // Response ids: 128 bits drawn at start, the low half counting up, so ids neither repeat
  // within a run nor (but with negligible chance) across restarts.
  uint64_t response_id_high_ = 0;
  std::atomic<uint64_t> next_response_ = 0;
  DryBreakerCache dry_breakers_{tokenizer_};
};

}  // namespace tandem::server
