// One HTTP/1.1 connection: reads requests (keep-alive, timeouts, size limits), answers
// them through Endpoints, and runs generations: submits through Endpoints with a sink
// that posts the events onto this session's strand, then writes what the plan's
// ResponseEncoder makes of them, whole or as an SSE stream. Pure I/O: what to answer is
// decided in Endpoints and protocol.
// Every handler runs on the strand, so a session needs no locks. A read error or EOF
// while a generation runs, or a failed write, cancels it at once.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "server/active_generations.h"
#include "server/endpoints.h"
#include "server/generation_response.h"
#include "server/write_watch.h"

namespace tandem::server {

namespace beast = boost::beast;
namespace http = boost::beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;

struct SessionLimits {
  uint64_t max_body = 1 << 20;  // bytes; larger bodies get 413
  // Bytes of bodies all connections together may be receiving at once; a request whose
  // body would pass it gets 503 (the string body reserves its Content-Length up front, so
  // without this, clients that send headers and trickle nothing could pin max_body each).
  uint64_t max_body_total = uint64_t{256} << 20;
  uint32_t max_header = 16 * 1024;  // bytes of request line and headers; larger get 431
  std::chrono::milliseconds idle_timeout{60'000};  // waiting for a request's first byte
  std::chrono::milliseconds read_timeout{30'000};  // the rest of a request, once begun
  // A client that takes none of a pending write for this long is dropped (WriteWatch): a
  // slow but steady reader of a large backlog (n choices with logprobs) keeps its stream.
  std::chrono::milliseconds write_timeout{30'000};
  // A stream's events the client has not taken yet, in bytes, past which it is dropped as
  // too slow (its generation cancelled): else a reader that takes a little now and then
  // kept the write timeout away while the server held everything generated for it.
  uint64_t max_stream_backlog = uint64_t{64} << 20;
  // The same over every connection: past it, a stream more than kFairBacklog behind (a write
  // of it in flight) is dropped, so slow readers together cannot pin more than about this.
  uint64_t max_stream_backlog_total = uint64_t{512} << 20;
  std::string allowed_origins = "*";  // ServerOptions::allowed_origins
};

// What every session shares; owned by the HttpServer, which outlives its sessions' use.
struct OwnedRequest;

struct SessionContext {
  Endpoints& endpoints;
  SessionLimits limits;
  ActiveGenerations& active;
  std::atomic<bool>& draining;  // stopping: answer 503 and close after each response
  // Where POST requests are prepared (parsed, their chat template rendered, their prompt
  // tokenized, their output grammar compiled): a schema's first compile can take a
  // second, and on an I/O thread it would hold every other connection's stream and probe
  // that long. Null: on the session's own strand.
  net::thread_pool* prepare = nullptr;
  // Where a request goes whose preparation needs a grammar compiled (compile_gate.h), so
  // that compiles never hold `prepare`'s threads. Null: compiles run on `prepare`.
  net::thread_pool* compile = nullptr;
};

class Session : public std::enable_shared_from_this<Session> {
 public:
  // The socket's executor must be a strand.
  Session(tcp::socket socket, SessionContext& context);
  ~Session();
  void start();

  // Generation events, each run on the strand; `serial` names the generation they
  // belong to, so late events of an abandoned one are ignored, and `choice` the choice.
  void on_generation_text(uint64_t serial, int32_t choice, std::string text, int32_t tokens,
                          Clock::time_point at);
  void on_generation_admitted(uint64_t serial, int32_t choice, int32_t cached_tokens);
  // The ids of the tokens accepted since the last call (GenerationPlan::token_ids), just
  // before the text they made or the finish.
  void on_generation_tokens(uint64_t serial, int32_t choice, const std::vector<int32_t>& ids);
  void on_generation_logprobs(uint64_t serial, int32_t choice, std::vector<TokenLogprobs> logprobs);
  void on_generation_embedding(uint64_t serial, int32_t choice, std::vector<float> embedding);
  // stop: the stop string or stop token that ended the output, where one did.
  void on_generation_finish(uint64_t serial, int32_t choice, FinishReason reason, Usage usage,
                            Clock::time_point at, StopReason stop = {});
  void on_generation_error(uint64_t serial, ErrorKind kind);
  net::any_io_executor executor() { return stream_.get_executor(); }

 private:
  struct Generation;

  void wait_for_request();
  void read_request();
  void read_body();
  // Sets this request's body aside in ServerMetrics::bodies; false where that would pass
  // max_body_total (one body alone always fits, so a large --max-body still works).
  bool reserve_body();
  void release_body();
  void on_request(beast::error_code ec);
  void prepare_elsewhere(bool keep_alive);
  bool wants_events_of(uint64_t serial) const;
  void queue_stream_events(const std::string& events);
  // Prepares on the calling thread (a pool's) and posts the result to the strand.
  void prepare_on_this_thread(const std::shared_ptr<OwnedRequest>& owned, bool keep_alive);
  void on_prepared(std::variant<HttpAnswer, GenerationPlan> result, bool keep_alive);
  // Endpoints::handle, with an exception (a bug) answered as a 500 rather than dropping
  // the connection.
  static std::variant<HttpAnswer, GenerationPlan> handle(Endpoints& endpoints,
                                                         const ApiRequest& api,
                                                         const std::string& route);
  void answer(HttpAnswer answer, bool keep_alive);
  template <typename Message>
  void set_per_request_headers(Message& message) const;
  void start_generation(GenerationPlan plan, bool keep_alive);
  void start_stream();
  void flush_stream();
  void end_stream(const std::string& events);
  template <typename Next>
  auto on_written(Next next);
  void watch_writes();
  void finish_response(bool keep_alive);
  void watch_for_disconnect();
  void client_gone();
  void count_backlog();
  void end_generation();
  void close();

  beast::tcp_stream stream_;
  SessionContext& context_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::string route_;              // of the request being answered, for metrics
  unsigned version_ = 11;          // of the request being answered: 10 or 11
  bool head_ = false;              // the request being answered is a HEAD: answer without a body
  std::string client_request_id_;  // its X-Request-Id, or "" (echoed instead of the response id)
  std::string cors_origin_;        // Access-Control-Allow-Origin for the request answered, or ""
  Clock::time_point received_;

  // The whole response being written (answers and non-streamed completions).
  std::optional<http::response<http::string_body>> response_;
  // A streamed response: its header, then chunks.
  std::optional<http::response<http::empty_body>> stream_header_;
  std::optional<http::response_serializer<http::empty_body>> stream_serializer_;
  std::string stream_pending_;    // SSE events not yet written
  std::string stream_writing_;    // the chunk being written
  uint64_t backlog_counted_ = 0;  // this session's part of ServerMetrics::stream_backlog
  int64_t body_reserved_ = 0;     // this request's part of ServerMetrics::bodies
  // The refusal its head alone decided, before any body byte: its framing or Host
  // (request_framing.h), or a body that would pass SessionLimits::max_body_total.
  std::optional<ApiError> head_refused_;
  bool writing_ = false;
  WriteWatch write_watch_;
  bool stream_ending_ = false;  // [DONE] is queued: write the last chunk after it

  std::unique_ptr<Generation> generation_;
  uint64_t next_serial_ = 1;
  bool watching_ = false;          // a read that notices a disconnect is pending
  bool read_after_watch_ = false;  // the watch was cancelled to read the next request
  bool closed_ = false;
};

}  // namespace tandem::server
