#include "server/session.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>

#include "protocol/responses.h"
#include "server/cors.h"
#include "server/request_framing.h"
#include "server/strand_sink.h"

namespace tandem::server {

namespace {

// nginx's status for a request whose client closed the connection before the answer.
constexpr int kClientClosedRequest = 499;

std::string_view view(beast::string_view s) { return {s.data(), s.size()}; }

// A client's X-Request-Id, kept where it is an id a log line and a header can carry
// unchanged (is_client_request_id); anything else is ignored, as no id.
std::string client_request_id(std::string_view header) {
  return is_client_request_id(header) ? std::string(header) : std::string();
}

// How much a client may pipeline behind a running request; past it the session stops
// reading (and so stops noticing a disconnect) until the request is answered.
constexpr size_t kMaxPipelinedBytes = 64 * 1024;

double seconds_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

}  // namespace

struct Session::Generation {
  Generation(uint64_t serial, GenerationResponse response, bool keep_alive)
      : serial(serial), response(std::move(response)), keep_alive(keep_alive) {}

  uint64_t serial = 0;
  std::vector<uint64_t> request_ids;  // one per choice
  GenerationResponse response;
  bool keep_alive = true;
  bool done = false;  // every choice finished, or one failed
  // Each choice's latest text, for its first-token time and its inter-token gaps: each
  // choice is a sequence of its own (vLLM runs n choices as child requests), so a gap is
  // never measured from another choice's token in the same step.
  std::vector<std::optional<Clock::time_point>> last_text =
      std::vector<std::optional<Clock::time_point>>(static_cast<size_t>(response.choices()));
};

// Marks a write begun (the flag, its watch) and returns its completion handler: once the
// write is done `next` runs, unless it failed and the client is gone.
template <typename Next>
auto Session::on_written(Next next) {
  writing_ = true;
  stream_.expires_never();  // the watch, not a deadline over the write, times it
  watch_writes();
  return [self = shared_from_this(), next = std::move(next)](beast::error_code ec, size_t) {
    self->writing_ = false;
    self->count_backlog();  // the written chunk left
    self->write_watch_.wrote();
    if (ec) {
      self->client_gone();
      return;
    }
    next(*self);
  };
}

Session::Session(tcp::socket socket, SessionContext& context)
    : stream_(std::move(socket)), context_(context), write_watch_(stream_.get_executor()) {
  context_.endpoints.metrics().connection_opened();
}

// Drops the client once a write timeout passes with writes pending and nothing taken.
void Session::watch_writes() {
  write_watch_.arm(stream_.socket(), context_.limits.write_timeout, [weak = weak_from_this()] {
    const auto self = weak.lock();
    if (!self) return;
    self->write_watch_.fired();
    if (!self->writing_ || self->closed_) return;
    if (!self->write_watch_.progressed(self->stream_.socket())) {
      self->client_gone();
      return;
    }
    self->watch_writes();
  });
}

Session::~Session() {
  end_generation();
  context_.endpoints.metrics().add_stream_backlog(-static_cast<int64_t>(backlog_counted_));
  release_body();
  context_.endpoints.metrics().connection_closed();
}

// Brings this session's part of the server's stream backlog to what it holds now: the
// events queued and, while a write of them is in flight, the chunk going out.
void Session::count_backlog() {
  const uint64_t now = stream_pending_.size() + (writing_ ? stream_writing_.size() : 0);
  context_.endpoints.metrics().add_stream_backlog(static_cast<int64_t>(now) -
                                                  static_cast<int64_t>(backlog_counted_));
  backlog_counted_ = now;
}

void Session::start() {
  net::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->wait_for_request(); });
}

// Between requests a connection may idle up to idle_timeout; once a request's first byte
// arrives, the whole request must arrive within read_timeout.
void Session::wait_for_request() {
  if (closed_) return;
  if (context_.draining.load()) {
    close();
    return;
  }
  if (buffer_.size() > 0) {
    read_request();
    return;
  }
  stream_.expires_after(context_.limits.idle_timeout);
  stream_.async_read_some(buffer_.prepare(4096),
                          [self = shared_from_this()](beast::error_code ec, size_t n) {
                            if (ec) {
                              self->closed_ = true;
                              self->stream_.close();
                              return;
                            }
                            self->buffer_.commit(n);
                            self->read_request();
                          });
}

