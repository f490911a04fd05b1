// Connections end to end: keep-alive, timeouts for clients that send nothing, a client
// that vanishes mid-stream (its request is cancelled and its KV blocks come back), and
// a graceful SIGTERM that lets a running request finish before exiting 0, and what a load
// balancer sees of a replica that got SIGTERM (tests/cluster runs nginx in front).
#include <signal.h>

#include <chrono>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/server/server_test_support.h"

namespace tandem::testing::TANDEM_UNITY_ID {
namespace {

using nlohmann::json;

bool has_text(const std::string& body) { return body.find("\"text\"") != std::string::npos; }

// Whether the server refuses new connections within 10 s, polled: a signal is handled on
// the server's own thread, after kill() has returned.
bool refuses_connections(ServerProcess& server) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    try {
      HttpClient probe(server.port());
    } catch (const std::exception&) {
      return true;
    }
  }
  return false;
}

TEST(Connections, TwoRequestsShareOneKeptAliveConnection) {
  HttpClient client(shared_server().port());
  const HttpResult first =
      client.send("POST", "/v1/completions", R"({"prompt": "a", "max_tokens": 2})");
  EXPECT_EQ(first.status, 200);
  EXPECT_TRUE(first.keep_alive);
  const HttpResult second = client.send("GET", "/health");
  EXPECT_EQ(second.status, 200);
  // A streamed response ends with the last chunk; the connection then serves on.
  const HttpResult streamed =
      client.stream("/v1/completions", R"({"prompt": "b", "max_tokens": 3, "stream": true})",
                    [](const std::string&) { return true; });
  EXPECT_NE(streamed.body.find("data: [DONE]"), std::string::npos);
  EXPECT_EQ(client.send("GET", "/v1/models").status, 200);
}

// A request's preparation runs off the I/O thread. This one compiles a schema whose grammar
// is refused as too large: about a second of work (refusals are cached, so the length is
// new each time the test runs in this process, and the server is the process's own).
// A probe sent on another connection meanwhile is answered while that work runs: were the
// preparation on the (one) I/O thread, the slow request's answer would be written before
// the probe was even read, and would be waiting on its connection when the probe returns.
TEST(Connections, ASlowRequestsPreparationHoldsUpNoOtherConnection) {
  static int runs = 0;
  const std::string body =
      R"({"prompt": "x", "max_tokens": 1, "response_format": {"type": "json_schema",)"
      R"( "json_schema": {"name": "y", "schema": {"type": "string", "minLength": )" +
      std::to_string(99000 + runs++) + "}}}}";
  HttpClient slow(shared_server().port());
  slow.write_raw("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: " +
                 std::to_string(body.size()) + "\r\n\r\n" + body);
  EXPECT_EQ(fetch(shared_server().port(), "GET", "/health").status, 200);
  EXPECT_EQ(slow.pending_bytes(), 0u) << "the slow request was answered before the probe";
  const std::string answer = slow.read_until("\r\n\r\n");
  EXPECT_EQ(answer.rfind("HTTP/1.1 400", 0), 0u) << answer;
}

