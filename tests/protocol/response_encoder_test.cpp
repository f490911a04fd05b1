// The per-endpoint response encoder: byte for byte what responses.h and sse.h make for the
// same events, composed as the server streams them, and one literal stream per endpoint so
// that the bytes on the wire stay pinned.
#include "protocol/response_encoder.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "protocol/choice_seed.h"
#include "protocol/sse.h"

namespace tandem::TANDEM_UNITY_ID {
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
  // OpenAI's field order: the envelope, then the choices (and the usage).
  const std::string envelope =
      R"(data: {"id":"cmpl-00000000000000000000000000000007","object":"text_completion",)"
      R"("created":1700000000,"model":"tiny","seed":42,"system_fingerprint":"fp_1",)";
  EXPECT_EQ(
      encoder.text_event("Hi"),
      envelope +
          R"("choices":[{"index":0,"seed":42,"text":"Hi","logprobs":null,"finish_reason":null}]})" +
          "\n\n");
  EXPECT_EQ(
      encoder.closing_events(FinishReason::kLength, kUsage),
      envelope +
          R"("choices":[{"index":0,"seed":42,"text":"","logprobs":null,"finish_reason":"length",)"
          R"("stop_reason":null}]})" +
          "\n\n" + envelope +
          R"("choices":[],"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8,"prompt_tokens_details":{"cached_tokens":0}}})" +
          "\n\ndata: [DONE]\n\n");
}

TEST(ResponseEncoder, AChatStreamIsPinnedByteForByte) {
  const ResponseEncoder encoder(Endpoint::kChatCompletions, header(Endpoint::kChatCompletions),
                                false);
  const std::string envelope =
      R"(data: {"id":"chatcmpl-00000000000000000000000000000007","object":"chat.completion.chunk",)"
      R"("created":1700000000,"model":"tiny","seed":42,"system_fingerprint":"fp_1",)";
  EXPECT_EQ(encoder.opening_events(),
            envelope +
                R"("choices":[{"index":0,"seed":42,"delta":{"role":"assistant",)"
                R"("content":""},"logprobs":null,"finish_reason":null}]})" +
                "\n\n");
  EXPECT_EQ(encoder.text_event("Hi"),
            envelope +
                R"("choices":[{"index":0,"seed":42,"delta":{"content":"Hi"},)"
                R"("logprobs":null,"finish_reason":null}]})" +
                "\n\n");
  EXPECT_EQ(encoder.closing_events(FinishReason::kStop, kUsage),
            envelope +
                R"("choices":[{"index":0,"seed":42,"delta":{},"logprobs":null,)"
                R"("finish_reason":"stop","stop_reason":null}]})" +
                "\n\ndata: [DONE]\n\n");
}

// n choices: a role chunk per choice, chunks and finishes named by index with each
// choice's own seed, the usage chunk and [DONE] once, and a body with every choice.
TEST(ResponseEncoder, SeveralChoicesAreNamedByIndexWithTheirOwnSeeds) {
  const ResponseHeader h = header(Endpoint::kChatCompletions);
  const std::vector<ChoiceId> ids{{0, 42}, {1, 9001}, {2, 77}};
  const ResponseEncoder encoder(Endpoint::kChatCompletions, h, true, ids);
  EXPECT_EQ(encoder.choice_count(), 3);
  std::string opening;
  for (const ChoiceId& id : ids) opening += sse_data(chat_role_chunk_json(h, id));
  EXPECT_EQ(encoder.opening_events(), opening);
  EXPECT_EQ(encoder.text_event("Hi", nullptr, 1),
            sse_data(chat_chunk_json(h, "Hi", std::nullopt, nullptr, ids[1])));
  EXPECT_NE(encoder.text_event("Hi", nullptr, 1)
                .find(R"("index":1,"seed":9001,"delta":{"content":"Hi"},"logprobs":null)"),
            std::string::npos);
  EXPECT_EQ(encoder.finish_event(2, FinishReason::kLength),
            sse_data(chat_chunk_json(h, "", FinishReason::kLength, nullptr, ids[2])));
  EXPECT_EQ(encoder.end_events(kUsage),
            sse_data(usage_chunk_json(h, Endpoint::kChatCompletions, kUsage)) + sse_done());
  std::vector<ChoiceResult> results{{{}, "a", FinishReason::kStop, nullptr},
                                    {{}, "b", FinishReason::kLength, nullptr},
                                    {{}, "c", FinishReason::kStop, nullptr}};
  const auto body = nlohmann::json::parse(encoder.whole_body(results, kUsage));
  ASSERT_EQ(body["choices"].size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(body["choices"][i]["index"], ids[i].index);
    EXPECT_EQ(body["choices"][i]["seed"], ids[i].seed);
  }
  EXPECT_EQ(body["choices"][1]["message"]["content"], "b");
  EXPECT_EQ(body["choices"][1]["finish_reason"], "length");
  EXPECT_EQ(body["seed"], 42);
}

TEST(ChoiceSeed, ChoiceZeroKeepsTheSeedAndTheOthersAreDistinctAndFitADouble) {
  EXPECT_EQ(choice_seed(12345, 0), 12345u);
  EXPECT_EQ(choice_seed(~uint64_t{0}, 0), ~uint64_t{0});
  std::set<uint64_t> seen{12345};
  for (int32_t i = 1; i < 16 * 64; ++i) {
    const uint64_t s = choice_seed(12345, i);
    EXPECT_LT(s, uint64_t{1} << 53);
    seen.insert(s);
  }
  EXPECT_EQ(seen.size(), 16u * 64u);
  EXPECT_NE(choice_seed(1, 1), choice_seed(2, 1));
  static_assert(choice_seed(7, 3) == choice_seed(7, 3));  // a pure function of (seed, index)
}

}  // namespace
}  // namespace tandem::TANDEM_UNITY_ID
