// SSE framing: one "data:" field per event, a blank line after each, [DONE] last.
#include "protocol/sse.h"

#include <gtest/gtest.h>

namespace tandem::TANDEM_UNITY_ID {
namespace {

TEST(Sse, DataEventWrapsJsonInOneFieldAndABlankLine) {
  EXPECT_EQ(sse_data(R"({"a":1})"), "data: {\"a\":1}\n\n");
  EXPECT_EQ(sse_data(""), "data: \n\n");
}

TEST(Sse, ATypedEventHasItsEventLineBeforeTheData) {
  EXPECT_EQ(sse_event("message_stop", R"({"type":"message_stop"})"),
            "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n");
}

TEST(Sse, DoneIsTheOpenAiSentinel) { EXPECT_EQ(sse_done(), "data: [DONE]\n\n"); }

TEST(Sse, ConcatenatedEventsSplitBackIntoTheirPayloads) {
  std::string stream = sse_data(R"({"x":"a\nb"})") + sse_data("{}") + sse_done();
  std::vector<std::string> payloads;
  size_t start = 0;
  while (start < stream.size()) {
    size_t end = stream.find("\n\n", start);
    ASSERT_NE(end, std::string::npos);
    std::string event = stream.substr(start, end - start);
    ASSERT_EQ(event.rfind("data: ", 0), 0u);
    payloads.push_back(event.substr(6));
    start = end + 2;
  }
  EXPECT_EQ(payloads, (std::vector<std::string>{R"({"x":"a\nb"})", "{}", "[DONE]"}));
}

}  // namespace
}  // namespace tandem::TANDEM_UNITY_ID