TEST(Connections, ExpectContinueGetsAnInterimResponseBeforeTheBody) {
  HttpClient client(shared_server().port());
  // ignore_eos: the server picks the seed, and the tiny model's first token can be its end
  // of text (it was, once, in a full ctest run), which ends the completion at one token.
  const std::string body = R"({"prompt": "e", "max_tokens": 2, "ignore_eos": true})";
  client.write_raw(
      "POST /v1/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
      "Expect: 100-continue\r\nContent-Length: " +
      std::to_string(body.size()) + "\r\n\r\n");
  EXPECT_EQ(client.read_until("\r\n\r\n"), "HTTP/1.1 100 Continue\r\n\r\n");
  client.write_raw(body);
  const std::string response = client.read_until_closed();
  EXPECT_EQ(response.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << response;
  EXPECT_NE(response.find("\"completion_tokens\":2"), std::string::npos) << response;
}

// Request bodies being received count against --body-total-mib over every connection: a
// client that sent its header (Content-Length: the body is reserved before the 100 Continue
// invites it) holds its share; a second body that would pass the total gets 503 overloaded
// unread, as /metrics shows; once the first has arrived its share is free again, and one
// body alone fits even when it is larger than the total.
TEST(Connections, BodiesBeingReceivedTogetherAreBounded) {
  ServerProcess server(tiny_model(), {"--body-total-mib", "1", "--max-body", "2000000"});
  const auto head = [](size_t length) {
    return "POST /v1/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
           "Content-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: " +
           std::to_string(length) + "\r\n\r\n";
  };
  std::string body = R"({"prompt": "e", "max_tokens": 1, "ignore_eos": true})";
  body.resize(600000, ' ');  // JSON's trailing whitespace

  HttpClient first(server.port());
  first.write_raw(head(body.size()));
  ASSERT_EQ(first.read_until("\r\n\r\n"), "HTTP/1.1 100 Continue\r\n\r\n");
  first.write_raw(std::string_view(body).substr(0, 1000));  // and the rest waits

  HttpClient second(server.port());
  second.write_raw(head(body.size()));
  const std::string refused = second.read_until_closed();
  EXPECT_EQ(refused.rfind("HTTP/1.1 503", 0), 0u) << refused;
  EXPECT_NE(refused.find("\"overloaded\""), std::string::npos) << refused;
  EXPECT_NE(refused.find("--body-total-mib"), std::string::npos) << refused;
  EXPECT_NE(refused.find("Retry-After: 1"), std::string::npos) << refused;
  EXPECT_EQ(metric_value(fetch(server.port(), "GET", "/metrics").body, "tandem_request_body_bytes"),
            600000);

  first.write_raw(std::string_view(body).substr(1000));
  const std::string answered = first.read_until_closed();
  EXPECT_EQ(answered.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << answered.substr(0, 400);
  EXPECT_EQ(metric_value(fetch(server.port(), "GET", "/metrics").body, "tandem_request_body_bytes"),
            0);

  HttpClient alone(server.port());  // 1.5 MB, over the total, but alone
  alone.write_raw(head(1500000));
  EXPECT_EQ(alone.read_until("\r\n\r\n"), "HTTP/1.1 100 Continue\r\n\r\n");
}

// The refusals made before a request is taken speak its version too (they went out as
// HTTP/1.1, or as the connection's previous request's version).
TEST(Connections, AnHttp10ClientsRefusalsAreHttp10) {
  HttpClient too_big(shared_server().port());
  too_big.write_raw("POST /v1/completions HTTP/1.0\r\nContent-Length: 10485760\r\n\r\n");
  const std::string refusal = too_big.read_until_closed();
  EXPECT_EQ(refusal.rfind("HTTP/1.0 413", 0), 0u) << refusal;
  HttpClient compressed(shared_server().port());
  compressed.write_raw(
      "POST /v1/completions HTTP/1.0\r\nContent-Encoding: gzip\r\nContent-Length: 2\r\n\r\n{}");
  const std::string unsupported = compressed.read_until_closed();
  EXPECT_EQ(unsupported.rfind("HTTP/1.0 415", 0), 0u) << unsupported;
}

TEST(Connections, AnHttp10ClientGetsItsStreamUnchunkedUntilTheConnectionCloses) {
  HttpClient client(shared_server().port());
  const std::string body = R"({"prompt": "s", "max_tokens": 3, "stream": true})";
  client.write_raw("POST /v1/completions HTTP/1.0\r\nContent-Length: " +
                   std::to_string(body.size()) + "\r\n\r\n" + body);
  const std::string response = client.read_until_closed();
  EXPECT_EQ(response.rfind("HTTP/1.0 200 OK\r\n", 0), 0u) << response;
  EXPECT_EQ(response.find("chunked"), std::string::npos) << response;
  const std::string events = response.substr(response.find("\r\n\r\n") + 4);
  EXPECT_EQ(events.rfind("data: {", 0), 0u) << response;
  EXPECT_EQ(sse_data(events).back(), "[DONE]");
}

TEST(Connections, SilentAndHalfSentRequestsAreClosedByTheTimeouts) {
  ServerProcess server(tiny_model(),
                       {"--idle-timeout", "0.2", "--read-timeout", "0.2", "--kv-tokens", "4096"});
  HttpClient silent(server.port());
  EXPECT_EQ(silent.read_until_closed(), "");
  HttpClient half(server.port());
  half.write_raw("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{");
  EXPECT_EQ(half.read_until_closed(), "");
  EXPECT_EQ(fetch(server.port(), "GET", "/health").status, 200);
}

TEST(Connections, ADisconnectMidStreamCancelsTheRequestAndFreesItsKvBlocks) {
  ServerProcess server(demo_model(), {"--kv-tokens", "8192"});
  const std::string request =
      json{{"prompt", "x"}, {"max_tokens", 2000}, {"ignore_eos", true}, {"stream", true}}.dump();
  {
    HttpClient client(server.port());
    client.stream("/v1/completions", request,
                  [](const std::string& body) { return !has_text(body); });
    const std::string metrics = fetch(server.port(), "GET", "/metrics").body;
    EXPECT_GT(metric_value(metrics, "tandem_kv_blocks_used").value_or(0), 0);
    client.close();
  }
  std::string metrics;
  bool freed = false;
  for (int i = 0; i < 2000 && !freed; ++i) {  // bounded poll of the KV gauge
    metrics = fetch(server.port(), "GET", "/metrics").body;
    freed = metric_value(metrics, "tandem_kv_blocks_used") == 0.0 &&
            metric_value(metrics, "tandem_requests_running") == 0.0;
  }
  ASSERT_TRUE(freed) << metrics;
  EXPECT_EQ(metric_value(metrics, "tandem_generations_finished_total{reason=\"cancelled\"}"), 1.0)
      << metrics;
  EXPECT_LT(metric_value(metrics, "tandem_generation_tokens_total").value_or(2000), 2000);
}

// A whole (not streamed) answer whose client leaves is never written: /metrics counts it
// with nginx's 499 (client closed request), where it had not been counted at all.
TEST(Connections, AWholeAnswersVanishedClientIsCountedAs499) {
  ServerProcess server(demo_model(), {"--kv-tokens", "8192"});
  const std::string request =
      json{{"prompt", "x"}, {"max_tokens", 2000}, {"ignore_eos", true}}.dump();
  {
    HttpClient client(server.port());
    client.write_raw("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: " +
                     std::to_string(request.size()) + "\r\n\r\n" + request);
    bool running = false;
    for (int i = 0; i < 2000 && !running; ++i) {  // bounded poll of the running gauge
      running = metric_value(fetch(server.port(), "GET", "/metrics").body,
                             "tandem_requests_running") == 1.0;
    }
    ASSERT_TRUE(running);
    client.close();
  }
  std::string metrics;
  bool cancelled = false;
  for (int i = 0; i < 2000 && !cancelled; ++i) {  // bounded poll of the finish counter
    metrics = fetch(server.port(), "GET", "/metrics").body;
    cancelled =
        metric_value(metrics, "tandem_generations_finished_total{reason=\"cancelled\"}") == 1.0;
  }
  ASSERT_TRUE(cancelled) << metrics;
  EXPECT_EQ(metric_value(metrics,
                         "tandem_http_requests_total{endpoint=\"/v1/completions\",status=\"499\"}"),
            1.0)
      << metrics;
}

// A client on a slow link (a 4 KB receive window, read at about 0.5 MB/s) takes seconds
// over a 4.8 MB stream that the server makes in a fraction of one. The write timeout (2 s
// here) drops a client that takes nothing for that long, not one whose backlog outlasts it:
// the stream arrives whole. With a deadline over each write the connection was cut
// mid-event past the 4 MiB the kernel's send buffer had taken, since Linux wakes a blocked
// writer only once a third of that buffer is free (server/write_watch.h): 1.4 MB, 2.8 s at
// this pace. (At 1 s and twice the pace, a TSan run on two loaded cores starved the reader
// past the timeout twice.)
TEST(Connections, ASlowButSteadyReaderGetsItsWholeStream) {
  ServerProcess server(tiny_model(), {"--kv-tokens", "16384", "--write-timeout", "2"});
  HttpClient client(server.port(), /*receive_buffer=*/4096);
  const std::string request = json{{"prompt", "x"},  {"n", 16},        {"max_tokens", 500},
                                   {"logprobs", 20}, {"stream", true}, {"ignore_eos", true}}
                                  .dump();
  size_t paced = 0;  // the reader's pace: 32 ms a 16 KB
  const HttpResult streamed =
      client.stream("/v1/completions", request, [&paced](const std::string& body) {
        if (body.size() - paced >= 16384) {
          paced = body.size();
          std::this_thread::sleep_for(std::chrono::milliseconds(32));
        }
        return true;
      });
  EXPECT_GT(streamed.body.size(), 4'500'000u);
  const auto events = sse_data(streamed.body);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back(), "[DONE]");
  int finished = 0;
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    finished += !json::parse(events[i])["choices"][0]["finish_reason"].is_null();
  }
  EXPECT_EQ(finished, 16);
}

