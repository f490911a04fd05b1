#include "tests/server/server_test_support.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <gtest/gtest.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http.hpp>

namespace tandem::testing {
namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = net::ip::tcp;

namespace {

std::filesystem::path make_model(const std::string& shape) {
  static ScratchDir dir;  // lives until the process exits
  const auto path = dir.file(shape + ".gguf");
  const CommandResult made = run_tandem({"make-model", "--shape", shape, "--out", path.string()});
  if (made.exit_code != 0) throw std::runtime_error("make-model failed: " + made.err);
  return path;
}

HttpResult result_of(const http::response<http::string_body>& response) {
  HttpResult result;
  result.status = static_cast<int>(response.result_int());
  for (const auto& field : response) {
    std::string name(field.name_string());
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    result.headers[name] = std::string(field.value());
  }
  result.body = response.body();
  result.keep_alive = response.keep_alive();
  return result;
}

}  // namespace

const std::filesystem::path& tiny_model() {
  static const std::filesystem::path path = make_model("tiny");
  return path;
}

const std::filesystem::path& demo_model() {
  static const std::filesystem::path path = make_model("demo");
  return path;
}

ServerProcess& shared_server() {
  static ServerProcess server(tiny_model(), {"--kv-tokens", "65536"});
  return server;
}

ServerProcess::ServerProcess(const std::filesystem::path& model, std::vector<std::string> args) {
  std::vector<std::string> argv_storage = {tandem_binary(), "serve",  "--model",
                                           model.string(),  "--port", "0"};
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  const std::string err_path = dir_.file("stderr").string();

  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) throw std::runtime_error("pipe failed");
  pid_ = ::fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // a test process that crashes takes its server along
    const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int in = ::open("/dev/null", O_RDONLY);
    if (err < 0 || in < 0) ::_exit(127);
    ::dup2(in, 0);
    ::dup2(pipe_fds[1], 1);
    ::dup2(err, 2);
    ::close(pipe_fds[0]);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(pipe_fds[1]);
  // Read the first line, waiting at most 120 s (sanitizer builds start slowly).
  std::string line;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (line.find('\n') == std::string::npos) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd pfd{pipe_fds[0], POLLIN, 0};
    if (left.count() <= 0 || ::poll(&pfd, 1, static_cast<int>(left.count())) <= 0) break;
    char buffer[256];
    const ssize_t n = ::read(pipe_fds[0], buffer, sizeof buffer);
    if (n <= 0) break;
    line.append(buffer, static_cast<size_t>(n));
  }
  ::close(pipe_fds[0]);  // later writes to stdout would fail with EPIPE; serve writes one line
  ready_line_ = line.substr(0, line.find('\n'));
  const auto at = ready_line_.find("http://127.0.0.1:");
  if (at == std::string::npos) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
    throw std::runtime_error("tandem serve did not start: '" + ready_line_ + "' " + stderr_text());
  }
  port_ = static_cast<uint16_t>(std::stoi(ready_line_.substr(at + 17)));
}

ServerProcess::~ServerProcess() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

