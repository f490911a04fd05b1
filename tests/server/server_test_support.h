// What the server's end-to-end tests share: a real `tandem serve` child process on a
// make-model file, a small synchronous Beast HTTP/1.1 client (keep-alive, streamed
// reads), and readers for SSE bodies and /metrics. Not thread-safe per object; use one
// HttpClient per thread.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <nlohmann/json.hpp>

#include "tests/common/test_support.h"

namespace tandem::testing {

// Model files made once per test process with `tandem make-model` (seed 0).
const std::filesystem::path& tiny_model();  // context 512: fast
const std::filesystem::path& demo_model();  // context 2048: long generations

// The server most tests share: tiny model, KV for 64 Ki tokens, defaults otherwise.
class ServerProcess;
ServerProcess& shared_server();

// `tandem serve --model MODEL --port 0 ARGS...`, started and ready (its "listening" line
// read) when the constructor returns. The destructor kills it if still running.
class ServerProcess {
 public:
  ServerProcess(const std::filesystem::path& model, std::vector<std::string> args = {});
  ~ServerProcess();
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  uint16_t port() const { return port_; }
  pid_t pid() const { return pid_; }
  const std::string& ready_line() const { return ready_line_; }
  // Sends `signal` and waits (bounded) for the exit; returns the exit status, or
  // 128 + signal number when killed by one, or -1 when it did not exit in time.
  int signal_and_wait(int signal);
  std::string stderr_text() const;

 private:
  ScratchDir dir_;
  pid_t pid_ = -1;
  uint16_t port_ = 0;
  std::string ready_line_;
};

struct HttpResult {
  int status = 0;
  std::map<std::string, std::string> headers;  // names lowercased
  std::string body;
  bool keep_alive = false;
  nlohmann::json json() const { return nlohmann::json::parse(body); }
};

using HeaderList = std::vector<std::pair<std::string, std::string>>;

// One connection to 127.0.0.1:port; requests on it reuse it (keep-alive).
class HttpClient {
 public:
  // receive_buffer > 0: SO_RCVBUF in bytes, set before connecting so that the window the
  // server sees stays that small (a slow client's link).
  explicit HttpClient(uint16_t port, int receive_buffer = 0);
  HttpResult send(const std::string& method, const std::string& target,
                  const std::string& body = "", const HeaderList& headers = {});
  // Sends a request and reads the response as it arrives: after each read, on_progress
  // gets the body so far and returns false to stop reading (the response stays unfinished).
  HttpResult stream(const std::string& target, const std::string& body,
                    const std::function<bool(const std::string&)>& on_progress);
  void write_raw(std::string_view bytes);
  // Reads raw bytes until `marker` has arrived; returns them all (the buffer is emptied).
  std::string read_until(std::string_view marker);
  // Bytes that have arrived and are not read yet (without waiting for any).
  size_t pending_bytes();
  // Reads until the server closes the connection; returns what arrived.
  std::string read_until_closed();
  void close();

 private:
  boost::asio::io_context io_;
  boost::asio::ip::tcp::socket socket_;
  boost::beast::flat_buffer buffer_;
};

// One request on a fresh connection.
HttpResult fetch(uint16_t port, const std::string& method, const std::string& target,
                 const std::string& body = "", const HeaderList& headers = {});

// POSTs `body` as JSON and expects a 200 (a failed EXPECT otherwise); the parsed body, or
// an empty object when the status was not 200. Without a port: the shared server's.
nlohmann::json post_json(uint16_t port, const std::string& route, const nlohmann::json& body);
nlohmann::json post_json(const std::string& route, const nlohmann::json& body);

// The data fields of an SSE body's events, in order (events split on blank lines).
std::vector<std::string> sse_data(std::string_view body);

// The value of an unlabelled metric, or of `name{labels}` exactly as written; nullopt if absent.
std::optional<double> metric_value(std::string_view metrics, std::string_view series);

}  // namespace tandem::testing
