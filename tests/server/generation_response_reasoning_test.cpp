// GenerationResponse with the reasoning split off: the whole body's reasoning_content and
// content, and a stream's reasoning_content and content deltas (every reasoning delta before
// any content), agree for every way the output is cut; tool calls are read from the content
// only, so a call the model only thought about is no call; logprobs cover every token,
// laid end to end over the stream's chunks.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "server/generation_response.h"
#include "tests/server/server_test_support.h"

namespace tandem::server::TANDEM_UNITY_ID {
namespace {

using nlohmann::json;

const ReasoningMarkers kThink{"<think>", "</think>"};

GenerationResponse make(bool stream, bool opened, bool tools, bool logprobs = false) {
  ResponseHeader header{"chatcmpl-1", 1, "m", 7, "fp"};
  ToolCallReading reading;
  if (tools) reading = ToolCallReading{true, ToolCallFormat::kHermes, "x", true, false, false, {}};
  return GenerationResponse(ResponseEncoder(Endpoint::kChatCompletions, header, false), stream,
                            logprobs, 1, {}, reading, {}, nullptr,
                            ReasoningReading{true, kThink, opened});
}

std::string run(GenerationResponse& response, const std::string& output, size_t piece,
                bool logprobs = false) {
  std::string events = response.opening_events();
  for (size_t at = 0; at < output.size(); at += piece) {
    if (logprobs) {
      response.logprobs(0, {TokenLogprobs{{output.substr(at, piece), -1.0f, int32_t(at)}, {}}});
    }
    events += response.text(0, output.substr(at, piece));
  }
  events += response.finish(0, FinishReason::kStop, Usage{3, 4, 0});
  return events;
}

struct Streamed {
  std::string reasoning;
  std::string content;
  size_t calls = 0;
  size_t logprobs = 0;
};

Streamed read_stream(const std::string& events) {
  Streamed out;
  for (const std::string& data : testing::sse_data(events)) {
    if (data == "[DONE]") continue;
    const json chunk = json::parse(data);
    const json& choice = chunk["choices"][0];
    const json& delta = choice["delta"];
    if (delta.contains("reasoning_content")) {
      EXPECT_TRUE(out.content.empty()) << "reasoning after content: " << events;
      out.reasoning += delta["reasoning_content"].get<std::string>();
    }
    if (delta.contains("content")) out.content += delta["content"].get<std::string>();
    if (delta.contains("tool_calls") && delta["tool_calls"][0].contains("id")) ++out.calls;
    if (choice["logprobs"].is_object()) out.logprobs += choice["logprobs"]["content"].size();
  }
  return out;
}

TEST(GenerationResponseReasoning, WholeAndStreamedAgreeHoweverTheOutputIsCut) {
  const struct {
    std::string output;
    bool opened;
    std::string reasoning;
    std::string content;
  } kCases[] = {
      {"<think>\nGreet them.\n</think>\n\nHello!", false, "Greet them.", "Hello!"},
      {"Okay.\n</think>\n\nThe answer.", true, "Okay.", "The answer."},
      {"Still thinking when the limit came", true, "Still thinking when the limit came", ""},
      {"No reasoning here.", false, "", "No reasoning here."},
  };
  for (const auto& c : kCases) {
    GenerationResponse whole = make(false, c.opened, false);
    run(whole, c.output, 3);
    const json message = json::parse(whole.whole_body())["choices"][0]["message"];
    EXPECT_EQ(message["content"], c.content) << c.output;
    EXPECT_EQ(message.value("reasoning_content", ""), c.reasoning) << c.output;
    EXPECT_EQ(message.contains("reasoning_content"), !c.reasoning.empty()) << c.output;
    for (size_t piece : {1, 2, 5, 64}) {
      GenerationResponse streamed = make(true, c.opened, false);
      const Streamed got = read_stream(run(streamed, c.output, piece));
      EXPECT_EQ(got.reasoning, c.reasoning) << c.output << " in pieces of " << piece;
      EXPECT_EQ(got.content, c.content) << c.output << " in pieces of " << piece;
    }
  }
}

TEST(GenerationResponseReasoning, CallsAreReadFromTheContentOnly) {
  const std::string call =
      "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1}}\n</tool_call>";
  // A call written after the reasoning is a call; one only thought about is reasoning.
  const std::string called = "<think>I will call add.</think>\n" + call;
  const std::string thought = "<think>Maybe " + call + "? No.</think>\nNo call needed.";
  for (size_t piece : {1, 4, 200}) {
    GenerationResponse whole = make(false, false, true);
    run(whole, called, piece);
    const json body = json::parse(whole.whole_body());
    EXPECT_EQ(body["choices"][0]["finish_reason"], "tool_calls");
    EXPECT_EQ(body["choices"][0]["message"]["reasoning_content"], "I will call add.");
    EXPECT_EQ(body["choices"][0]["message"]["tool_calls"].size(), 1u);
    GenerationResponse streamed = make(true, false, true);
    const Streamed got = read_stream(run(streamed, called, piece));
    EXPECT_EQ(got.reasoning, "I will call add.");
    EXPECT_EQ(got.calls, 1u);
    EXPECT_EQ(got.content, "");

    GenerationResponse not_called = make(false, false, true);
    run(not_called, thought, piece);
    const json plain = json::parse(not_called.whole_body());
    EXPECT_EQ(plain["choices"][0]["finish_reason"], "stop");
    EXPECT_FALSE(plain["choices"][0]["message"].contains("tool_calls"));
    EXPECT_EQ(plain["choices"][0]["message"]["content"], "No call needed.");
    GenerationResponse streamed_thought = make(true, false, true);
    const Streamed thought_got = read_stream(run(streamed_thought, thought, piece));
    EXPECT_EQ(thought_got.calls, 0u);
    EXPECT_EQ(thought_got.content, "No call needed.");
  }
}

TEST(GenerationResponseReasoning, LogprobsCoverEveryTokenReasoningIncluded) {
  const std::string output = "<think>plan</think>answer";
  GenerationResponse whole = make(false, false, false, true);
  run(whole, output, 3, true);
  const json body = json::parse(whole.whole_body());
  const size_t tokens = (output.size() + 2) / 3;
  EXPECT_EQ(body["choices"][0]["logprobs"]["content"].size(), tokens);
  GenerationResponse streamed = make(true, false, false, true);
  EXPECT_EQ(read_stream(run(streamed, output, 3, true)).logprobs, tokens);
}

// usage's reasoning tokens: those whose text is the reasoning's (the open marker's too, the
// close marker's not), however the tokens' text came in pieces, whole and streamed alike;
// without the split, the usage has no such detail.
TEST(GenerationResponseReasoning, UsageCountsTheReasoningsTokens) {
  // (text, tokens that made it): 0 for text a flush released, 2 for text held back a token.
  const std::vector<std::pair<std::string, int32_t>> pieces = {
      {"<think>", 1},  {"\nGreet", 2}, {" them.", 2}, {"\n", 1},
      {"</think>", 1}, {"\n\nHel", 2}, {"lo!", 1}};
  const auto usage_of = [&](bool stream, bool split, bool opened = false) {
    ResponseHeader header{"chatcmpl-1", 1, "m", 7, "fp"};
    GenerationResponse response(ResponseEncoder(Endpoint::kChatCompletions, header, true), stream,
                                false, 1, {}, {}, {}, nullptr,
                                ReasoningReading{split, kThink, opened});
    std::string events;
    for (const auto& [text, tokens] : pieces) {
      if (opened && text == "<think>") continue;  // the prompt opened it
      events += response.text(0, text, tokens);
    }
    events += response.finish(0, FinishReason::kStop, Usage{3, 10, 0});
    json usage;
    if (stream) {
      for (const std::string& data : testing::sse_data(events))
        if (data != "[DONE]" && !json::parse(data)["usage"].is_null())
          usage = json::parse(data)["usage"];
    } else {
      usage = json::parse(response.whole_body())["usage"];
    }
    return usage;
  };
  for (bool stream : {false, true}) {
    const json usage = usage_of(stream, true);
    EXPECT_EQ(usage["completion_tokens"], 10) << usage.dump();
    EXPECT_EQ(usage["completion_tokens_details"], json({{"reasoning_tokens", 6}})) << usage.dump();
    EXPECT_EQ(usage_of(stream, true, true)["completion_tokens_details"]["reasoning_tokens"], 5);
    EXPECT_FALSE(usage_of(stream, false).contains("completion_tokens_details")) << stream;
  }
}

}  // namespace
}  // namespace tandem::server::TANDEM_UNITY_ID