int ServerProcess::signal_and_wait(int signal) {
  if (pid_ <= 0) return -1;
  ::kill(pid_, signal);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  int status = 0;
  while (true) {
    const pid_t done = ::waitpid(pid_, &status, WNOHANG);
    if (done == pid_) break;
    if (std::chrono::steady_clock::now() > deadline) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // polling the exit, bounded
  }
  pid_ = -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string ServerProcess::stderr_text() const {
  std::ifstream in(dir_.file("stderr"));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

HttpClient::HttpClient(uint16_t port, int receive_buffer) : socket_(io_) {
  const tcp::endpoint server(net::ip::make_address("127.0.0.1"), port);
  if (receive_buffer > 0) {
    socket_.open(server.protocol());
    socket_.set_option(net::socket_base::receive_buffer_size(receive_buffer));
  }
  socket_.connect(server);
}

HttpResult HttpClient::send(const std::string& method, const std::string& target,
                            const std::string& body, const HeaderList& headers) {
  http::request<http::string_body> request(http::string_to_verb(method), target, 11);
  request.set(http::field::host, "127.0.0.1");
  if (!body.empty() || method == "POST") request.set(http::field::content_type, "application/json");
  for (const auto& [name, value] : headers) request.set(name, value);
  request.body() = body;
  request.prepare_payload();
  http::write(socket_, request);
  http::response_parser<http::string_body> parser;
  parser.body_limit(boost::none);
  http::read(socket_, buffer_, parser);
  return result_of(parser.get());
}

HttpResult HttpClient::stream(const std::string& target, const std::string& body,
                              const std::function<bool(const std::string&)>& on_progress) {
  http::request<http::string_body> request(http::verb::post, target, 11);
  request.set(http::field::host, "127.0.0.1");
  request.set(http::field::content_type, "application/json");
  request.body() = body;
  request.prepare_payload();
  http::write(socket_, request);
  http::response_parser<http::string_body> parser;
  parser.body_limit(boost::none);
  http::read_header(socket_, buffer_, parser);
  while (!parser.is_done()) {
    http::read_some(socket_, buffer_, parser);
    if (!on_progress(parser.get().body())) break;
  }
  return result_of(parser.get());
}

size_t HttpClient::pending_bytes() { return buffer_.size() + socket_.available(); }

void HttpClient::write_raw(std::string_view bytes) {
  net::write(socket_, net::buffer(bytes.data(), bytes.size()));
}

std::string HttpClient::read_until(std::string_view marker) {
  std::string out(static_cast<const char*>(buffer_.data().data()), buffer_.size());
  buffer_.consume(buffer_.size());
  while (out.find(marker) == std::string::npos) {
    char chunk[4096];
    const size_t n = socket_.read_some(net::buffer(chunk));
    out.append(chunk, n);
  }
  const size_t end = out.find(marker) + marker.size();
  if (end < out.size()) {  // keep what came after for later reads
    auto rest = buffer_.prepare(out.size() - end);
    std::memcpy(rest.data(), out.data() + end, out.size() - end);
    buffer_.commit(out.size() - end);
  }
  out.resize(end);
  return out;
}

std::string HttpClient::read_until_closed() {
  std::string out(static_cast<const char*>(buffer_.data().data()), buffer_.size());
  buffer_.consume(buffer_.size());
  char chunk[4096];
  boost::system::error_code ec;
  while (true) {
    const size_t n = socket_.read_some(net::buffer(chunk), ec);
    if (ec) break;
    out.append(chunk, n);
  }
  if (ec != net::error::eof && ec != net::error::connection_reset) {
    throw std::runtime_error("connection not closed: " + ec.message());
  }
  return out;
}

void HttpClient::close() {
  boost::system::error_code ec;
  socket_.close(ec);
}

HttpResult fetch(uint16_t port, const std::string& method, const std::string& target,
                 const std::string& body, const HeaderList& headers) {
  HttpClient client(port);
  return client.send(method, target, body, headers);
}

nlohmann::json post_json(uint16_t port, const std::string& route, const nlohmann::json& body) {
  const HttpResult r = fetch(port, "POST", route, body.dump());
  EXPECT_EQ(r.status, 200) << r.body;
  return r.status == 200 ? r.json() : nlohmann::json::object();
}

nlohmann::json post_json(const std::string& route, const nlohmann::json& body) {
  return post_json(shared_server().port(), route, body);
}

std::vector<std::string> sse_data(std::string_view body) {
  std::vector<std::string> events;
  size_t start = 0;
  while (start < body.size()) {
    size_t end = body.find("\n\n", start);
    if (end == std::string_view::npos) end = body.size();
    std::string_view event = body.substr(start, end - start);
    std::string data;
    while (!event.empty()) {
      const size_t eol = event.find('\n');
      std::string_view line = event.substr(0, eol);
      if (line.substr(0, 5) == "data:") {
        line.remove_prefix(5);
        if (!line.empty() && line.front() == ' ') line.remove_prefix(1);
        if (!data.empty()) data += '\n';
        data += line;
      }
      if (eol == std::string_view::npos) break;
      event.remove_prefix(eol + 1);
    }
    events.push_back(std::move(data));
    start = end + 2;
  }
  return events;
}

std::optional<double> metric_value(std::string_view metrics, std::string_view series) {
  size_t start = 0;
  while (start < metrics.size()) {
    size_t end = metrics.find('\n', start);
    if (end == std::string_view::npos) end = metrics.size();
    std::string_view line = metrics.substr(start, end - start);
    if (line.size() > series.size() && line.substr(0, series.size()) == series &&
        line[series.size()] == ' ') {
      return std::stod(std::string(line.substr(series.size() + 1)));
    }
    start = end + 1;
  }
  return std::nullopt;
}

}  // namespace tandem::testing
