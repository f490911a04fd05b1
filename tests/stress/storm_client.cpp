#include "tests/stress/storm_client.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <random>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

#include "tests/server/server_test_support.h"

namespace tandem::testing {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = net::ip::tcp;
using Json = nlohmann::json;

// What a complete response says, read as a client would.
Outcome read_answer(const PlannedRequest& planned,
                    const http::response<http::string_body>& response) {
  Outcome out;
  out.status = static_cast<int>(response.result_int());
  const std::string& body = response.body();
  if (out.status == 503) {
    out.kind = response.count(http::field::retry_after) ? Outcome::Kind::kOverloaded
                                                        : Outcome::Kind::kFailed;
    if (out.kind == Outcome::Kind::kFailed) out.error = "503 without Retry-After";
    return out;
  }
  if (out.status != 200) {
    out.error = "status " + std::to_string(out.status) + ": " + body;
    return out;
  }
  try {
    if (!planned.stream) {
      const Json json = Json::parse(body);
      const Json& choice = json.at("choices").at(0);
      out.text = planned.chat ? choice.at("message").at("content").get<std::string>()
                              : choice.at("text").get<std::string>();
      out.finish_reason = choice.at("finish_reason").get<std::string>();
    } else {
      const std::vector<std::string> events = sse_data(body);
      out.events = static_cast<int>(events.size());
      if (events.empty() || events.back() != "[DONE]") {
        out.error = "the stream did not end with [DONE]: " + body;
        return out;
      }
      for (size_t i = 0; i + 1 < events.size(); ++i) {
        const Json chunk = Json::parse(events[i]);
        if (chunk.contains("error")) {
          out.error = "error event: " + events[i];
          return out;
        }
        if (chunk.at("choices").empty()) continue;  // the usage chunk
        const Json& choice = chunk.at("choices").at(0);
        if (planned.chat) {
          const Json& delta = choice.at("delta");
          if (delta.contains("content")) out.text += delta.at("content").get<std::string>();
        } else {
          out.text += choice.at("text").get<std::string>();
        }
        if (!choice.at("finish_reason").is_null()) {
          out.finish_reason = choice.at("finish_reason").get<std::string>();
        }
      }
    }
  } catch (const std::exception& e) {
    out.error = std::string("unreadable answer (") + e.what() + "): " + body;
    return out;
  }
  if (out.finish_reason == "stop" || out.finish_reason == "length") {
    out.kind = Outcome::Kind::kCompleted;
  } else {
    out.error = "finish_reason '" + out.finish_reason + "'";
  }
  return out;
}

class Storm;

// One client connection: sends planned requests in turn. At most one socket operation
// (connect, write or read) and one timer wait are pending at any time; a hang-up closes
// the socket and reconnects once both have come back, so no handler outlives its buffers.
class Slot : public std::enable_shared_from_this<Slot> {
 public:
  Slot(Storm& storm, net::io_context& io) : storm_(storm), io_(io), socket_(io), timer_(io) {}
  void connect();  // the first connection: then waits at the barrier
  void begin();    // after the barrier: the first request
  void abort();    // the deadline passed

 private:
  void next_request();
  void reconnect_for(size_t index);
  void send(size_t index);
  void on_written(beast::error_code ec);
  void on_header(beast::error_code ec);
  void read_more();
  void on_read(beast::error_code ec);
  void on_timer(uint64_t serial, beast::error_code ec);
  void complete(Outcome outcome, bool keep_alive);
  void hang_up();
  void settle();
  void close_socket();

  Storm& storm_;
  net::io_context& io_;
  tcp::socket socket_;
  net::steady_timer timer_;
  beast::flat_buffer buffer_;
  http::request<http::string_body> request_;
  std::optional<http::response_parser<http::string_body>> parser_;
  const PlannedRequest* planned_ = nullptr;
  size_t index_ = 0;
  uint64_t serial_ = 0;  // of the request in progress; a timer of an earlier one is stale
  size_t scanned_ = 0;   // bytes of the SSE body searched for event ends
  int events_ = 0;
  bool socket_busy_ = false;
  int timers_pending_ = 0;
  bool hanging_up_ = false;
  bool open_ = false;
};

class Storm {
 public:
  Storm(uint16_t port, const std::vector<PlannedRequest>& plan, int connections)
      : endpoint_(net::ip::make_address("127.0.0.1"), port),
        plan_(plan),
        outcomes_(plan.size()),
        connections_(connections),
        deadline_(io_) {
    for (auto& o : outcomes_) o.error = "no outcome";
  }