void Session::read_request() {
  received_ = Clock::now();
  parser_.emplace();
  parser_->body_limit(context_.limits.max_body);
  parser_->header_limit(context_.limits.max_header);
  stream_.expires_after(context_.limits.read_timeout);
  http::async_read_header(stream_, buffer_, *parser_,
                          [self = shared_from_this()](beast::error_code ec, size_t) {
                            if (ec) {
                              self->on_request(ec);
                            } else {
                              self->read_body();
                            }
                          });
}

bool Session::reserve_body() {
  const uint64_t bytes = parser_->content_length().value_or(
      parser_->chunked() ? context_.limits.max_body : uint64_t{0});
  if (bytes == 0) return true;
  ServerMetrics& metrics = context_.endpoints.metrics();
  const auto want = static_cast<int64_t>(std::min(bytes, context_.limits.max_body));
  const auto limit = static_cast<int64_t>(context_.limits.max_body_total);
  if (!metrics.reserve_body(want, std::max(limit, want))) return false;
  body_reserved_ = want;
  return true;
}

void Session::release_body() {
  if (body_reserved_ == 0) return;
  context_.endpoints.metrics().release_body(body_reserved_);
  body_reserved_ = 0;
}

// curl and others send "Expect: 100-continue" before a large body and wait (a second)
// for the interim response; a body over the limit was refused with the header already.
// A body that would pass every connection's total is refused unread (a 503 that closes).
void Session::read_body() {
  // The head alone decides these: refused before any interim answer or body byte.
  head_refused_ = framing_refusal(parser_->get().base(), parser_->get().version());
  if (!head_refused_ && !reserve_body()) {
    head_refused_ = overloaded(
        "The server is receiving too many request bodies at once (--body-total-mib); retry "
        "later.");
  }
  if (head_refused_) {
    on_request({});
    return;
  }
  auto read = [self = shared_from_this()] {
    http::async_read(self->stream_, self->buffer_, *self->parser_,
                     [self](beast::error_code ec, size_t) { self->on_request(ec); });
  };
  // RFC 9110 15.2: no 1xx to an HTTP/1.0 client.
  if (!beast::iequals(parser_->get()[http::field::expect], "100-continue") || parser_->is_done() ||
      parser_->get().version() < 11) {
    read();
    return;
  }
  static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
  net::async_write(stream_, net::buffer(kContinue.data(), kContinue.size()),
                   [self = shared_from_this(), read](beast::error_code ec, size_t) {
                     if (ec) {
                       self->on_request(ec);
                       return;
                     }
                     read();
                   });
}

