#include "server/http_server.h"

#include <csignal>
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>

namespace tandem::server {
namespace {

std::chrono::milliseconds millis(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000.0));
}

SessionLimits limits_of(const ServerOptions& options) {
  SessionLimits limits;
  limits.max_body = options.max_body;
  limits.max_body_total = options.body_total_mib << 20;
  limits.idle_timeout = millis(options.idle_timeout_seconds);
  limits.read_timeout = millis(options.read_timeout_seconds);
  limits.write_timeout = millis(options.write_timeout_seconds);
  limits.max_stream_backlog = options.stream_backlog_mib << 20;
  limits.max_stream_backlog_total = options.stream_backlog_total_mib << 20;
  limits.allowed_origins = options.allowed_origins;
  return limits;
}

}  // namespace

struct HttpServer::Io {
  // First member: destroyed last, after the objects that use it.
  net::io_context ioc{1};
  net::executor_work_guard<net::io_context::executor_type> work{ioc.get_executor()};
  tcp::acceptor acceptor{net::make_strand(ioc)};
  net::steady_timer accept_retry{acceptor.get_executor()};
  // With ServerOptions::handle_signals only: a signal_set installs its handlers at once.
  std::optional<net::signal_set> signals;  // SIGINT, SIGTERM: drain
  std::optional<net::signal_set> hangups;  // SIGHUP: reopen the access log (log rotation)
  std::vector<std::thread> threads;
  // SessionContext::prepare and ::compile: requests are prepared on `prepare`, and those
  // that need a grammar compiled first (a new schema, regex or tool list) move to
  // `compile`, so slow compiles never hold the threads that prepare everything else. Two
  // compile threads, as the CPUs this runs on have few cores to give them. They wait on
  // nothing else and cost nothing idle. Destroyed (joined) before the io_context, whose
  // sockets their pending tasks' sessions hold.
  net::thread_pool compile{2};
  net::thread_pool prepare{4};
};

HttpServer::HttpServer(Scheduler& scheduler, const Tokenizer& tokenizer, ModelCard model,
                       ServerOptions options)
    : scheduler_(scheduler),
      options_(std::move(options)),
      endpoints_(scheduler, tokenizer, std::move(model), options_.api_key, metrics_),
      context_{endpoints_, limits_of(options_), active_, draining_},
      io_(std::make_unique<Io>()) {
  context_.prepare = &io_->prepare;
  context_.compile = &io_->compile;
  if (options_.handle_signals) {
    io_->signals.emplace(io_->ioc, SIGINT, SIGTERM);
    io_->hangups.emplace(io_->ioc, SIGHUP);
  }
  if (!options_.access_log.empty()) {
    access_log_ = std::make_unique<AccessLog>(options_.access_log);
    endpoints_.set_access_log(access_log_.get());
  }
}

HttpServer::~HttpServer() {
  if (io_) {
    io_->work.reset();
    io_->ioc.stop();
    for (auto& thread : io_->threads) thread.join();
  }
}

uint16_t HttpServer::listen() {
  try {
    tcp::resolver resolver(io_->ioc);
    const auto results = resolver.resolve(options_.host, std::to_string(options_.port),
                                          tcp::resolver::passive | tcp::resolver::numeric_service);
    const tcp::endpoint endpoint = results.begin()->endpoint();
    tcp::acceptor& acceptor = io_->acceptor;
    acceptor.open(endpoint.protocol());
    acceptor.set_option(net::socket_base::reuse_address(true));
    acceptor.bind(endpoint);
    acceptor.listen(net::socket_base::max_listen_connections);
    return acceptor.local_endpoint().port();
  } catch (const boost::system::system_error& e) {
    throw std::runtime_error("cannot listen on " + options_.host + ":" +
                             std::to_string(options_.port) + ": " + e.code().message());
  }
}

void HttpServer::accept() {
  io_->acceptor.async_accept(
      net::make_strand(io_->ioc), [this](beast::error_code ec, tcp::socket socket) {
        if (!io_->acceptor.is_open() || draining_.load()) return;
        if (ec) {
          // Out of descriptors, say: try again shortly rather than spin.
          io_->accept_retry.expires_after(std::chrono::milliseconds(50));
          io_->accept_retry.async_wait([this](beast::error_code) { accept(); });
          return;
        }
        beast::error_code ignored;
        socket.set_option(tcp::no_delay(true), ignored);  // SSE chunks are small
        std::make_shared<Session>(std::move(socket), context_)->start();
        accept();
      });
}