// What a client that reads nothing of 32 choices' streams (two prompts, n = 16, logprobs 20,
// 500 tokens each: about 9.6 MB of events, far more than the kernel's buffers take) saw,
// polled from /metrics until every choice finished, within a deadline no run should come
// near: the choices cancelled and completed, and the most connections open at once.
struct UnreadStream {
  double cancelled = 0, completed = 0, connections = 0;
};
UnreadStream send_unread_stream(ServerProcess& server) {
  HttpClient client(server.port(), /*receive_buffer=*/4096);
  const std::string body = json{{"prompt", {"x", "y"}}, {"n", 16},        {"max_tokens", 500},
                                {"logprobs", 20},       {"stream", true}, {"ignore_eos", true}}
                               .dump();
  client.write_raw(
      "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: "
      "application/json\r\nContent-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body);
  UnreadStream seen;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (seen.cancelled + seen.completed < 32 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    const std::string metrics = fetch(server.port(), "GET", "/metrics").body;
    seen.cancelled =
        metric_value(metrics, "tandem_generations_finished_total{reason=\"cancelled\"}")
            .value_or(0);
    seen.completed =
        metric_value(metrics, "tandem_generations_finished_total{reason=\"length\"}").value_or(0);
    seen.connections =
        std::max(seen.connections, metric_value(metrics, "tandem_http_connections").value_or(0));
  }
  return seen;
}

// A client that takes a little now and then, or nothing, while its write timeout is long:
// past --stream-backlog-mib of events it has not taken, it is dropped and its generation
// cancelled. The server had kept every event for it (QA T: 62 -> 133 MB of resident memory
// in 19 s for two readers taking 100 bytes a second, still growing).
TEST(Connections, AReaderTooFarBehindItsStreamIsDropped) {
  ServerProcess server(tiny_model(), {"--kv-tokens", "16384", "--write-timeout", "600",
                                      "--stream-backlog-mib", "1"});
  const UnreadStream seen = send_unread_stream(server);
  EXPECT_EQ(seen.completed, 0);
  EXPECT_EQ(seen.cancelled, 32);  // each choice counted, as each finished one is
  EXPECT_NE(server.stderr_text().find("fell"), std::string::npos) << server.stderr_text();
}

// The same over all clients together (QA W: eight slow readers pinned 300 MB, each under
// its own limit): a client under --stream-backlog-mib but more than 1 MiB behind while all
// clients' backlog passes --stream-backlog-total-mib is dropped. /metrics shows the total,
// which comes back to 0, and the connections open.
TEST(Connections, ReadersTooFarBehindTogetherAreDropped) {
  ServerProcess server(
      tiny_model(), {"--kv-tokens", "16384", "--write-timeout", "600", "--stream-backlog-mib", "64",
                     "--stream-backlog-total-mib", "2"});
  const UnreadStream seen = send_unread_stream(server);
  EXPECT_EQ(seen.completed, 0);
  EXPECT_EQ(seen.cancelled, 32);
  EXPECT_GE(seen.connections, 2);  // the stream's and the poll's
  EXPECT_NE(server.stderr_text().find("--stream-backlog-total-mib"), std::string::npos)
      << server.stderr_text();
  double backlog = -1;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (backlog != 0 && std::chrono::steady_clock::now() < deadline) {
    backlog =
        metric_value(fetch(server.port(), "GET", "/metrics").body, "tandem_stream_backlog_bytes")
            .value_or(-1);
  }
  EXPECT_EQ(backlog, 0);
}

// A second SIGTERM during the grace cuts the running request at once, as a second Ctrl-C
// does to llama-server and uvicorn: the grace here is an hour and the request would run
// for 2000 tokens, yet it ends with the grace's cut (the error event, then [DONE]) and
// the process exits 0.
TEST(Connections, ASecondSigtermCutsTheGraceShort) {
  ServerProcess server(demo_model(), {"--kv-tokens", "8192", "--shutdown-grace", "3600"});
  HttpClient client(server.port());
  const std::string request =
      json{{"prompt", "x"}, {"max_tokens", 2000}, {"ignore_eos", true}, {"stream", true}}.dump();
  bool signalled = false, refused = false;
  const HttpResult streamed = client.stream("/v1/completions", request, [&](const std::string& b) {
    if (signalled || !has_text(b)) return true;
    ::kill(server.pid(), SIGTERM);
    signalled = true;
    // Two signals sent together may arrive as one: the second goes once the first has
    // been handled, which closes the listening socket.
    refused = refuses_connections(server);
    ::kill(server.pid(), SIGTERM);
    return true;
  });
  EXPECT_TRUE(signalled);
  EXPECT_TRUE(refused);
  const auto events = sse_data(streamed.body);
  ASSERT_GE(events.size(), 2u);
  EXPECT_EQ(events.back(), "[DONE]");
  const json error = json::parse(events[events.size() - 2]);
  EXPECT_EQ(error["error"]["code"], "unavailable") << events[events.size() - 2];
  EXPECT_EQ(server.signal_and_wait(0), 0) << server.stderr_text();
  EXPECT_NE(server.stderr_text().find("a second signal"), std::string::npos)
      << server.stderr_text();
}

// Streams a long completion and sends the server SIGTERM as soon as the first text arrives.
struct SignalledStream {
  HttpResult result;
  bool signalled = false;
};
SignalledStream stream_then_sigterm(ServerProcess& server, int max_tokens) {
  HttpClient client(server.port());
  const std::string request = json{
      {"prompt", "x"},
      {"max_tokens", max_tokens},
      {"ignore_eos", true},
      {"stream", true}}.dump();
  SignalledStream out;
  out.result = client.stream("/v1/completions", request, [&](const std::string& b) {
    if (!out.signalled && has_text(b)) {
      ::kill(server.pid(), SIGTERM);
      out.signalled = true;
    }
    return true;
  });
  return out;
}

TEST(Connections, SigtermLetsARunningRequestFinishThenExitsZero) {
  // The longest grace the flag allows: the finish must not race a clock (see below).
  ServerProcess server(tiny_model(), {"--kv-tokens", "4096", "--shutdown-grace", "3600"});
  const auto [streamed, signalled] = stream_then_sigterm(server, 400);
  EXPECT_TRUE(signalled);
  const auto events = sse_data(streamed.body);
  ASSERT_GE(events.size(), 2u);
  EXPECT_EQ(events.back(), "[DONE]");
  EXPECT_EQ(json::parse(events[events.size() - 2])["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(server.signal_and_wait(0), 0) << server.stderr_text();
}

// A request whose grammar still compiles when SIGTERM comes, with nothing else running:
// it was taken before the signal, so it gets the grace and its answer. It counted among the
// running requests only once prepared, so the drain found none, stopped the scheduler, and
// answered it 503 "shutting down" (QA T). The schema compiles in about a second here.
TEST(Connections, SigtermGivesARequestBeingPreparedTheGrace) {
  ServerProcess server(tiny_model(), {"--kv-tokens", "4096", "--shutdown-grace", "3600"});
  const std::string body =
      R"({"prompt": "x", "max_tokens": 1, "response_format": {"type": "json_schema",)"
      R"( "json_schema": {"name": "y", "schema": {"type": "string", "minLength": 10000}}}})";
  HttpClient client(server.port());
  client.write_raw("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: " +
                   std::to_string(body.size()) + "\r\n\r\n" + body);
  bool preparing = false;
  for (int i = 0; i < 2000 && !preparing; ++i) {  // bounded poll of the preparing gauge
    preparing = metric_value(fetch(server.port(), "GET", "/metrics").body,
                             "tandem_requests_preparing") == 1.0;
  }
  ASSERT_TRUE(preparing);
  ::kill(server.pid(), SIGTERM);
  const std::string answer = client.read_until_closed();
  EXPECT_EQ(answer.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << answer;
  EXPECT_NE(answer.find("\"completion_tokens\":1"), std::string::npos) << answer;
  EXPECT_EQ(server.signal_and_wait(0), 0) << server.stderr_text();
}

TEST(Connections, SigtermWithARunningRequestPastTheGraceCutsItAndExitsZero) {
  ServerProcess server(demo_model(), {"--kv-tokens", "8192", "--shutdown-grace", "0"});
  const auto [streamed, signalled] = stream_then_sigterm(server, 2000);
  EXPECT_TRUE(signalled);
  const auto events = sse_data(streamed.body);
  ASSERT_GE(events.size(), 2u);
  EXPECT_EQ(events.back(), "[DONE]");
  const json error = json::parse(events[events.size() - 2]);
  EXPECT_EQ(error["error"]["code"], "unavailable") << streamed.body;
  EXPECT_EQ(server.signal_and_wait(0), 0) << server.stderr_text();
}

// What a load balancer (nginx's passive checks, a Kubernetes readiness probe) sees of a
// replica that got SIGTERM with a request running: new connections are refused at once,
// /health on a connection it already had answers 503 (and the connection closes), and the
// running request still streams to its end before the process exits 0.
TEST(Connections, SigtermFailsHealthAndRefusesConnectionsWhileTheRunningRequestFinishes) {
  // The grace is the longest the flag allows, so that the request's finish never races it:
  // under TSan on a slow CPU the 1200 tokens took over 30 s, and the grace cut them.
  ServerProcess server(demo_model(), {"--kv-tokens", "8192", "--shutdown-grace", "3600"});
  HttpClient kept(server.port());  // a balancer's kept-alive connection, idle at the signal
  ASSERT_EQ(kept.send("GET", "/health").status, 200);

  bool refused = false;
  HttpResult health;
  HttpClient client(server.port());
  const std::string request = json{
      {"prompt", "x"},
      {"max_tokens", 1200},  // long enough to outlast the checks; 2000 takes seconds
      {"ignore_eos", true},
      {"stream", true}}.dump();
  bool signalled = false;
  const HttpResult streamed = client.stream("/v1/completions", request, [&](const std::string& b) {
    if (signalled || !has_text(b)) return true;
    ::kill(server.pid(), SIGTERM);
    signalled = true;
    refused = refuses_connections(server);
    if (refused) health = kept.send("GET", "/health");
    return true;
  });
  EXPECT_TRUE(signalled);
  EXPECT_TRUE(refused) << "new connections were still accepted 10 s after SIGTERM";
  EXPECT_EQ(health.status, 503) << health.body;
  EXPECT_FALSE(health.keep_alive);
  EXPECT_EQ(health.headers["retry-after"], "1");
  const auto events = sse_data(streamed.body);
  ASSERT_GE(events.size(), 2u);
  EXPECT_EQ(events.back(), "[DONE]");
  EXPECT_EQ(json::parse(events[events.size() - 2])["choices"][0]["finish_reason"], "length")
      << "the running request was cut instead of finishing";
  EXPECT_EQ(server.signal_and_wait(0), 0) << server.stderr_text();
}

}  // namespace
}  // namespace tandem::testing::TANDEM_UNITY_ID
