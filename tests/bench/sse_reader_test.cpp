// SSE parsing: events come out whole however the bytes are split.
#include "bench/sse_reader.h"

#include <gtest/gtest.h>

namespace tandem::bench::TANDEM_UNITY_ID {
namespace {

TEST(SseReader, YieldsEachEventsDataOnce) {
  SseReader reader;
  const auto events = reader.feed("data: {\"a\":1}\n\ndata: [DONE]\n\n");
  EXPECT_EQ(events, (std::vector<std::string>{"{\"a\":1}", "[DONE]"}));
}

TEST(SseReader, EventsSplitAcrossReadsComeOutWhenComplete) {
  SseReader reader;
  const std::string stream = "data: {\"text\":\"hi\"}\r\n\r\ndata: second\n\n";
  std::vector<std::string> events;
  for (char c : stream)
    for (std::string& e : reader.feed(std::string_view(&c, 1))) events.push_back(e);
  EXPECT_EQ(events, (std::vector<std::string>{"{\"text\":\"hi\"}", "second"}));
}

TEST(SseReader, JoinsMultiLineDataAndIgnoresCommentsAndOtherFields) {
  SseReader reader;
  const auto events = reader.feed(": keep-alive\n\nevent: x\ndata: one\ndata:two\nid: 3\n\n");
  EXPECT_EQ(events, (std::vector<std::string>{"one\ntwo"}));
}

TEST(SseReader, HoldsAnUnfinishedEvent) {
  SseReader reader;
  EXPECT_TRUE(reader.feed("data: partial\n").empty());
  EXPECT_EQ(reader.feed("\n"), (std::vector<std::string>{"partial"}));
}

}  // namespace
}  // namespace tandem::bench::TANDEM_UNITY_ID