void Session::on_request(beast::error_code ec) {
  release_body();  // the body has arrived, or will not
  // The request line is read before the fields: a 413 for the Content-Length, found
  // before the header is done, still names its route (an empty target is "other").
  route_ = Endpoints::route_name(view(parser_->get().target()));
  head_ = parser_->is_header_done() && parser_->get().method() == http::verb::head;
  // Before the refusals below: a browser reads a 413 only with the CORS header on it. The
  // fields parsed so far are read (a 413 for the Content-Length comes before the parser
  // counts the header done).
  cors_origin_ =
      cors_origin_for(context_.limits.allowed_origins, view(parser_->get()[http::field::origin]));
  client_request_id_ = client_request_id(view(parser_->get()["x-request-id"]));
  // Every answer from here, the refusals below included, speaks the request's version.
  if (parser_->is_header_done() || ec == http::error::body_limit)
    version_ = parser_->get().version() == 10 ? 10 : 11;
  if (head_refused_) {
    const ApiError refused = std::move(*head_refused_);
    head_refused_.reset();
    answer(error_answer(refused), false);
    return;
  }
  if (ec == http::error::body_limit) {
    answer(error_answer(payload_too_large("The request body is over the limit of " +
                                          std::to_string(context_.limits.max_body) + " bytes.")),
           false);
    return;
  }
  if (ec == http::error::header_limit) {
    answer(error_answer(ApiError{431, "invalid_request_error",
                                 "The request's headers are over the limit of " +
                                     std::to_string(context_.limits.max_header) + " bytes.",
                                 "", "request_header_fields_too_large"}),
           false);
    return;
  }
  if (ec && ec.category() == make_error_code(http::error::bad_target).category() &&
      ec != http::error::end_of_stream && ec != http::error::partial_message) {
    answer(error_answer(bad_request("Malformed HTTP request: " + ec.message() + ".")), false);
    return;
  }
  if (ec) {  // EOF, reset, timeout: nobody to answer
    closed_ = true;
    stream_.close();
    return;
  }
  auto& request = parser_->get();
  if (context_.draining.load()) {
    answer(error_answer(api_error_for(ErrorKind::kShuttingDown)), false);
    return;
  }
  const bool keep_alive = request.keep_alive();
  // A compressed body would otherwise be read as malformed JSON, naming a control byte.
  // Every Content-Encoding line counts (two lines are one list, RFC 9110 5.3).
  for (auto [field, end] = request.equal_range(http::field::content_encoding); field != end;
       ++field) {
    const beast::string_view coding = field->value();
    if (coding.empty() || beast::iequals(coding, "identity")) continue;
    answer(error_answer(ApiError{415, "invalid_request_error",
                                 "Content-Encoding '" + std::string(coding) +
                                     "' is not supported; send the body uncompressed.",
                                 "", "unsupported_media_type"}),
           keep_alive);
    return;
  }
  // A preflight, unless CORS is off: then OPTIONS is a method no route takes (405).
  if (request.method() == http::verb::options && !context_.limits.allowed_origins.empty()) {
    answer(preflight_answer(view(request[http::field::access_control_request_headers])),
           keep_alive);
    return;
  }
  if (context_.prepare != nullptr && request.method() == http::verb::post) {
    prepare_elsewhere(keep_alive);
    return;
  }
  const ApiRequest api{view(request.method_string()),
                       view(request.target()),
                       view(request[http::field::authorization]),
                       view(request["x-api-key"]),
                       request.body(),
                       client_request_id_};
  on_prepared(handle(context_.endpoints, api, route_), keep_alive);
}

// The headers an answer takes from its request: CORS, and the client's X-Request-Id, which
// replaces the response id there (as vLLM's --enable-request-id-headers and proxies echo
// it), so a request is followed by the id its caller gave it through logs of both sides.
template <typename Message>
void Session::set_per_request_headers(Message& message) const {
  if (!client_request_id_.empty()) message.set("x-request-id", client_request_id_);
  const std::string& allowed = context_.limits.allowed_origins;
  // With origins listed, every answer depends on the Origin (echoed, or none): a shared
  // cache must keep one answer per Origin.
  if (!allowed.empty() && allowed != "*") message.set(http::field::vary, "Origin");
  if (!cors_origin_.empty()) {
    message.set(http::field::access_control_allow_origin, cors_origin_);
    // Else a browser's script cannot read it (the OpenAI SDK's request_id).
    message.set(http::field::access_control_expose_headers, "x-request-id");
  }
  // Anthropic's SDKs read the id from request-id (their _request_id).
  if (anthropic_route(route_) && message.count("x-request-id") > 0) {
    message.set("request-id", std::string(message["x-request-id"]));
    if (!cors_origin_.empty())
      message.set(http::field::access_control_expose_headers, "x-request-id, request-id");
  }
}

void Session::answer(HttpAnswer answer, bool keep_alive) {
  if (closed_) return;
  keep_alive = keep_alive && !answer.close && !context_.draining.load();
  answer_in_route_shape(route_, answer);  // the session's own refusals too
  response_.emplace(static_cast<http::status>(answer.status), version_);
  response_->set(http::field::server, "tandem");
  response_->set(http::field::content_type, answer.content_type);
  for (auto& [name, value] : answer.headers) response_->set(name, value);
  set_per_request_headers(*response_);
  response_->body() = std::move(answer.body);
  response_->keep_alive(keep_alive);
  response_->prepare_payload();
  if (answer.status == 204) {  // no content: RFC 9110 forbids both headers on a 204
    response_->erase(http::field::content_length);
    response_->erase(http::field::content_type);
  }
  // A HEAD answer says what GET's would be (Content-Length included) but sends no body:
  // a client reads none, and bytes after the header would be taken for the next response.
  if (head_) response_->body().clear();
  context_.endpoints.metrics().count_response(route_, answer.status);
  http::async_write(stream_, *response_, on_written([keep_alive](Session& s) {
                      s.response_.reset();
                      s.finish_response(keep_alive);
                    }));
}