  std::vector<Outcome> run(std::chrono::seconds deadline, StormStats* stats) {
    for (int i = 0; i < connections_; ++i) slots_.push_back(std::make_shared<Slot>(*this, io_));
    deadline_.expires_after(deadline);
    deadline_.async_wait([this](beast::error_code ec) {
      if (ec) return;
      timed_out_ = true;
      stopping_ = true;
      for (auto& slot : slots_) slot->abort();
    });
    for (auto& slot : slots_) slot->connect();
    if (plan_.empty()) deadline_.cancel();
    io_.run();
    if (stats) {
      stats->connections = opened_;
      stats->peak_open = peak_open_;
      stats->all_connected_at_once = all_connected_at_once_;
      stats->timed_out = timed_out_;
      stats->outstanding = static_cast<int>(plan_.size() - done_);
    }
    return std::move(outcomes_);
  }

  const tcp::endpoint& endpoint() const { return endpoint_; }
  bool stopping() const { return stopping_; }

  // The next request to send, or nullopt when all are taken.
  std::optional<size_t> take() {
    if (stopping_ || next_ >= plan_.size()) return std::nullopt;
    return next_++;
  }
  const PlannedRequest& planned(size_t i) const { return plan_[i]; }
  std::chrono::milliseconds backoff() {
    return std::chrono::milliseconds(std::uniform_int_distribution<int>(20, 400)(random_));
  }

  void record(size_t i, Outcome outcome) {
    outcomes_[i] = std::move(outcome);
    if (++done_ == plan_.size()) deadline_.cancel();
  }

  void opened() {
    ++opened_;
    peak_open_ = std::max(peak_open_, ++open_);
  }
  void closed() { --open_; }

  // The first connect of each slot came back; once all have, every slot begins at once.
  void first_connect_done(bool ok) {
    if (!ok) connect_failed_ = true;
    if (++first_connects_ < connections_) return;
    all_connected_at_once_ = !connect_failed_ && open_ == connections_;
    for (auto& slot : slots_) slot->begin();
  }

