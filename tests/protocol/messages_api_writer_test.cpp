// The /v1/messages writer: the message object, and the event stream whose events, folded as
// Anthropic's SDKs fold them (MessageStream), end in that same object; stop reasons, usage's
// cache split and the error shape.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "protocol/messages_api_writer.h"

namespace tandem::TANDEM_UNITY_ID {
namespace {

using Json = nlohmann::ordered_json;

ResponseHeader header() {
  ResponseHeader h;
  h.id = "msg_00ff";
  h.created = 1700000000;
  h.model = "m";
  h.seed = 9;
  h.system_fingerprint = "fp_1";
  return h;
}

// prompt 7 (2 of them from the cache), 3 generated.
Usage usage() { return Usage{7, 3, 2}; }

// Splits SSE text into (type, data) events, checking each is "event: T\ndata: {...}\n\n" whose
// data's type is T.
std::vector<std::pair<std::string, Json>> events_of(const std::string& text) {
  std::vector<std::pair<std::string, Json>> events;
  size_t at = 0;
  while (at < text.size()) {
    const size_t end = text.find("\n\n", at);
    EXPECT_NE(end, std::string::npos);
    if (end == std::string::npos) break;
    const std::string block = text.substr(at, end - at);
    const size_t newline = block.find('\n');
    EXPECT_EQ(block.rfind("event: ", 0), 0u) << block;
    EXPECT_EQ(block.compare(newline + 1, 6, "data: "), 0) << block;
    events.emplace_back(block.substr(7, newline - 7), Json::parse(block.substr(newline + 7)));
    EXPECT_EQ(events.back().second["type"], events.back().first);
    at = end + 2;
  }
  return events;
}

// The SDK's accumulation: message_start's message, blocks started at their index and filled
// by their deltas (a tool_use's input parsed from its partial_json at its stop),
// message_delta's stop and usage.
Json fold(const std::string& stream) {
  Json message;
  std::string partial;
  for (const auto& [type, data] : events_of(stream)) {
    if (type == "message_start") {
      message = data["message"];
    } else if (type == "content_block_start") {
      EXPECT_EQ(data["index"], message["content"].size());
      message["content"].push_back(data["content_block"]);
      partial.clear();
    } else if (type == "content_block_delta") {
      Json& block = message["content"].at(data["index"].get<size_t>());
      const Json& delta = data["delta"];
      if (delta["type"] == "text_delta")
        block["text"] = block["text"].get<std::string>() + delta["text"].get<std::string>();
      if (delta["type"] == "thinking_delta") {
        block["thinking"] =
            block["thinking"].get<std::string>() + delta["thinking"].get<std::string>();
      }
      if (delta["type"] == "input_json_delta") partial += delta["partial_json"].get<std::string>();
    } else if (type == "content_block_stop") {
      Json& block = message["content"].at(data["index"].get<size_t>());
      if (block["type"] == "tool_use") block["input"] = Json::parse(partial);
    } else if (type == "message_delta") {
      message["stop_reason"] = data["delta"]["stop_reason"];
      message["stop_sequence"] = data["delta"]["stop_sequence"];
      message["usage"] = data["usage"];
    }
  }
  return message;
}

struct Case {
  std::string reasoning;
  std::string text;
  std::vector<ToolCallOut> calls;
  FinishReason finish;
  std::string stop;
  const char* stop_reason;
};

TEST(MessagesWriter, TheFoldedStreamIsTheWholeMessage) {
  const std::vector<ToolCallOut> one = {{"call_1", "f", R"({"a":1,"b":[true]})"}};
  const Case cases[] = {
      {"", "Hello there", {}, FinishReason::kStop, "", "end_turn"},
      {"Hmm.", "Hi", {}, FinishReason::kStop, "END", "stop_sequence"},
      {"", "Cut", {}, FinishReason::kLength, "", "max_tokens"},
      {"Plan.", "Calling.", one, FinishReason::kToolCalls, "", "tool_use"},
      {"", "", one, FinishReason::kStop, "", "tool_use"},  // a forced call ends with "stop"
      {"", "", one, FinishReason::kToolCalls, "</x>", "stop_sequence"},  // a stop cut after it
      {"", "", {}, FinishReason::kStop, "", "end_turn"},
      {"Thinking only", "", {}, FinishReason::kLength, "", "max_tokens"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text + " / " + c.stop_reason);
    MessagesWriter streamer(header(), 7);
    std::string stream = streamer.opening_events();
    stream += streamer.reasoning_events(c.reasoning.substr(0, 2));
    stream += streamer.reasoning_events(c.reasoning.size() > 2 ? c.reasoning.substr(2) : "");
    stream += streamer.text_events(c.text.substr(0, 1), nullptr);
    stream += streamer.text_events(c.text.size() > 1 ? c.text.substr(1) : "", nullptr);
    stream += streamer.closing_events(c.calls, c.finish, usage(), c.stop);
    MessagesWriter writer(header(), 7);
    const Json whole = Json::parse(
        writer.whole_body(c.text, c.calls, c.finish, usage(), nullptr, c.reasoning, c.stop));
    EXPECT_EQ(fold(stream), whole);
    EXPECT_EQ(whole["stop_reason"], c.stop_reason);
    EXPECT_EQ(whole["stop_sequence"], c.stop.empty() ? Json() : Json(c.stop));
    EXPECT_EQ(whole["id"], "msg_00ff");
    EXPECT_EQ(whole["type"], "message");
    EXPECT_EQ(whole["role"], "assistant");
    EXPECT_EQ(whole["seed"], 9);
    // At least one block, the thinking first.
    ASSERT_FALSE(whole["content"].empty());
    if (!c.reasoning.empty()) {
      EXPECT_EQ(whole["content"][0]["type"], "thinking");
    }
    if (!c.calls.empty()) {
      EXPECT_EQ(whole["content"].back()["input"], Json::parse(c.calls[0].arguments));
    }
  }
}

// message_start waits for the admission, whose cached tokens it reports as the final usage
// does; a second admission (after a preemption) sends nothing more.
TEST(MessagesWriter, UsageSplitsThePromptIntoInputAndCacheReads) {
  MessagesWriter writer(header(), 7);
  EXPECT_EQ(writer.opening_events(), "");
  const auto start = events_of(writer.prompt_cached(2));
  ASSERT_EQ(start.size(), 2u);
  EXPECT_EQ(start[0].first, "message_start");
  EXPECT_EQ(start[1].first, "ping");
  EXPECT_EQ(start[0].second["message"]["usage"],
            Json::parse(R"({"input_tokens": 5, "cache_creation_input_tokens": 0,
                            "cache_read_input_tokens": 2, "output_tokens": 0})"));
  EXPECT_EQ(writer.prompt_cached(2), "");
  EXPECT_EQ(events_of(writer.text_events("x", nullptr))[0].first, "content_block_start");
  // Content before any admission (none was reported) still comes after a message_start.
  MessagesWriter unadmitted(header(), 7);
  const auto first = events_of(unadmitted.text_events("x", nullptr));
  ASSERT_FALSE(first.empty());
  EXPECT_EQ(first[0].first, "message_start");
  EXPECT_EQ(first[0].second["message"]["usage"]["input_tokens"], 7);
  const Json whole = Json::parse(writer.whole_body("x", {}, FinishReason::kStop, usage(), nullptr));
  EXPECT_EQ(whole["usage"], Json::parse(R"({"input_tokens": 5, "cache_creation_input_tokens": 0,
                                            "cache_read_input_tokens": 2, "output_tokens": 3})"));
}

TEST(MessagesWriter, ErrorsTakeAnthropicsShapeAndTypes) {
  const std::pair<ApiError, const char*> cases[] = {
      {bad_request("'x' is bad.", "x"), "invalid_request_error"},
      {unauthorized(), "authentication_error"},
      {model_not_found("m2"), "not_found_error"},
      {payload_too_large("big"), "request_too_large"},
      {overloaded(), "overloaded_error"},
      {internal_error(), "api_error"},
  };
  for (const auto& [error, type] : cases) {
    const Json body = Json::parse(anthropic_error_body(error));
    Json expected{{"type", type}, {"message", error.message}};
    if (!error.code.empty()) expected["details"] = {{"error_code", error.code}};
    EXPECT_EQ(body, (Json{{"type", "error"}, {"error", expected}}));
  }
  // The SDKs' threads go on without one on this code, naming what is unsupported.
  const ApiError thread{400, "invalid_request_error", "no", "thread", "thread_unsupported_request"};
  EXPECT_EQ(
      Json::parse(anthropic_error_body(thread))["error"]["details"],
      Json::parse(R"({"error_code": "thread_unsupported_request", "unsupported": ["thread"]})"));

  MessagesWriter writer(header(), 7);
  const auto events = events_of(writer.error_events(overloaded()));
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].first, "error");
  EXPECT_EQ(events[0].second["error"]["type"], "overloaded_error");
}

}  // namespace
}  // namespace tandem::TANDEM_UNITY_ID