void Session::start_generation(GenerationPlan plan, bool keep_alive) {
  const uint64_t serial = next_serial_++;
  plan.access.request_id = client_request_id_;
  std::vector<int64_t> timed_prompts;  // the plan's choices go to the scheduler
  if (plan.timings)
    for (const GenerationRequest& c : plan.choices)
      timed_prompts.push_back(static_cast<int64_t>(c.prompt.size()));
  auto submitted = context_.endpoints.submit(plan, [&](int32_t choice) {
    return std::make_shared<StrandSink>(shared_from_this(), stream_.get_executor(), serial, choice,
                                        plan.timings || plan.admissions, plan.token_ids);
  });
  if (auto* refused = std::get_if<HttpAnswer>(&submitted)) {
    answer(std::move(*refused), keep_alive);
    return;
  }
  GenerationResponse response(std::move(plan.encoder), plan.stream, plan.logprobs, plan.n,
                              std::move(plan.echoes), std::move(plan.tools), plan.logprobs_style,
                              std::move(plan.writer), std::move(plan.reasoning),
                              std::move(plan.embeddings));
  if (plan.timings) response.time_choices(ChoiceTimings(Clock::now(), timed_prompts));
  generation_ = std::make_unique<Generation>(serial, std::move(response), keep_alive);
  generation_->request_ids = std::move(std::get<std::vector<uint64_t>>(submitted));
  context_.active.begin();
  if (generation_->response.stream()) start_stream();
  watch_for_disconnect();
}

void Session::start_stream() {
  Generation& g = *generation_;
  // HTTP/1.0 has no chunked encoding: the stream ends when the connection closes.
  const bool chunked = version_ == 11;
  stream_header_.emplace(http::status::ok, version_);
  stream_header_->set(http::field::server, "tandem");
  stream_header_->set(http::field::content_type, "text/event-stream");
  stream_header_->set(http::field::cache_control, "no-cache");
  // The response's id as x-request-id: OpenAI's clients show it in logs and errors (vLLM
  // sends it with --enable-request-id-headers).
  stream_header_->set("x-request-id", g.response.encoder().id());
  set_per_request_headers(*stream_header_);
  stream_header_->keep_alive(chunked && g.keep_alive && !context_.draining.load());
  stream_header_->chunked(chunked);
  stream_serializer_.emplace(*stream_header_);
  context_.endpoints.metrics().count_response(route_, 200);
  stream_pending_ += g.response.opening_events();
  count_backlog();
  http::async_write_header(stream_, *stream_serializer_,
                           on_written([](Session& s) { s.flush_stream(); }));
}

// Writes what is queued as one chunk; events that arrive meanwhile go into the next.
void Session::flush_stream() {
  if (writing_ || closed_) return;
  if (!stream_pending_.empty()) {
    stream_writing_.swap(stream_pending_);
    stream_pending_.clear();
    auto done = on_written([](Session& s) { s.flush_stream(); });
    count_backlog();
    if (stream_header_->chunked()) {
      net::async_write(stream_, http::make_chunk(net::buffer(stream_writing_)), std::move(done));
    } else {
      net::async_write(stream_, net::buffer(stream_writing_), std::move(done));
    }
    return;
  }
  if (!stream_ending_) return;
  stream_ending_ = false;
  if (!stream_header_->chunked()) {
    finish_response(false);
    return;
  }
  net::async_write(stream_, http::make_chunk_last(), on_written([](Session& s) {
                     s.finish_response(s.stream_header_->keep_alive());
                   }));
}

// Whether an event of generation `serial` is still wanted: not once the response is over
// (every choice finished, or one failed and the others were cancelled: their late text and
// cancels must not follow the error and [DONE], nor close the connection under them).
bool Session::wants_events_of(uint64_t serial) const {
  return generation_ && generation_->serial == serial && !generation_->done && !closed_;
}

void Session::on_generation_text(uint64_t serial, int32_t choice, std::string text, int32_t tokens,
                                 Clock::time_point at) {
  if (!wants_events_of(serial)) return;
  Generation& g = *generation_;
  ServerMetrics& metrics = context_.endpoints.metrics();
  std::optional<Clock::time_point>& last = g.last_text.at(choice);
  if (!last) {
    metrics.observe_time_to_first_token(seconds_between(received_, at));
  } else {
    metrics.observe_inter_token_latency(seconds_between(*last, at));
  }
  last = at;
  std::string events = g.response.text(choice, text, tokens, at);  // empty unless streamed
  if (g.response.stream()) queue_stream_events(events);
}