 private:
  net::io_context io_{1};
  tcp::endpoint endpoint_;
  const std::vector<PlannedRequest>& plan_;
  std::vector<Outcome> outcomes_;
  int connections_;
  net::steady_timer deadline_;
  std::vector<std::shared_ptr<Slot>> slots_;
  size_t next_ = 0;
  size_t done_ = 0;
  int first_connects_ = 0;
  bool connect_failed_ = false;
  int opened_ = 0;
  int open_ = 0;
  int peak_open_ = 0;
  bool all_connected_at_once_ = false;
  bool timed_out_ = false;
  bool stopping_ = false;
  std::minstd_rand random_{
      1};  // backoff pauses: they shape the load, results do not depend on them
};

void Slot::connect() {
  socket_busy_ = true;
  socket_.async_connect(storm_.endpoint(), [self = shared_from_this()](beast::error_code ec) {
    self->socket_busy_ = false;
    if (!ec) {
      self->open_ = true;
      self->storm_.opened();
    }
    self->storm_.first_connect_done(!ec);
  });
}

void Slot::reconnect_for(size_t index) {
  index_ = index;
  ++serial_;
  socket_ = tcp::socket(io_);
  buffer_.consume(buffer_.size());
  socket_busy_ = true;
  socket_.async_connect(storm_.endpoint(), [self = shared_from_this()](beast::error_code ec) {
    self->socket_busy_ = false;
    if (self->hanging_up_) return self->settle();  // the deadline passed meanwhile
    if (ec) {                                      // the request it was for never went out
      Outcome failed;
      failed.error = "connect: " + ec.message();
      self->storm_.record(self->index_, std::move(failed));
      return;
    }
    self->open_ = true;
    self->storm_.opened();
    self->send(self->index_);
  });
}

void Slot::begin() {
  if (!open_) return;
  next_request();
}

void Slot::abort() {
  hanging_up_ = true;
  close_socket();
  timer_.cancel();
}

void Slot::close_socket() {
  beast::error_code ignored;
  if (open_) {
    open_ = false;
    storm_.closed();
  }
  socket_.shutdown(tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
}

void Slot::next_request() {
  const std::optional<size_t> taken = storm_.take();
  if (!taken) {
    close_socket();
    return;
  }
  send(*taken);
}

void Slot::send(size_t index) {
  index_ = index;
  ++serial_;
  parser_.reset();
  events_ = 0;
  planned_ = &storm_.planned(index_);
  request_ = {};
  request_.method(http::verb::post);
  request_.target(planned_->target);
  request_.version(11);
  request_.set(http::field::host, "127.0.0.1");
  request_.set(http::field::content_type, "application/json");
  request_.body() = planned_->body;
  request_.prepare_payload();
  socket_busy_ = true;
  http::async_write(socket_, request_, [self = shared_from_this()](beast::error_code ec, size_t) {
    self->on_written(ec);
  });
}

void Slot::on_written(beast::error_code ec) {
  socket_busy_ = false;
  if (hanging_up_) return settle();
  if (ec) {
    Outcome failed;
    failed.error = "write: " + ec.message();
    return complete(std::move(failed), false);
  }
  if (planned_->hang_up == PlannedRequest::HangUp::kAfterDelay) {
    if (planned_->hang_up_delay.count() == 0) return hang_up();
    ++timers_pending_;
    timer_.expires_after(planned_->hang_up_delay);
    timer_.async_wait([self = shared_from_this(), serial = serial_](beast::error_code ec) {
      self->on_timer(serial, ec);
    });
  }
  parser_.emplace();
  parser_->body_limit(64u << 20);  // Boost 1.74 mis-compares a content length with none
  scanned_ = 0;
  events_ = 0;
  socket_busy_ = true;
  http::async_read_header(
      socket_, buffer_, *parser_,
      [self = shared_from_this()](beast::error_code ec, size_t) { self->on_header(ec); });
}

void Slot::on_header(beast::error_code ec) {
  socket_busy_ = false;
  if (hanging_up_) return settle();
  if (ec) {
    Outcome failed;
    failed.error = "reading the header: " + ec.message();
    return complete(std::move(failed), false);
  }
  read_more();
}

void Slot::read_more() {
  if (parser_->is_done()) {
    Outcome outcome = read_answer(*planned_, parser_->get());
    return complete(std::move(outcome), parser_->get().keep_alive());
  }
  socket_busy_ = true;
  http::async_read_some(
      socket_, buffer_, *parser_,
      [self = shared_from_this()](beast::error_code ec, size_t) { self->on_read(ec); });
}

void Slot::on_read(beast::error_code ec) {
  socket_busy_ = false;
  if (hanging_up_) return settle();
  if (ec) {
    Outcome failed;
    failed.error = "reading the body: " + ec.message();
    failed.status = static_cast<int>(parser_->get().result_int());
    return complete(std::move(failed), false);
  }
  const std::string& body = parser_->get().body();
  for (size_t at; (at = body.find("\n\n", scanned_)) != std::string::npos; scanned_ = at + 2) {
    ++events_;
  }
  if (planned_->hang_up == PlannedRequest::HangUp::kAfterEvents &&
      events_ >= planned_->hang_up_events && !parser_->is_done()) {
    return hang_up();
  }
  read_more();
}

void Slot::on_timer(uint64_t serial, beast::error_code ec) {
  --timers_pending_;
  if (hanging_up_) return settle();
  if (ec || serial != serial_) return;  // cancelled, or the request was answered in time
  hang_up();
}

void Slot::complete(Outcome outcome, bool keep_alive) {
  const bool overloaded = outcome.kind == Outcome::Kind::kOverloaded;
  outcome.events = std::max(outcome.events, events_);
  storm_.record(index_, std::move(outcome));
  ++serial_;  // a timer still pending for this request is now stale
  timer_.cancel();
  if (storm_.stopping()) return close_socket();
  if (keep_alive && overloaded) {
    // Retry-After says a second; a short random pause keeps the test fast while still
    // letting the queue drain, so that the storm is not nearly all 503s.
    ++timers_pending_;
    timer_.expires_after(storm_.backoff());
    timer_.async_wait([self = shared_from_this()](beast::error_code) {
      --self->timers_pending_;
      if (self->hanging_up_) return self->settle();
      self->next_request();
    });
    return;
  }
  if (keep_alive) return next_request();
  hanging_up_ = true;  // the server closes: reconnect for the next one
  close_socket();
  settle();
}

// The planned hang-up: close the socket with the answer unread, then reconnect.
void Slot::hang_up() {
  Outcome hung;
  hung.kind = Outcome::Kind::kHungUp;
  hung.events = events_;
  if (parser_ && parser_->is_header_done())
    hung.status = static_cast<int>(parser_->get().result_int());
  storm_.record(index_, std::move(hung));
  ++serial_;
  hanging_up_ = true;
  if (planned_->reset) {
    beast::error_code ignored;
    socket_.set_option(net::socket_base::linger(true, 0), ignored);
    if (open_) {
      open_ = false;
      storm_.closed();
    }
    socket_.close(ignored);  // no shutdown first: the close sends RST
  } else {
    close_socket();
  }
  timer_.cancel();
  settle();
}

// After a close: reconnect once the cancelled operations have all come back.
void Slot::settle() {
  if (socket_busy_ || timers_pending_ > 0) return;
  hanging_up_ = false;
  if (storm_.stopping()) return;
  const std::optional<size_t> taken = storm_.take();
  if (!taken) return;
  reconnect_for(*taken);
}

}  // namespace

std::vector<Outcome> run_storm(uint16_t port, const std::vector<PlannedRequest>& plan,
                               int connections, std::chrono::seconds deadline, StormStats* stats) {
  Storm storm(port, plan, connections);
  return storm.run(deadline, stats);
}

}  // namespace tandem::testing
