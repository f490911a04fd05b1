// POST /v1/responses over HTTP against a real `tandem serve`: the response object and the
// request's settings it repeats, the same text as the chat request it amounts to (string
// and item inputs), streamed typed events (numbered, in OpenAI's order, no [DONE]) that
// build the whole response, logprobs as chat's, and a prompt past the context.
// responses_http_tools_test.cpp has function tools and the refusals.
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/server/responses_http_support.h"

namespace tandem::testing::TANDEM_UNITY_ID {
namespace {

using namespace responses_http;  // NOLINT(google-build-using-namespace): the tests' own helpers

TEST(ResponsesHttp, TheResponseObjectRepeatsTheRequestsSettings) {
  const uint16_t port = shared_server().port();
  const json tools = json::parse(R"([{"type": "function", "name": "add", "description": "Adds",
      "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}}}])");
  const json format = json::parse(R"({"type": "json_schema", "name": "answer", "strict": true,
      "schema": {"type": "object", "properties": {"x": {"type": "integer"}}}})");
  const json body = {{"instructions", "Answer in JSON."},
                     {"input", "What is x?"},
                     {"max_output_tokens", 6},
                     {"seed", 4},
                     {"temperature", 0.5},
                     {"top_p", 0.8},
                     {"tools", tools},
                     {"tool_choice", "none"},
                     {"text", {{"format", format}}},
                     {"store", false}};
  const json response = post_json(port, kRoute, body);
  ASSERT_TRUE(response.is_object() && response.contains("output")) << response.dump();
  EXPECT_EQ(response["object"], "response");
  EXPECT_TRUE(response["id"].get<std::string>().starts_with("resp_")) << response["id"];
  EXPECT_TRUE(response["created_at"].is_number_integer());
  EXPECT_EQ(response["model"], "tiny");
  const std::string status = response["status"];
  EXPECT_TRUE(status == "completed" || status == "incomplete") << status;
  EXPECT_TRUE(response["error"].is_null());
  if (status == "incomplete") {
    EXPECT_EQ(response["incomplete_details"], json({{"reason", "max_output_tokens"}}));
  } else {
    EXPECT_TRUE(response["incomplete_details"].is_null());
  }

  ASSERT_EQ(response["output"].size(), 1u) << response.dump();
  const json& item = response["output"][0];
  EXPECT_EQ(item["type"], "message");
  EXPECT_EQ(item["role"], "assistant");
  EXPECT_EQ(item["status"], status);
  EXPECT_TRUE(item["id"].get<std::string>().starts_with("msg_")) << item["id"];
  ASSERT_EQ(item["content"].size(), 1u) << item.dump();
  const json& part = item["content"][0];
  EXPECT_EQ(part["type"], "output_text");
  EXPECT_TRUE(part["text"].is_string());
  EXPECT_EQ(part["annotations"], json::array());
  EXPECT_EQ(part["logprobs"], json::array()) << "logprobs were not asked for";

  const json& usage = response["usage"];
  const int64_t input = usage["input_tokens"], output = usage["output_tokens"];
  EXPECT_GT(input, 0);
  EXPECT_GT(output, 0);
  EXPECT_LE(output, 6);
  if (status == "incomplete") {
    EXPECT_EQ(output, 6);
  }
  EXPECT_EQ(usage["total_tokens"], input + output);
  EXPECT_EQ(usage["output_tokens_details"]["reasoning_tokens"], 0);
  EXPECT_LE(usage["input_tokens_details"]["cached_tokens"].get<int64_t>(), input);
  // The prompt is the chat request's, tools included.
  const json chat = post_json(
      port, "/v1/chat/completions",
      {{"messages",
        {{{"role", "system"}, {"content", "Answer in JSON."}},
         {{"role", "user"}, {"content", "What is x?"}}}},
       {"tools",
        {{{"type", "function"},
          {"function",
           {{"name", "add"}, {"description", "Adds"}, {"parameters", tools[0]["parameters"]}}}}}},
       {"max_tokens", 1}});
  EXPECT_EQ(input, chat["usage"]["prompt_tokens"]);