// Queues a stream's events and writes them, unless the client is already more than the
// backlog limit behind, a write of its stream still in flight: then it is dropped. The
// check comes before this event joins the queue, so no single large event (an echoed
// prompt's logprobs) and no burst behind a write that is going out trips it. The same
// holds for all clients together (QA W: eight slow readers of n = 16 streams with logprobs
// pinned 300 MB, each under its own limit): past the total, a client more than
// kFairBacklog behind is dropped, and a client that keeps up (its queue near empty) is not.
void Session::queue_stream_events(const std::string& events) {
  constexpr uint64_t kFairBacklog = uint64_t{1} << 20;
  const uint64_t behind = stream_pending_.size();
  const bool over_own = behind > context_.limits.max_stream_backlog;
  const bool over_all = behind > kFairBacklog &&
                        static_cast<uint64_t>(context_.endpoints.metrics().stream_backlog()) >
                            context_.limits.max_stream_backlog_total;
  if (writing_ && (over_own || over_all)) {
    std::fprintf(stderr,
                 "tandem serve: a client fell %zu bytes behind its stream (the limit is "
                 "%s): dropped, its generation cancelled\n",
                 static_cast<size_t>(behind),
                 over_own ? "--stream-backlog-mib" : "--stream-backlog-total-mib, for all clients");
    client_gone();
    return;
  }
  stream_pending_ += events;
  count_backlog();
  flush_stream();
}

void Session::on_generation_logprobs(uint64_t serial, int32_t choice,
                                     std::vector<TokenLogprobs> logprobs) {
  if (!wants_events_of(serial)) return;
  generation_->response.logprobs(choice, std::move(logprobs));
}

void Session::on_generation_embedding(uint64_t serial, int32_t choice,
                                      std::vector<float> embedding) {
  if (!wants_events_of(serial)) return;
  generation_->response.embedding(choice, std::move(embedding));
}

void Session::on_generation_tokens(uint64_t serial, int32_t choice,
                                   const std::vector<int32_t>& ids) {
  if (wants_events_of(serial)) generation_->response.token_ids(choice, ids);
}

void Session::on_generation_admitted(uint64_t serial, int32_t choice, int32_t cached_tokens) {
  if (!wants_events_of(serial)) return;
  const std::string events = generation_->response.prompt_cached(choice, cached_tokens);
  if (!events.empty() && generation_->response.stream()) queue_stream_events(events);
}

void Session::on_generation_finish(uint64_t serial, int32_t choice, FinishReason reason,
                                   Usage usage, Clock::time_point at, StopReason stop) {
  if (!wants_events_of(serial)) return;
  Generation& g = *generation_;
  ServerMetrics& metrics = context_.endpoints.metrics();
  // An embedding generates nothing: no finish reason, no first token to time.
  if (!g.response.embeds()) metrics.count_finish(g.response.reported_reason(choice, reason));
  // A choice that showed no text (an end at once, echo with max_tokens 0) has its first
  // token's time at its end.
  if (reason != FinishReason::kCancelled && !g.last_text.at(choice) && !g.response.embeds()) {
    metrics.observe_time_to_first_token(seconds_between(received_, at));
    g.last_text.at(choice) = at;
  }
  if (reason == FinishReason::kCancelled) {  // only a vanished client is: nobody to answer
    end_generation();                        // cancels the other choices too
    close();
    return;
  }
  std::string events = g.response.finish(choice, reason, usage, stop, at);
  if (!g.response.all_finished()) {
    if (g.response.stream()) queue_stream_events(events);
    return;
  }
  g.done = true;
  metrics.observe_request_latency(seconds_between(received_, at));
  metrics.count_prompt_tokens(g.response.usage().prompt_tokens);
  if (!g.response.stream()) {
    HttpAnswer whole;
    whole.body = g.response.whole_body();
    whole.headers.emplace_back("x-request-id", g.response.encoder().id());
    answer(std::move(whole), g.keep_alive);
    return;
  }
  end_stream(events);
}

