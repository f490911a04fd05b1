// The HTTP client against a real `tandem serve --port 0` child process on the tiny model:
// streamed and whole responses complete, usage counts the exact prompt lengths, and the
// --url run generates what the in-process --model run generates for the same workload.
#include "bench/http_load.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <thread>

#include <nlohmann/json.hpp>

#include "tests/common/test_models.h"
#include "tests/common/test_support.h"

namespace tandem::testing::TANDEM_UNITY_ID {
namespace {

// `tandem serve` as a child process; the port is read from its "listening on" line.
class ServeChild {
 public:
  explicit ServeChild(const std::vector<std::string>& args) {
    int out[2];
    if (::pipe(out) != 0) throw std::runtime_error("pipe failed");
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(out[1], STDOUT_FILENO);
      ::close(out[0]);
      ::close(out[1]);
      std::vector<std::string> all = {tandem_binary(), "serve"};
      all.insert(all.end(), args.begin(), args.end());
      std::vector<char*> argv;
      for (std::string& a : all) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ::close(out[1]);
    stdout_ = ::fdopen(out[0], "r");
    char line[1024];
    while (std::fgets(line, sizeof line, stdout_)) {
      const std::string text = line;
      const size_t at = text.find("listening on http://");
      if (at == std::string::npos) continue;
      const size_t colon = text.find(':', at + 20);
      port_ = std::stoi(text.substr(colon + 1));
      break;
    }
  }
  ~ServeChild() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      int status = 0;
      ::waitpid(pid_, &status, 0);
    }
    if (stdout_) std::fclose(stdout_);
  }
  int port() const { return port_; }

 private:
  pid_t pid_ = -1;
  FILE* stdout_ = nullptr;
  int port_ = 0;
};

class HttpLoad : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = write_tiny_llama(dir_.path(), gguf::TensorType::kF16, /*seed=*/0).string();
  }
  ScratchDir dir_;
  std::string model_;
};

TEST(ServerUrl, ParsesHostPortAndPrefixAndDropsATrailingV1) {
  const bench::ServerUrl a = bench::parse_server_url("http://127.0.0.1:8080");
  EXPECT_EQ(a.host, "127.0.0.1");
  EXPECT_EQ(a.port, "8080");
  EXPECT_EQ(a.prefix, "");
  const bench::ServerUrl b = bench::parse_server_url("http://example.org/api/v1/");
  EXPECT_EQ(b.host, "example.org");
  EXPECT_EQ(b.port, "80");
  EXPECT_EQ(b.prefix, "/api");
  EXPECT_THROW(bench::parse_server_url("https://x"), std::invalid_argument);
  EXPECT_THROW(bench::parse_server_url("http://x:port"), std::invalid_argument);
  // Ports past 16 bits were taken modulo 65536 (83777 benchmarked port 18241).
  for (const char* bad : {"http://x:83777", "http://x:0", "http://x:65536", "http://x:0000080"}) {
    EXPECT_THROW(bench::parse_server_url(bad), std::invalid_argument) << bad;
  }
  EXPECT_EQ(bench::parse_server_url("http://[::1]:65535").port, "65535");
  try {
    bench::parse_server_url("http://user:secret@x:80");
    ADD_FAILURE() << "credentials in the URL were accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()).find("secret"), std::string::npos) << e.what();
  }
}

// A server that takes the connection and never answers is a bad --url after the set-up
// timeout, not a run that waits forever (the kernel completes the connection from the
// listen backlog; nothing ever accepts it).
TEST(ServerUrl, AServerThatNeverAnswersIsABadUrlAfterTheSetupTimeout) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(fd, 4), 0);
  socklen_t len = sizeof addr;
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  bench::ServerUrl url;
  url.host = "127.0.0.1";
  url.port = std::to_string(ntohs(addr.sin_port));
  url.setup_timeout = std::chrono::seconds(1);
  try {
    bench::discover_server(url);
    ADD_FAILURE() << "a silent server was taken for one";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("no answer within 1 s"), std::string::npos) << e.what();
  }
  ::close(fd);
}