  // The settings, as sent.
  EXPECT_EQ(response["instructions"], "Answer in JSON.");
  EXPECT_EQ(response["max_output_tokens"], 6);
  EXPECT_EQ(response["temperature"], 0.5);
  EXPECT_EQ(response["top_p"], 0.8);
  EXPECT_EQ(response["tools"], tools);
  EXPECT_EQ(response["tool_choice"], "none");
  EXPECT_EQ(response["text"]["format"], format);
  EXPECT_EQ(response["store"], false);
  EXPECT_TRUE(response["previous_response_id"].is_null());

  // Without them: OpenAI's defaults.
  const json plain = post_json(port, kRoute, {{"input", "hi"}, {"max_output_tokens", 2}});
  EXPECT_TRUE(plain["instructions"].is_null());
  EXPECT_EQ(plain["temperature"], 1.0);
  EXPECT_EQ(plain["top_p"], 1.0);
  EXPECT_EQ(plain["tools"], json::array());
  EXPECT_EQ(plain["tool_choice"], "auto");
  EXPECT_EQ(plain["text"]["format"], json({{"type", "text"}}));
  EXPECT_EQ(plain["store"], false);
}

TEST(ResponsesHttp, InstructionsAndInputGiveTheChatRequestsText) {
  const uint16_t port = shared_server().port();
  for (uint64_t seed : {3u, 9u, 21u}) {
    SCOPED_TRACE(seed);
    const json chat = post_json(port, "/v1/chat/completions",
                                {{"messages",
                                  {{{"role", "system"}, {"content", "Be brief."}},
                                   {{"role", "user"}, {"content", "Hello there"}}}},
                                 {"max_tokens", 12},
                                 {"seed", seed}});
    const std::string expected = chat_text(chat);
    const json as_string = post_json(port, kRoute,
                                     {{"instructions", "Be brief."},
                                      {"input", "Hello there"},
                                      {"max_output_tokens", 12},
                                      {"seed", seed}});
    EXPECT_EQ(text_of(as_string), expected);
    EXPECT_EQ(as_string["usage"]["input_tokens"], chat["usage"]["prompt_tokens"]);
    EXPECT_EQ(as_string["usage"]["output_tokens"], chat["usage"]["completion_tokens"]);
    EXPECT_EQ(as_string["status"],
              chat["choices"][0]["finish_reason"] == "length" ? "incomplete" : "completed");

    const json items = json::parse(R"([{"type": "message", "role": "user",
        "content": [{"type": "input_text", "text": "Hello "},
                    {"type": "input_text", "text": "there"}]}])");
    // Parts join as chat's text parts do: compare with chat's parts, then with the string.
    const json chat_parts = post_json(
        port, "/v1/chat/completions",
        {{"messages",
          {{{"role", "system"}, {"content", "Be brief."}},
           {{"role", "user"},
            {"content",
             {{{"type", "text"}, {"text", "Hello "}}, {{"type", "text"}, {"text", "there"}}}}}}},
         {"max_tokens", 12},
         {"seed", seed}});
    const json as_items = post_json(port, kRoute,
                                    {{"instructions", "Be brief."},
                                     {"input", items},
                                     {"max_output_tokens", 12},
                                     {"seed", seed}});
    EXPECT_EQ(text_of(as_items), chat_text(chat_parts));
    const json one_part = json::parse(R"([{"type": "message", "role": "user",
        "content": [{"type": "input_text", "text": "Hello there"}]}])");
    const json as_one_part = post_json(port, kRoute,
                                       {{"instructions", "Be brief."},
                                        {"input", one_part},
                                        {"max_output_tokens", 12},
                                        {"seed", seed}});
    EXPECT_EQ(text_of(as_one_part), expected);
    // An item without a type is a message (OpenAI's EasyInputMessage).
    const json easy = post_json(port, kRoute,
                                {{"instructions", "Be brief."},
                                 {"input", {{{"role", "user"}, {"content", "Hello there"}}}},
                                 {"max_output_tokens", 12},
                                 {"seed", seed}});
    EXPECT_EQ(text_of(easy), expected);
  }
}