void Session::on_generation_error(uint64_t serial, ErrorKind kind) {
  // One choice's error ends the response; the others' are dropped.
  if (!wants_events_of(serial)) return;
  Generation& g = *generation_;
  g.done = true;
  for (uint64_t id : g.request_ids) context_.endpoints.cancel(id);  // the other choices
  context_.endpoints.metrics().count_error();
  const ApiError error = api_error_for(kind);
  if (!g.response.stream()) {
    answer(error_answer(error), false);
    return;
  }
  end_stream(g.response.error_events(error));
}

// Queues a stream's last events ([DONE] included); the last chunk follows them.
void Session::end_stream(const std::string& events) {
  stream_pending_ += events;
  count_backlog();
  stream_ending_ = true;
  flush_stream();
}

void Session::finish_response(bool keep_alive) {
  end_generation();
  stream_serializer_.reset();
  stream_header_.reset();
  stream_pending_.clear();
  stream_writing_.clear();
  count_backlog();
  if (closed_) return;
  if (!keep_alive || context_.draining.load()) {
    close();
    return;
  }
  if (watching_) {  // the watch read must end before the next request's read begins
    read_after_watch_ = true;
    beast::error_code ec;
    stream_.socket().cancel(ec);
    return;
  }
  wait_for_request();
}

// A read kept pending while a generation runs: its only job is to notice the client
// going away (EOF or reset). Bytes that do arrive are a pipelined request, kept for later.
void Session::watch_for_disconnect() {
  if (watching_ || closed_ || buffer_.size() >= kMaxPipelinedBytes) return;
  watching_ = true;
  stream_.expires_never();  // a generation may take long; the writes keep their timeouts
  stream_.async_read_some(buffer_.prepare(4096),
                          [self = shared_from_this()](beast::error_code ec, size_t n) {
                            self->watching_ = false;
                            if (!ec) self->buffer_.commit(n);
                            if (self->closed_) return;
                            if (self->read_after_watch_) {
                              self->read_after_watch_ = false;
                              if (ec && ec != net::error::operation_aborted) {
                                self->close();
                              } else {
                                self->wait_for_request();
                              }
                              return;
                            }
                            if (ec) {
                              self->client_gone();
                              return;
                            }
                            if (self->generation_) self->watch_for_disconnect();
                          });
}

void Session::client_gone() {
  if (generation_ && !generation_->done) {
    // Each choice still running is cancelled, as each finished one was counted.
    for (int32_t i = generation_->response.finished(); i < generation_->response.choices(); ++i)
      context_.endpoints.metrics().count_finish(FinishReason::kCancelled);
    // A stream's 200 went out with its header; a whole answer never will be: counted as
    // nginx logs a client that closed first.
    if (!generation_->response.stream())
      context_.endpoints.metrics().count_response(route_, kClientClosedRequest);
  }
  end_generation();  // cancels a generation still running
  closed_ = true;
  // What was queued for it goes now (the scheduler's sinks may keep the session a while);
  // stream_writing_ stays until its write's handler has run.
  std::string().swap(stream_pending_);
  count_backlog();
  stream_.close();
}

void Session::end_generation() {
  if (!generation_) return;
  if (!generation_->done) {
    for (uint64_t id : generation_->request_ids) context_.endpoints.cancel(id);
  }
  generation_.reset();
  context_.active.end();
}

// After the last response: stop sending, then read and drop what the client still sends
// for a moment, so that closing with unread bytes does not reset the connection before
// the client has read the answer (a 413 leaves its body unread).
void Session::close() {
  if (closed_) return;
  if (generation_ && !generation_->done) {
    client_gone();
    return;
  }
  closed_ = true;
  beast::error_code ec;
  stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
  if (watching_ || writing_) {
    stream_.close();
    return;
  }
  stream_.expires_after(std::chrono::seconds(1));
  struct Drain {
    std::shared_ptr<Session> self;
    void operator()(beast::error_code ec, size_t) {
      if (ec) {
        self->stream_.close();
        return;
      }
      self->stream_.async_read_some(self->buffer_.prepare(4096), std::move(*this));
    }
  };
  buffer_.consume(buffer_.size());
  stream_.async_read_some(buffer_.prepare(4096), Drain{shared_from_this()});
}

}  // namespace tandem::server
