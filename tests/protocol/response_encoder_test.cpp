// The per-endpoint response encoder: byte for byte what responses.h and sse.h make for the
// same events, composed as the server streams them, and one literal stream per endpoint so
// that the bytes on the wire stay pinned.
#include "protocol/response_encoder.h"

#include <gtest/gtest.h>

#include <string>

#include "protocol/sse.h"

namespace tandem {
namespace {

ResponseHeader header(Endpoint endpoint) {
  return ResponseHeader{make_response_id(endpoint, 0, 7), 1700000000, "tiny", 42, "fp_1"};
}

const Usage kUsage{5, 3};

TEST(ResponseEncoder, CompletionEventsAreTheCompletionChunksAsSse) {
  for (bool include_usage : {false, true}) {
    SCOPED_TRACE(include_usage);
    const ResponseHeader h = header(Endpoint::kCompletions);
    const ResponseEncoder encoder(Endpoint::kCompletions, h, include_usage);
    EXPECT_EQ(encoder.opening_events(), "");
    EXPECT_EQ(encoder.text_event("Hi"), sse_data(completion_chunk_json(h, "Hi", std::nullopt)));
    std::string closing = sse_data(completion_chunk_json(h, "", FinishReason::kLength));
    if (include_usage) closing += sse_data(usage_chunk_json(h, Endpoint::kCompletions, kUsage));
    closing += sse_done();
    EXPECT_EQ(encoder.closing_events(FinishReason::kLength, kUsage), closing);
    EXPECT_EQ(encoder.whole_body("Hi there", FinishReason::kStop, kUsage),
              completion_response_json(h, "Hi there", FinishReason::kStop, kUsage));
  }
}

TEST(ResponseEncoder, ChatEventsAreTheChatChunksAsSse) {
  for (bool include_usage : {false, true}) {
    SCOPED_TRACE(include_usage);
    const ResponseHeader h = header(Endpoint::kChatCompletions);
    const ResponseEncoder encoder(Endpoint::kChatCompletions, h, include_usage);
    EXPECT_EQ(encoder.opening_events(), sse_data(chat_role_chunk_json(h)));
    EXPECT_EQ(encoder.text_event("Hi"), sse_data(chat_chunk_json(h, "Hi", std::nullopt)));
    std::string closing = sse_data(chat_chunk_json(h, "", FinishReason::kStop));
    if (include_usage) {
      closing += sse_data(usage_chunk_json(h, Endpoint::kChatCompletions, kUsage));
    }
    closing += sse_done();
    EXPECT_EQ(encoder.closing_events(FinishReason::kStop, kUsage), closing);
    EXPECT_EQ(encoder.whole_body("Hi there", FinishReason::kLength, kUsage),
              chat_completion_response_json(h, "Hi there", FinishReason::kLength, kUsage));
  }
}

TEST(ResponseEncoder, AnErrorEndsTheStreamWithTheErrorObjectThenDone) {
  const ApiError error = service_unavailable("The server is shutting down.");
  for (Endpoint endpoint : {Endpoint::kCompletions, Endpoint::kChatCompletions}) {
    const ResponseEncoder encoder(endpoint, header(endpoint), true);
    EXPECT_EQ(encoder.error_events(error), sse_data(to_json_body(error)) + sse_done());
  }
}

TEST(ResponseEncoder, ACompletionStreamIsPinnedByteForByte) {
  const ResponseEncoder encoder(Endpoint::kCompletions, header(Endpoint::kCompletions), true);
  const std::string envelope =
      R"("created":1700000000,"id":"cmpl-00000000000000000000000000000007","model":"tiny",)"
      R"("object":"text_completion","seed":42,"system_fingerprint":"fp_1")";
  EXPECT_EQ(encoder.text_event("Hi"),
            R"(data: {"choices":[{"finish_reason":null,"index":0,"logprobs":null,"text":"Hi"}],)" +
                envelope + "}\n\n");
  EXPECT_EQ(
      encoder.closing_events(FinishReason::kLength, kUsage),
      R"(data: {"choices":[{"finish_reason":"length","index":0,"logprobs":null,"text":""}],)" +
          envelope + "}\n\n" + R"(data: {"choices":[],)" + envelope +
          R"(,"usage":{"completion_tokens":3,"prompt_tokens":5,"prompt_tokens_details":{"cached_tokens":0},"total_tokens":8}})" +
          "\n\ndata: [DONE]\n\n");
}

TEST(ResponseEncoder, AChatStreamIsPinnedByteForByte) {
  const ResponseEncoder encoder(Endpoint::kChatCompletions, header(Endpoint::kChatCompletions),
                                false);
  const std::string envelope =
      R"("created":1700000000,"id":"chatcmpl-00000000000000000000000000000007","model":"tiny",)"
      R"("object":"chat.completion.chunk","seed":42,"system_fingerprint":"fp_1")";
  EXPECT_EQ(encoder.opening_events(),
            R"(data: {"choices":[{"delta":{"content":"","role":"assistant"},)"
            R"("finish_reason":null,"index":0,"logprobs":null}],)" +
                envelope + "}\n\n");
  EXPECT_EQ(encoder.text_event("Hi"),
            R"(data: {"choices":[{"delta":{"content":"Hi"},"finish_reason":null,"index":0,)"
            R"("logprobs":null}],)" +
                envelope + "}\n\n");
  EXPECT_EQ(encoder.closing_events(FinishReason::kStop, kUsage),
            R"(data: {"choices":[{"delta":{},"finish_reason":"stop","index":0,"logprobs":null}],)" +
                envelope + "}\n\ndata: [DONE]\n\n");
}

}  // namespace
}  // namespace tandem