TEST_F(HttpLoad, StreamedAndWholeRequestsAgainstTandemServeComplete) {
  ServeChild serve({"--model", model_, "--port", "0", "--threads", "1"});
  ASSERT_GT(serve.port(), 0);
  bench::ServerUrl url;
  url.host = "127.0.0.1";
  url.port = std::to_string(serve.port());
  const bench::ServerInfo info = bench::discover_server(url);
  EXPECT_EQ(info.model, std::filesystem::path(model_).stem().string());  // the served id
  ASSERT_FALSE(info.token_pool.empty());
  EXPECT_NE(info.pool_source.find("/tokenize"), std::string::npos);

  bench::WorkloadSpec spec;
  spec.requests = 6;
  spec.prompt_tokens_min = spec.prompt_tokens_max = 9;
  spec.max_tokens = 12;
  const auto workload = bench::plan_workload(spec, info.token_pool);
  std::vector<std::string> whole_texts;
  for (bool stream : {false, true}) {
    bench::LoadOptions options;
    options.concurrency = 2;  // each slot reuses its keep-alive connection
    options.stream = stream;
    const bench::LoadResult result = bench::run_http(url, info.model, workload, options);
    const bench::RunSummary s = bench::summarize(result.records, result.duration_seconds);
    EXPECT_EQ(s.failed, 0) << s.first_error;
    EXPECT_EQ(s.completed, 6);
    EXPECT_EQ(s.prompt_tokens, 6 * 9);
    EXPECT_EQ(s.output_tokens, 6 * 12);
    EXPECT_EQ(s.ttft_ms.count, stream ? 6 : 0);
    for (size_t i = 0; i < result.records.size(); ++i) {
      const bench::RequestRecord& r = result.records[i];
      EXPECT_EQ(r.finish_reason, "length");
      if (stream) {
        EXPECT_EQ(r.text, whole_texts[i]) << "request " << i;  // streamed == whole
      } else {
        whole_texts.push_back(r.text);
      }
    }
  }
}

// A server that answers one request with the given bytes and closes the connection.
class OneReplyServer {
 public:
  explicit OneReplyServer(std::string reply) {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (listener_ < 0 ||
        ::bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
        ::listen(listener_, 4) != 0) {
      if (listener_ >= 0) ::close(listener_);
      throw std::runtime_error("cannot listen on loopback");
    }
    socklen_t length = sizeof address;
    ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
    thread_ = std::thread([this, reply = std::move(reply)] {
      const int client = ::accept(listener_, nullptr, nullptr);
      if (client < 0) return;
      char buffer[4096];
      std::string request;
      while (request.find("\r\n\r\n") == std::string::npos) {  // the body is small: read on
        const ssize_t n = ::read(client, buffer, sizeof buffer);
        if (n <= 0) break;
        request.append(buffer, static_cast<size_t>(n));
      }
      (void)!::write(client, reply.data(), reply.size());
      ::close(client);
    });
  }
  ~OneReplyServer() {
    // A test that ended before run_one leaves accept() waiting: shutting the listener wakes it.
    if (thread_.joinable()) {
      ::shutdown(listener_, SHUT_RDWR);
      thread_.join();
    }
    ::close(listener_);
  }
  // One request of 8 tokens at most, streamed, against this server.
  bench::LoadResult run_one() {
    bench::ServerUrl url;
    url.host = "127.0.0.1";
    url.port = std::to_string(port_);
    bench::WorkloadSpec spec;
    spec.requests = 1;
    spec.max_tokens = 8;
    bench::LoadOptions options;
    options.stream = true;
    bench::LoadResult result =
        bench::run_http(url, "m", bench::plan_workload(spec, {5, 6, 7}), options);
    thread_.join();
    return result;
  }

 private:
  int listener_ = -1;
  int port_ = 0;
  std::thread thread_;
};

// A chunked event stream of `events`, ended by the last chunk unless `cut`.
std::string event_stream(const std::string& events, bool cut) {
  char size[16];
  std::snprintf(size, sizeof size, "%zx\r\n", events.size());
  return "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: "
         "chunked\r\n\r\n" +
         std::string(size) + events + "\r\n" + (cut ? "" : "0\r\n\r\n");
}

// A server that starts a stream, sends two text chunks and dies: the record is a failure
// that still holds what came (its first-token time, its gap, its chunks as tokens), as one
// ended by an error event does, where it had reported 0 tokens and no first-token time.
TEST(HttpLoadCut, AStreamCutShortKeepsWhatItReceived) {
  OneReplyServer server(
      event_stream("data: {\"choices\":[{\"index\":0,\"text\":\"a\",\"finish_reason\":null}]}\n\n"
                   "data: {\"choices\":[{\"index\":0,\"text\":\"b\",\"finish_reason\":null}]}\n\n",
                   /*cut=*/true));
  const bench::LoadResult result = server.run_one();
  ASSERT_EQ(result.records.size(), 1u);
  const bench::RequestRecord& r = result.records[0];
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("read: "), std::string::npos) << r.error;
  EXPECT_TRUE(r.streamed);
  EXPECT_EQ(r.output_tokens, 2);
  EXPECT_EQ(r.text, "ab");
  EXPECT_GT(r.ttft, 0.0);
  EXPECT_EQ(r.itl.size(), 1u);
}