// What a message-only stream must be; returns the concatenated deltas.
struct MessageStream {
  std::string deltas;
  json delta_logprobs = json::array();
  json final_event;  // the last event's data
};

MessageStream check_message_stream(const std::vector<Event>& events, bool cut) {
  MessageStream out;
  const size_t deltas = count_of(events, "response.output_text.delta");
  std::vector<std::string> expected = {"response.created", "response.in_progress",
                                       "response.output_item.added", "response.content_part.added"};
  expected.insert(expected.end(), deltas, "response.output_text.delta");
  for (const char* type :
       {"response.output_text.done", "response.content_part.done", "response.output_item.done"}) {
    expected.push_back(type);
  }
  expected.push_back(cut ? "response.incomplete" : "response.completed");
  EXPECT_EQ(types_of(events), expected);
  if (events.size() != expected.size()) return out;

  const json& created = events[0].data["response"];
  const std::string response_id = created["id"];
  EXPECT_TRUE(response_id.starts_with("resp_")) << response_id;
  EXPECT_EQ(created["status"], "in_progress");
  EXPECT_EQ(created["output"], json::array());
  EXPECT_EQ(events[1].data["response"]["id"], response_id);
  const json& added = events[2].data;
  EXPECT_EQ(added["output_index"], 0);
  EXPECT_EQ(added["item"]["type"], "message");
  EXPECT_EQ(added["item"]["role"], "assistant");
  EXPECT_EQ(added["item"]["status"], "in_progress");
  const std::string item_id = added["item"]["id"];
  EXPECT_TRUE(item_id.starts_with("msg_")) << item_id;
  EXPECT_EQ(events[3].data["item_id"], item_id);
  EXPECT_EQ(events[3].data["part"]["type"], "output_text");
  EXPECT_EQ(events[3].data["part"]["text"], "");
  for (size_t i = 4; i < 4 + deltas; ++i) {
    const json& delta = events[i].data;
    EXPECT_EQ(delta["item_id"], item_id);
    EXPECT_EQ(delta["output_index"], 0);
    EXPECT_EQ(delta["content_index"], 0);
    out.deltas += delta["delta"].get<std::string>();
    for (const json& entry : delta.value("logprobs", json::array())) {
      out.delta_logprobs.push_back(entry);
    }
  }
  const json& text_done = events[4 + deltas].data;
  EXPECT_EQ(text_done["item_id"], item_id);
  EXPECT_EQ(text_done["text"], out.deltas);
  const json& part_done = events[5 + deltas].data;
  EXPECT_EQ(part_done["item_id"], item_id);
  EXPECT_EQ(part_done["part"]["text"], out.deltas);
  const json& item_done = events[6 + deltas].data["item"];
  EXPECT_EQ(item_done["id"], item_id);
  EXPECT_EQ(item_done["status"], cut ? "incomplete" : "completed");
  out.final_event = events.back().data;
  const json& final_response = out.final_event["response"];
  EXPECT_EQ(final_response["id"], response_id);
  EXPECT_EQ(final_response["status"], cut ? "incomplete" : "completed");
  if (cut) {
    EXPECT_EQ(final_response["incomplete_details"], json({{"reason", "max_output_tokens"}}));
  } else {
    EXPECT_TRUE(final_response["incomplete_details"].is_null());
  }
  EXPECT_EQ(final_response["output"], json::array({item_done}));
  return out;
}

