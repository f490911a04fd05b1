// What HttpServer leaves behind for the process's exit: once run() has drained and
// returned, SIGINT and SIGTERM are ignored, and stay so when the server is destroyed.
// Boost gives a signal back its default action when its last signal_set lets go of it, so
// a second SIGTERM in the teardown after "tandem serve: stopped" killed the process (exit
// 143; QA timed that window at 4-5 ms, much longer under ASan, where it also skipped the
// leak check). In-process, so that the disposition itself is read, not a race with it.
#include <signal.h>

#include <memory>
#include <thread>

#include <gtest/gtest.h>

#include "scheduler/engine.h"
#include "server/http_server.h"
#include "tests/server/server_test_support.h"

namespace tandem::testing::TANDEM_UNITY_ID {
namespace {

void (*disposition(int signal))(int) {
  struct sigaction current {};
  ::sigaction(signal, nullptr, &current);
  return current.sa_handler;
}

std::unique_ptr<Engine> tiny_engine() {
  EngineOptions options;
  options.model = tiny_model();
  options.threads = 1;
  options.kv_tokens = 1024;
  return std::make_unique<Engine>(options);
}

TEST(HttpServerSignals, AfterTheDrainSigintAndSigtermAreIgnoredForTheExit) {
  const std::unique_ptr<Engine> owned = tiny_engine();
  Engine& engine = *owned;
  {
    server::ServerOptions server_options;
    server_options.port = 0;
    server::HttpServer http(engine.scheduler(), engine.tokenizer(), engine.card(), server_options);
    http.listen();
    engine.start();
    std::thread serving([&http] { http.run(); });
    EXPECT_FALSE(http.request_stop());  // the first stop: a drain
    serving.join();
    EXPECT_EQ(disposition(SIGTERM), SIG_IGN);
    EXPECT_EQ(disposition(SIGINT), SIG_IGN);
    EXPECT_EQ(disposition(SIGHUP), SIG_IGN);
  }
  // Destroying the server gives nothing back to the default action.
  EXPECT_EQ(disposition(SIGTERM), SIG_IGN);
  EXPECT_EQ(disposition(SIGINT), SIG_IGN);
  ::signal(SIGTERM, SIG_DFL);  // the test process as it was
  ::signal(SIGINT, SIG_DFL);
  ::signal(SIGHUP, SIG_DFL);
}

// A server inside another command (`bench --model`) leaves the signals alone: Ctrl-C ends
// that command. Its server took SIGINT as a drain, so the bench went on with every later
// request refused, and from the drain on SIGINT was ignored (a compare's second run could
// not be interrupted at all).
TEST(HttpServerSignals, AServerThatDoesNotHandleSignalsLeavesTheirActionsAlone) {
  const std::unique_ptr<Engine> owned = tiny_engine();
  Engine& engine = *owned;
  ASSERT_EQ(disposition(SIGINT), SIG_DFL);
  server::ServerOptions server_options;
  server_options.port = 0;
  server_options.handle_signals = false;
  server::HttpServer http(engine.scheduler(), engine.tokenizer(), engine.card(), server_options);
  http.listen();
  engine.start();
  EXPECT_EQ(disposition(SIGINT), SIG_DFL);  // Asio installs its handler with the signal_set
  EXPECT_EQ(disposition(SIGTERM), SIG_DFL);
  std::thread serving([&http] { http.run(); });
  EXPECT_FALSE(http.request_stop());
  serving.join();
  EXPECT_EQ(disposition(SIGINT), SIG_DFL);
  EXPECT_EQ(disposition(SIGTERM), SIG_DFL);
  EXPECT_EQ(disposition(SIGHUP), SIG_DFL);
}

}  // namespace
}  // namespace tandem::testing::TANDEM_UNITY_ID