bool HttpServer::request_stop() {
  bool again;
  {
    std::lock_guard lock(stop_mutex_);
    again = ++stop_requests_ > 1;
  }
  stop_cv_.notify_all();
  if (again) active_.cut_short();
  return again;
}

void HttpServer::wait_for_signal() {
  if (!io_->signals) return;
  io_->signals->async_wait([this](beast::error_code ec, int) {
    if (ec) return;
    if (request_stop())
      std::fprintf(stderr, "tandem serve: a second signal: cutting running requests\n");
    wait_for_signal();
  });
}

// SIGHUP reopens the access log, as nginx's USR1 and Apache's HUP reopen theirs: after
// logrotate renames the file (and creates a new one), new records go to the new file. It no
// longer ends the process, which its default action did, cutting every request.
void HttpServer::wait_for_hangup() {
  if (!io_->hangups) return;
  io_->hangups->async_wait([this](beast::error_code ec, int) {
    if (ec) return;
    if (access_log_) {
      const std::string failed = access_log_->reopen();
      if (failed.empty()) {
        std::fprintf(stderr, "tandem serve: SIGHUP: access log reopened\n");
      } else {
        std::fprintf(stderr,
                     "tandem serve: SIGHUP: cannot reopen the access log %s (kept the "
                     "old file)\n",
                     failed.c_str());
      }
    }
    wait_for_hangup();
  });
}

void HttpServer::run() {
  wait_for_signal();
  wait_for_hangup();
  endpoints_.set_serving(true);
  net::post(io_->acceptor.get_executor(), [this] { accept(); });
  int threads = options_.io_threads;
  if (threads <= 0) threads = std::thread::hardware_concurrency() >= 8 ? 2 : 1;
  for (int i = 0; i < threads; ++i) {
    io_->threads.emplace_back([this] {
      for (;;) {
        try {
          io_->ioc.run();
          return;
        } catch (const std::exception& e) {
          std::fprintf(stderr, "tandem serve: an I/O handler failed: %s\n", e.what());
        }
      }
    });
  }
  {
    std::unique_lock lock(stop_mutex_);
    stop_cv_.wait(lock, [&] { return stop_requests_ > 0; });
  }

  // Drain: refuse new work, give running generations the grace period, then cut them.
  endpoints_.set_serving(false);
  draining_.store(true);
  net::post(io_->acceptor.get_executor(), [this] {
    beast::error_code ignored;
    io_->acceptor.close(ignored);
    io_->accept_retry.cancel();
  });
  const auto grace = millis(options_.shutdown_grace_seconds);
  if (!active_.wait_for_zero(Clock::now() + grace, /*interruptible=*/true)) {
    scheduler_.stop();  // what still runs gets on_error: its clients hear a 503
    active_.wait_for_zero(Clock::now() + std::chrono::seconds(2));
  }
  scheduler_.stop();
  // What is being prepared is answered (refused: the server stops); prepare first, as its
  // tasks may hand requests on to compile.
  io_->prepare.join();
  io_->compile.join();
  io_->work.reset();
  io_->ioc.stop();
  for (auto& thread : io_->threads) thread.join();
  io_->threads.clear();
  ignore_late_signals();
}

// The process is on its way out (the caller's teardown, then exit 0). Boost gives a
// signal back its default action when its last signal_set lets go of it, so a second
// SIGTERM during that teardown killed the process (exit 143, and under ASan no leak
// check). The set lets go now, and the signals are ignored from the next instruction.
void HttpServer::ignore_late_signals() {
  if (!io_->signals) return;  // not this server's to handle
  beast::error_code ignored;
  io_->signals->clear(ignored);
  io_->hangups->clear(ignored);
  std::signal(SIGINT, SIG_IGN);
  std::signal(SIGTERM, SIG_IGN);
  std::signal(SIGHUP, SIG_IGN);
}

}  // namespace tandem::server
