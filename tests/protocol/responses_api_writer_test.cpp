// The /v1/responses writer: the response object, and the event stream whose events, folded
// as a client folds them, end in that same object.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "protocol/responses_api_writer.h"

namespace tandem::TANDEM_UNITY_ID {
namespace {

using Json = nlohmann::ordered_json;

ResponseHeader header() {
  ResponseHeader h;
  h.id = "resp_00ff";
  h.created = 1700000000;
  h.model = "m";
  h.seed = 9;
  h.system_fingerprint = "fp_1";
  return h;
}

Json echo() { return Json{{"instructions", "I"}, {"store", false}, {"tools", Json::array()}}; }

struct Event {
  std::string type;  // the "event:" line's
  Json data;
};

// Splits SSE text into events; each must be "event: T\ndata: {...}\n\n".
std::vector<Event> events_of(const std::string& text) {
  std::vector<Event> events;
  size_t at = 0;
  while (at < text.size()) {
    const size_t end = text.find("\n\n", at);
    EXPECT_NE(end, std::string::npos);
    if (end == std::string::npos) break;
    const std::string block = text.substr(at, end - at);
    const size_t newline = block.find('\n');
    EXPECT_EQ(block.rfind("event: ", 0), 0u) << block;
    EXPECT_EQ(block.compare(newline + 1, 6, "data: "), 0) << block;
    events.push_back({block.substr(7, newline - 7), Json::parse(block.substr(newline + 7))});
    at = end + 2;
  }
  return events;
}

Usage usage() { return Usage{7, 3, 2}; }

TEST(ResponsesApiWriter, TheWholeBodyIsTheResponseObject) {
  ResponsesWriter writer(header(), echo());
  const Json body =
      Json::parse(writer.whole_body("Hi there", {}, FinishReason::kStop, usage(), nullptr));
  EXPECT_EQ(body["id"], "resp_00ff");
  EXPECT_EQ(body["object"], "response");
  EXPECT_EQ(body["created_at"], 1700000000);
  EXPECT_EQ(body["status"], "completed");
  EXPECT_EQ(body["incomplete_details"], nullptr);
  EXPECT_EQ(body["instructions"], "I");
  EXPECT_EQ(body["seed"], 9);
  ASSERT_EQ(body["output"].size(), 1u);
  const Json& message = body["output"][0];
  EXPECT_EQ(message["type"], "message");
  EXPECT_EQ(message["id"], "msg_00ff");
  EXPECT_EQ(message["role"], "assistant");
  EXPECT_EQ(message["content"][0]["type"], "output_text");
  EXPECT_EQ(message["content"][0]["text"], "Hi there");
  EXPECT_EQ(body["usage"]["input_tokens"], 7);
  EXPECT_EQ(body["usage"]["output_tokens"], 3);
  EXPECT_EQ(body["usage"]["total_tokens"], 10);
  EXPECT_EQ(body["usage"]["input_tokens_details"]["cached_tokens"], 2);

  ResponsesWriter cut(header(), echo());
  const Json incomplete =
      Json::parse(cut.whole_body("Hi", {}, FinishReason::kLength, usage(), nullptr));
  EXPECT_EQ(incomplete["status"], "incomplete");
  EXPECT_EQ(incomplete["incomplete_details"]["reason"], "max_output_tokens");
  EXPECT_EQ(incomplete["output"][0]["status"], "incomplete");
}

TEST(ResponsesApiWriter, CallsAreFunctionCallItemsAfterTheText) {
  const std::vector<ToolCallOut> calls = {{"call_a", "f", "{\"x\":1}"}, {"call_b", "g", "{}"}};
  ResponsesWriter writer(header(), echo());
  const Json body =
      Json::parse(writer.whole_body("", calls, FinishReason::kToolCalls, usage(), nullptr));
  EXPECT_EQ(body["status"], "completed");
  ASSERT_EQ(body["output"].size(), 2u);  // no empty message beside the calls
  EXPECT_EQ(body["output"][0]["type"], "function_call");
  EXPECT_EQ(body["output"][0]["call_id"], "call_a");
  EXPECT_EQ(body["output"][0]["name"], "f");
  EXPECT_EQ(body["output"][0]["arguments"], "{\"x\":1}");
  EXPECT_NE(body["output"][0]["id"], body["output"][1]["id"]);
  ResponsesWriter with_text(header(), echo());
  const Json both = Json::parse(
      with_text.whole_body("Let me.", calls, FinishReason::kToolCalls, usage(), nullptr));
  ASSERT_EQ(both["output"].size(), 3u);
  EXPECT_EQ(both["output"][0]["type"], "message");
}

// What a client's accumulator does with the events (the official SDK's, in outline): the
// final event's response is the answer, and the deltas rebuild its text and arguments.
void expect_stream_folds_to_body(const std::string& stream_text, const std::string& body_text,
                                 const std::string& final_type) {
  const std::vector<Event> events = events_of(stream_text);
  ASSERT_GE(events.size(), 3u);
  std::string text;
  for (size_t i = 0; i < events.size(); ++i) {
    EXPECT_EQ(events[i].type, events[i].data["type"]);
    EXPECT_EQ(events[i].data["sequence_number"], static_cast<int64_t>(i));
    if (events[i].type == "response.output_text.delta") text += events[i].data["delta"];
  }
  EXPECT_EQ(events[0].type, "response.created");
  EXPECT_EQ(events[0].data["response"]["status"], "in_progress");
  EXPECT_EQ(events[1].type, "response.in_progress");
  EXPECT_EQ(events.back().type, final_type);
  const Json body = Json::parse(body_text);
  EXPECT_EQ(events.back().data["response"], body);
  if (!body["output"].empty() && body["output"][0]["type"] == "message") {
    EXPECT_EQ(text, body["output"][0]["content"][0]["text"]);
  }
  EXPECT_EQ(stream_text.find("[DONE]"), std::string::npos);
}

TEST(ResponsesApiWriter, TheStreamEndsInTheWholeBody) {
  ResponsesWriter streamed(header(), echo());
  std::string stream = streamed.opening_events();
  stream += streamed.text_events("Hel", nullptr);
  stream += streamed.text_events("", nullptr);  // nothing to say: no event
  stream += streamed.text_events("lo", nullptr);
  stream += streamed.closing_events({}, FinishReason::kStop, usage());
  ResponsesWriter whole(header(), echo());
  expect_stream_folds_to_body(stream,
                              whole.whole_body("Hello", {}, FinishReason::kStop, usage(), nullptr),
                              "response.completed");
  const std::vector<Event> events = events_of(stream);
  const std::vector<std::string> expected = {
      "response.created",           "response.in_progress",
      "response.output_item.added", "response.content_part.added",
      "response.output_text.delta", "response.output_text.delta",
      "response.output_text.done",  "response.content_part.done",
      "response.output_item.done",  "response.completed"};
  ASSERT_EQ(events.size(), expected.size());
  for (size_t i = 0; i < events.size(); ++i) EXPECT_EQ(events[i].type, expected[i]);
  EXPECT_EQ(events[6].data["text"], "Hello");
}

TEST(ResponsesApiWriter, AStreamOfCallsOrOfNothingEndsInTheWholeBody) {
  const std::vector<ToolCallOut> calls = {{"call_a", "f", "{\"x\":1}"}};
  ResponsesWriter streamed(header(), echo());
  std::string stream = streamed.opening_events();
  stream += streamed.closing_events(calls, FinishReason::kToolCalls, usage());
  ResponsesWriter whole(header(), echo());
  expect_stream_folds_to_body(
      stream, whole.whole_body("", calls, FinishReason::kToolCalls, usage(), nullptr),
      "response.completed");
  const std::vector<Event> events = events_of(stream);
  EXPECT_EQ(events[2].type, "response.output_item.added");
  EXPECT_EQ(events[2].data["item"]["arguments"], "");
  EXPECT_EQ(events[3].type, "response.function_call_arguments.delta");
  EXPECT_EQ(events[3].data["delta"], "{\"x\":1}");
  EXPECT_EQ(events[4].type, "response.function_call_arguments.done");

  ResponsesWriter empty(header(), echo());
  std::string nothing = empty.opening_events();
  nothing += empty.closing_events({}, FinishReason::kLength, usage());
  ResponsesWriter empty_whole(header(), echo());
  expect_stream_folds_to_body(
      nothing, empty_whole.whole_body("", {}, FinishReason::kLength, usage(), nullptr),
      "response.incomplete");
}

TEST(ResponsesApiWriter, LogprobsRideTheDeltasAndTheMessage) {
  const std::vector<TokenLogprobs> tokens = {
      {{"He", -0.5f, 1}, {{"He", -0.5f, 1}, {"Yo", -1.5f, 2}}},
      {{"y", -0.25f, 3}, {{"y", -0.25f, 3}, {"!", -2.0f, 4}}}};
  const LogprobsPiece first{std::span(tokens).first(1), {}};
  const LogprobsPiece second{std::span(tokens).subspan(1), {}};
  const LogprobsPiece all{tokens, {}};
  ResponsesWriter streamed(header(), echo());
  std::string stream = streamed.opening_events();
  stream += streamed.text_events("He", &first);
  stream += streamed.text_events("y", &second);
  stream += streamed.closing_events({}, FinishReason::kStop, usage());
  ResponsesWriter whole(header(), echo());
  const std::string body = whole.whole_body("Hey", {}, FinishReason::kStop, usage(), &all);
  expect_stream_folds_to_body(stream, body, "response.completed");
  const Json logprobs = Json::parse(body)["output"][0]["content"][0]["logprobs"];
  ASSERT_EQ(logprobs.size(), 2u);
  EXPECT_EQ(logprobs[0]["token"], "He");
  EXPECT_EQ(logprobs[0]["logprob"], -0.5);
  EXPECT_EQ(logprobs[0]["bytes"], Json::parse("[72, 101]"));
  ASSERT_EQ(logprobs[1]["top_logprobs"].size(), 2u);
  EXPECT_EQ(logprobs[1]["top_logprobs"][1]["token"], "!");
}

TEST(ResponsesApiWriter, AFailureIsAnErrorEventThenResponseFailed) {
  ResponsesWriter writer(header(), echo());
  std::string stream = writer.opening_events();
  stream += writer.text_events("Hi", nullptr);
  stream += writer.error_events(api_error_for(ErrorKind::kInternal));
  const std::vector<Event> events = events_of(stream);
  ASSERT_GE(events.size(), 2u);
  const Event& error = events[events.size() - 2];
  EXPECT_EQ(error.type, "error");
  EXPECT_FALSE(error.data["message"].get<std::string>().empty());
  EXPECT_EQ(events.back().type, "response.failed");
  EXPECT_EQ(events.back().data["response"]["status"], "failed");
  EXPECT_EQ(events.back().data["response"]["error"]["message"], error.data["message"]);
  for (size_t i = 0; i < events.size(); ++i)
    EXPECT_EQ(events[i].data["sequence_number"], static_cast<int64_t>(i));
}

TEST(ResponsesApiWriter, ReasoningIsAnItemBeforeTheMessage) {
  ResponsesWriter streamed(header(), echo());
  std::string stream = streamed.opening_events();
  stream += streamed.reasoning_events("Let me");
  stream += streamed.reasoning_events(" think.");
  stream += streamed.text_events("Hi", nullptr);
  stream += streamed.closing_events({}, FinishReason::kStop, usage());
  ResponsesWriter whole(header(), echo());
  const std::string body =
      whole.whole_body("Hi", {}, FinishReason::kStop, usage(), nullptr, "Let me think.");
  expect_stream_folds_to_body(stream, body, "response.completed");
  const Json output = Json::parse(body)["output"];
  ASSERT_EQ(output.size(), 2u);
  EXPECT_EQ(output[0]["type"], "reasoning");
  EXPECT_EQ(output[0]["id"], "rs_00ff");
  EXPECT_EQ(output[0]["status"], "completed");
  EXPECT_EQ(output[0]["content"][0]["type"], "reasoning_text");
  EXPECT_EQ(output[0]["content"][0]["text"], "Let me think.");
  EXPECT_EQ(output[1]["type"], "message");
  std::string reasoning;
  for (const Event& e : events_of(stream)) {
    if (e.type == "response.reasoning_text.delta") reasoning += e.data["delta"];
  }
  EXPECT_EQ(reasoning, "Let me think.");
}

TEST(ResponsesApiWriter, ReasoningCutShortIsTheWholeOutput) {
  ResponsesWriter streamed(header(), echo());
  std::string stream = streamed.opening_events();
  stream += streamed.reasoning_events("Still thinking");
  stream += streamed.closing_events({}, FinishReason::kLength, usage());
  ResponsesWriter whole(header(), echo());
  const std::string body =
      whole.whole_body("", {}, FinishReason::kLength, usage(), nullptr, "Still thinking");
  expect_stream_folds_to_body(stream, body, "response.incomplete");
  const Json output = Json::parse(body)["output"];
  ASSERT_EQ(output.size(), 1u);  // no empty message after a reasoning the limit cut
  EXPECT_EQ(output[0]["status"], "incomplete");
  // Reasoning then calls: the reasoning was complete.
  const std::vector<ToolCallOut> calls = {{"call_a", "f", "{}"}};
  ResponsesWriter streamed_calls(header(), echo());
  std::string with_calls = streamed_calls.opening_events();
  with_calls += streamed_calls.reasoning_events("Call f.");
  with_calls += streamed_calls.closing_events(calls, FinishReason::kToolCalls, usage());
  ResponsesWriter whole_calls(header(), echo());
  const std::string calls_body =
      whole_calls.whole_body("", calls, FinishReason::kToolCalls, usage(), nullptr, "Call f.");
  expect_stream_folds_to_body(with_calls, calls_body, "response.completed");
  EXPECT_EQ(Json::parse(calls_body)["output"].size(), 2u);
}

}  // namespace
}  // namespace tandem::TANDEM_UNITY_ID