TEST(ResponsesHttp, StreamedEventsBuildTheWholeResponse) {
  const uint16_t port = shared_server().port();
  const int32_t eos = eos_id(port);
  for (const bool cut : {true, false}) {
    for (uint64_t seed : {1u, 2u, 5u}) {
      SCOPED_TRACE(std::string(cut ? "cut by max_output_tokens" : "ended by EOS") + ", seed " +
                   std::to_string(seed));
      json body = {{"instructions", "Be brief."},
                   {"input", "Tell me a story"},
                   {"seed", seed},
                   {"max_output_tokens", cut ? 10 : 40}};
      if (!cut) {  // a few tokens, then the end of the turn
        body["min_tokens"] = 6;
        body["logit_bias"] = {{std::to_string(eos), 40}};
      }
      const json whole = post_json(port, kRoute, body);
      ASSERT_EQ(whole["status"], cut ? "incomplete" : "completed") << whole.dump();
      const HttpResult streamed = stream(port, body);
      const MessageStream got = check_message_stream(events_of(streamed), cut);
      EXPECT_EQ(got.deltas, text_of(whole));
      EXPECT_FALSE(got.deltas.empty());
      const json& final_response = got.final_event["response"];
      EXPECT_EQ(without_ids(final_response["output"]), without_ids(whole["output"]));
      EXPECT_EQ(final_response["usage"]["input_tokens"], whole["usage"]["input_tokens"]);
      EXPECT_EQ(final_response["usage"]["output_tokens"], whole["usage"]["output_tokens"]);
      EXPECT_EQ(final_response["usage"]["total_tokens"], whole["usage"]["total_tokens"]);
      EXPECT_EQ(final_response["max_output_tokens"], body["max_output_tokens"]);
      EXPECT_EQ(final_response["instructions"], "Be brief.");
    }
  }
}

TEST(ResponsesHttp, IncludedLogprobsAreChatsLogprobs) {
  const uint16_t port = shared_server().port();
  for (uint64_t seed : {11u, 12u}) {
    SCOPED_TRACE(seed);
    const json body = {{"instructions", "Be brief."},
                       {"input", "Hello there"},
                       {"max_output_tokens", 8},
                       {"seed", seed},
                       {"include", {"message.output_text.logprobs"}},
                       {"top_logprobs", 2}};
    const json whole = post_json(port, kRoute, body);
    ASSERT_EQ(whole["output"].size(), 1u) << whole.dump();
    const json& logprobs = whole["output"][0]["content"][0]["logprobs"];
    ASSERT_TRUE(logprobs.is_array()) << whole.dump();
    EXPECT_EQ(logprobs.size(), whole["usage"]["output_tokens"].get<size_t>());
    for (const json& entry : logprobs) {
      EXPECT_TRUE(entry["token"].is_string()) << entry.dump();
      EXPECT_TRUE(entry["logprob"].is_number()) << entry.dump();
      EXPECT_TRUE(entry["bytes"].is_array()) << entry.dump();
      EXPECT_EQ(entry["top_logprobs"].size(), 2u) << entry.dump();
    }
    EXPECT_EQ(whole["top_logprobs"], 2);

    const json chat = post_json(port, "/v1/chat/completions",
                                {{"messages",
                                  {{{"role", "system"}, {"content", "Be brief."}},
                                   {{"role", "user"}, {"content", "Hello there"}}}},
                                 {"max_tokens", 8},
                                 {"seed", seed},
                                 {"logprobs", true},
                                 {"top_logprobs", 2}});
    EXPECT_EQ(logprobs, chat["choices"][0]["logprobs"]["content"]);
    EXPECT_EQ(text_of(whole), chat_text(chat));

    const std::vector<Event> events = events_of(stream(port, body));
    const MessageStream got = check_message_stream(events, whole["status"] == "incomplete");
    EXPECT_EQ(got.delta_logprobs, logprobs);
    ASSERT_GE(events.size(), 4u);
    EXPECT_EQ(events[events.size() - 4].data["logprobs"], logprobs) << "output_text.done's";
  }
}

TEST(ResponsesHttp, ATooLongPromptNamesInput) {
  const uint16_t port = shared_server().port();
  const std::string long_text(600, 'a');  // byte tokens: past the tiny model's 512
  const json bodies[] = {
      {{"input", long_text}},
      {{"input", {{{"role", "user"}, {"content", long_text}}}}},
      {{"instructions", long_text}, {"input", "hi"}},
  };
  for (const json& body : bodies) {
    const json error = refused(port, body);
    EXPECT_EQ(error.value("param", json()), "input") << error.dump();
    EXPECT_EQ(error.value("code", json()), "context_length_exceeded") << error.dump();
  }
}

}  // namespace
}  // namespace tandem::testing::TANDEM_UNITY_ID
