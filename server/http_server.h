// The HTTP server: binds the listener, accepts connections onto strands (one Session
// each) and runs a few Asio I/O threads. run() serves until SIGINT/SIGTERM or
// request_stop(), then drains: no new connections or requests, running generations get
// up to the shutdown grace to finish, the rest are cut by stopping the scheduler.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "scheduler/scheduler.h"
#include "server/endpoints.h"
#include "server/server_metrics.h"
#include "server/session.h"

namespace tandem::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 8080;                     // 0: the system picks a free port
  std::string api_key;                      // empty: no authentication
  uint64_t max_body = 1 << 20;              // bytes
  uint64_t body_total_mib = 256;            // SessionLimits::max_body_total, in MiB
  double shutdown_grace_seconds = 10;       // running requests' time to finish on shutdown
  double idle_timeout_seconds = 60;         // a keep-alive connection's wait for a request
  double read_timeout_seconds = 30;         // a request's arrival, once begun
  double write_timeout_seconds = 30;        // each write to a client
  uint64_t stream_backlog_mib = 64;         // SessionLimits::max_stream_backlog, in MiB
  uint64_t stream_backlog_total_mib = 512;  // SessionLimits::max_stream_backlog_total, in MiB
  int io_threads = 0;                       // 0: 1, or 2 on machines with 8 cores or more
  std::string access_log;                   // "": none; "-": standard error; else a file (appended)
  // CORS: "*" (any origin, vLLM's and llama-server's default), origins separated by commas
  // (each answered with its own Origin back), or "" (no CORS headers: browsers refuse).
  std::string allowed_origins = "*";
  // Whether SIGINT and SIGTERM drain the server (and SIGHUP reopens the access log), as
  // `tandem serve` wants. Off for a server inside another command (`bench --model`), whose
  // Ctrl-C must end that command, not only its server, and whose signals stay as they were.
  bool handle_signals = true;
};

class HttpServer {
 public:
  // The scheduler must be started and, like the tokenizer, outlive the server. Throws
  // std::runtime_error when the access log cannot be opened.
  HttpServer(Scheduler& scheduler, const Tokenizer& tokenizer, ModelCard model,
             ServerOptions options);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and listens; returns the port. Throws std::runtime_error naming the address and
  // the reason (in use, not local, unknown host).
  uint16_t listen();
  // Serves until a signal or request_stop(), then drains and stops the scheduler. From its
  // return SIGINT and SIGTERM are ignored where it handles signals: the process is exiting,
  // and a late signal must not turn exit 0 into death by signal.
  void run();
  // Thread-safe; also what SIGINT and SIGTERM do. The first call drains (running requests
  // get the shutdown grace); a second cuts them now, as llama-server and uvicorn treat a
  // second Ctrl-C, so that an operator is never held for a grace of up to an hour. Returns
  // whether this call was such a second one.
  bool request_stop();

 private:
  struct Io;
  void accept();
  void wait_for_signal();      // each SIGINT/SIGTERM calls request_stop()
  void ignore_late_signals();  // after the drain: the process is exiting
  void wait_for_hangup();      // each SIGHUP reopens the access log

  Scheduler& scheduler_;
  ServerOptions options_;
  ServerMetrics metrics_;
  std::unique_ptr<AccessLog> access_log_;
  Endpoints endpoints_;
  // Declared before io_: sessions, destroyed with the io_context, still use them.
  ActiveGenerations active_;
  std::atomic<bool> draining_{false};
  SessionContext context_;
  std::unique_ptr<Io> io_;

  std::mutex stop_mutex_;
  std::condition_variable stop_cv_;
  int stop_requests_ = 0;
};

}  // namespace tandem::server