// A field that is null or of another type counts as unsaid, as vLLM's client reads `text or
// ""`: one odd chunk had ended the whole run with a JSON type error and no figures. Usage's
// cached tokens are read for the report.
TEST(HttpLoadCut, NullFieldsAreUnsaidAndCachedTokensAreRead) {
  OneReplyServer server(
      event_stream("data: {\"choices\":[{\"index\":0,\"text\":null}]}\n\n"
                   "data: {\"choices\":null,\"error\":null}\n\n"
                   "data: {\"choices\":[{\"index\":0,\"text\":\"b\",\"finish_reason\":\"length\"}],"
                   "\"usage\":{\"prompt_tokens\":null,\"completion_tokens\":3,"
                   "\"prompt_tokens_details\":{\"cached_tokens\":16}}}\n\n"
                   "data: [DONE]\n\n",
                   /*cut=*/false));
  const bench::LoadResult result = server.run_one();
  ASSERT_EQ(result.records.size(), 1u);
  const bench::RequestRecord& r = result.records[0];
  EXPECT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.text, "b");
  EXPECT_EQ(r.finish_reason, "length");
  EXPECT_EQ(r.output_tokens, 3);
  EXPECT_EQ(r.cached_tokens, 16);
  EXPECT_TRUE(r.itl.empty());  // the null chunk was not a token
}

// A URL past the server's base (an endpoint's own path) has no /v1/models under it: a bad
// --url, where the run went on naming model "?" and failed every request.
TEST_F(HttpLoad, AUrlPastTheServersBaseIsRefusedBeforeAnyWork) {
  ServeChild serve({"--model", model_, "--port", "0", "--threads", "1"});
  ASSERT_GT(serve.port(), 0);
  const std::string base = "http://127.0.0.1:" + std::to_string(serve.port());
  const CommandResult r =
      run_tandem({"bench", "--url", base + "/v1/completions", "--requests", "1"});
  EXPECT_EQ(r.exit_code, 2) << r.err << r.out;
  EXPECT_NE(r.err.find("no /v1/models under " + base + "/v1/completions"), std::string::npos)
      << r.err;
  EXPECT_EQ(bench::discover_server(bench::parse_server_url(base + "/v1/")).model,
            std::filesystem::path(model_).stem().string());
}

TEST_F(HttpLoad, ApiKeyGoesAsABearerTokenAndItsAbsenceFailsTheRequests) {
  ServeChild serve({"--model", model_, "--port", "0", "--threads", "1", "--api-key", "sesame"});
  ASSERT_GT(serve.port(), 0);
  bench::ServerUrl url;
  url.host = "127.0.0.1";
  url.port = std::to_string(serve.port());
  bench::WorkloadSpec spec;
  spec.requests = 2;
  spec.max_tokens = 4;
  const auto workload = bench::plan_workload(spec, {5, 6, 7});
  // bench asks the server what it serves first: a missing or wrong key ends it there, a
  // bad --api-key (exit 2) before any figure.
  try {
    bench::discover_server(url);
    ADD_FAILURE() << "expected the missing key to be named";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("--api-key: the server wants one (HTTP 401"),
              std::string::npos)
        << e.what();
  }
  url.api_key = "wrong";
  EXPECT_THROW(bench::discover_server(url), std::invalid_argument);
  url.api_key.clear();
  const bench::LoadResult refused = bench::run_http(url, "", workload, {});
  EXPECT_EQ(bench::summarize(refused.records, 1).failed, 2);
  EXPECT_NE(refused.records[0].error.find("HTTP 401"), std::string::npos)
      << refused.records[0].error;
  url.api_key = "sesame";
  const bench::LoadResult accepted = bench::run_http(url, "", workload, {});
  EXPECT_EQ(bench::summarize(accepted.records, 1).completed, 2);
}

