// A device failure in the middle of an n > 1 stream, against an in-process HttpServer whose
// scheduler runs a device that fails its third step: the choices in that step get the
// error, the response ends with the error event and [DONE], and the choices still queued
// behind them (cancelled by the session) change nothing after that: their late cancels had
// been counted as client cancels and closed the connection under the error's write.
#include <memory>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "scheduler/scheduler.h"
#include "server/http_server.h"
#include "tests/scheduler/scheduler_test_support.h"
#include "tests/server/server_test_support.h"

namespace tandem::testing::TANDEM_UNITY_ID {
namespace {

using nlohmann::json;

TEST(DeviceFailure, AnErrorEndsAnNChoiceStreamAndTheQueuedChoicesAddNothing) {
  ByteTokenizer tokenizer;
  Device device(std::make_unique<FailingExecutor>(3, "device lost", 'q'));
  SchedulerOptions options;
  options.max_batch = 2;  // of 4 choices, two run and two wait
  Scheduler scheduler(device, tokenizer, options);
  ModelCard card;
  card.id = "m";
  card.names = {"m"};
  card.context_length = 256;
  card.vocab_size = 260;
  card.kv_capacity_tokens = 64 * 16;
  server::ServerOptions server_options;
  server_options.port = 0;
  server_options.handle_signals = false;
  server::HttpServer http(scheduler, tokenizer, card, server_options);
  const uint16_t port = http.listen();
  scheduler.start();
  std::thread serving([&http] { http.run(); });

  HttpClient client(port);
  const std::string body =
      json{{"prompt", "abc"}, {"n", 4}, {"max_tokens", 20}, {"stream", true}}.dump();
  const HttpResult streamed =
      client.stream("/v1/completions", body, [](const std::string&) { return true; });
  const auto events = sse_data(streamed.body);
  ASSERT_GE(events.size(), 2u) << streamed.body;
  EXPECT_EQ(events.back(), "[DONE]");
  EXPECT_EQ(json::parse(events[events.size() - 2])["error"]["type"], "server_error")
      << streamed.body;
  // The queued choices' cancels come back after [DONE]: once nothing runs or waits.
  std::string metrics;
  bool settled = false;
  for (int i = 0; i < 2000 && !settled; ++i) {  // bounded poll of the gauges
    metrics = fetch(port, "GET", "/metrics").body;
    settled = metric_value(metrics, "tandem_requests_running") == 0.0 &&
              metric_value(metrics, "tandem_requests_waiting") == 0.0;
  }
  ASSERT_TRUE(settled) << metrics;
  EXPECT_EQ(metric_value(metrics, "tandem_generations_finished_total{reason=\"error\"}"), 1.0)
      << metrics;
  EXPECT_EQ(
      metric_value(metrics, "tandem_generations_finished_total{reason=\"cancelled\"}").value_or(0),
      0.0)
      << metrics;
  http.request_stop();
  serving.join();
}

}  // namespace
}  // namespace tandem::testing::TANDEM_UNITY_ID