TEST_F(HttpLoad, UrlRunMatchesTheInProcessModelRun) {
  ServeChild serve({"--model", model_, "--port", "0", "--threads", "1"});
  ASSERT_GT(serve.port(), 0);
  const std::vector<std::string> load = {"--requests",   "4", "--prompt-tokens", "5:9",
                                         "--max-tokens", "8", "--concurrency",   "2",
                                         "--seed",       "4"};
  std::vector<std::string> by_url = {"bench", "--url",
                                     "http://127.0.0.1:" + std::to_string(serve.port()), "--json",
                                     dir_.file("url.json").string()};
  std::vector<std::string> by_model = {
      "bench", "--model", model_, "--threads", "1", "--json", dir_.file("model.json").string()};
  by_url.insert(by_url.end(), load.begin(), load.end());
  by_model.insert(by_model.end(), load.begin(), load.end());
  const CommandResult u = run_tandem(by_url);
  const CommandResult m = run_tandem(by_model);
  ASSERT_EQ(u.exit_code, 0) << u.err << u.out;
  ASSERT_EQ(m.exit_code, 0) << m.err << m.out;
  std::ifstream uf(dir_.file("url.json")), mf(dir_.file("model.json"));
  const nlohmann::json uj = nlohmann::json::parse(uf), mj = nlohmann::json::parse(mf);
  EXPECT_EQ(uj["runs"][0]["prompt_tokens"], mj["runs"][0]["prompt_tokens"]);
  EXPECT_EQ(uj["runs"][0]["output_tokens"], 4 * 8);
  EXPECT_EQ(uj["runs"][0]["failed"], 0);
  EXPECT_EQ(mj["runs"][0]["path"], "http");
  ASSERT_TRUE(uj["runs"][0].contains("outputs_digest"));
  EXPECT_EQ(uj["runs"][0]["outputs_digest"], mj["runs"][0]["outputs_digest"]);
}

// One ModelCard: `bench --model F` names (and sends requests for) the id `serve --model F`
// lists in /v1/models, by default and with --served-model-name.
TEST_F(HttpLoad, BenchModelUsesTheModelIdServeListsForTheSameFile) {
  const std::vector<std::vector<std::string>> namings = {{}, {"--served-model-name", "team/t1"}};
  for (const std::vector<std::string>& naming : namings) {
    std::vector<std::string> serve_args = {"--model", model_, "--port", "0", "--threads", "1"};
    serve_args.insert(serve_args.end(), naming.begin(), naming.end());
    ServeChild serve(serve_args);
    ASSERT_GT(serve.port(), 0);
    bench::ServerUrl url;
    url.host = "127.0.0.1";
    url.port = std::to_string(serve.port());
    const std::string served_id = bench::discover_server(url).model;
    EXPECT_EQ(served_id,
              naming.empty() ? std::filesystem::path(model_).stem().string() : naming.back());

    const std::string json_path = dir_.file("named.json").string();
    std::vector<std::string> bench_args = {"bench", "--model",    model_,   "--threads",
                                           "1",     "--requests", "2",      "--max-tokens",
                                           "2",     "--json",     json_path};
    bench_args.insert(bench_args.end(), naming.begin(), naming.end());
    const CommandResult r = run_tandem(bench_args);  // over HTTP: the requests name the id
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
    std::ifstream in(json_path);
    const nlohmann::json doc = nlohmann::json::parse(in);
    EXPECT_EQ(doc["settings"]["model_name"], served_id);
    EXPECT_EQ(doc["runs"][0]["completed"], 2);
  }
}

// With --url, --served-model-name picks which of the server's models the requests name (as
// vllm bench serve's --model does); one the server does not serve fails the warm-up.
TEST_F(HttpLoad, UrlRunsNameTheModelAskedFor) {
  ServeChild serve({"--model", model_, "--port", "0", "--threads", "1", "--served-model-name",
                    "first", "second"});
  ASSERT_GT(serve.port(), 0);
  bench::ServerUrl url;
  url.host = "127.0.0.1";
  url.port = std::to_string(serve.port());
  EXPECT_EQ(bench::discover_server(url).model, "first");
  EXPECT_EQ(bench::discover_server(url, "second").model, "second");
  EXPECT_GT(bench::discover_server(url, "second").context_length, 0);
  EXPECT_EQ(bench::discover_server(url, "third").model, "third");
  const CommandResult unknown = run_tandem({"bench", "--url", "http://127.0.0.1:" + url.port,
                                            "--served-model-name", "third", "--requests", "1"});
  EXPECT_NE(unknown.exit_code, 0);
  EXPECT_NE(unknown.err.find("HTTP 404"), std::string::npos) << unknown.err;
  const std::string json_path = dir_.file("second.json").string();
  const CommandResult r =
      run_tandem({"bench", "--url", "http://127.0.0.1:" + url.port, "--served-model-name", "second",
                  "--requests", "2", "--max-tokens", "2", "--json", json_path});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("(model second)"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace tandem::testing::TANDEM_UNITY_ID
