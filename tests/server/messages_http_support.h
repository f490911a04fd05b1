// What the /v1/messages end-to-end tests share (messages_http_test.cpp and
// messages_http_tools_test.cpp): the server (the demo model with Qwen3's chat template from
// ../shared: Hermes tool calls and <think> reasoning), the stream reader with the checks
// every Messages stream must pass, and the answer's pieces as chat's would be.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/server/responses_http_support.h"

namespace tandem::testing::messages_http {

using nlohmann::json;
using responses_http::Event;

inline constexpr const char* kMessages = "/v1/messages";
inline constexpr const char* kChat = "/v1/chat/completions";
inline const std::filesystem::path kTemplate = "chat-templates/Qwen-Qwen3-0.6B.jinja";

inline ServerProcess* messages_server() {
  static const std::unique_ptr<ServerProcess> server = []() -> std::unique_ptr<ServerProcess> {
    const auto shared = shared_dir();
    if (!shared || !std::filesystem::is_regular_file(*shared / kTemplate)) return nullptr;
    return std::make_unique<ServerProcess>(
        demo_model(), std::vector<std::string>{"--chat-template", (*shared / kTemplate).string(),
                                               "--kv-tokens", "65536"});
  }();
  return server.get();
}

#define REQUIRE_MESSAGES_SERVER()                                                             \
  do {                                                                                        \
    if (::tandem::testing::messages_http::messages_server() == nullptr)                       \
      GTEST_SKIP() << "../shared/" << ::tandem::testing::messages_http::kTemplate.string()    \
                   << " is absent: no chat template with tools and reasoning to serve these " \
                      "tests";                                                                \
  } while (0)

// A message's pieces, whole or put together from its stream.
struct Message {
  std::string thinking;            // the thinking block's, empty when none
  std::string text;                // the text blocks', joined
  json tool_uses = json::array();  // {id, name, input} each
  json stop_reason;
  json stop_sequence;
  json usage;
  std::vector<std::string> block_types;  // in index order
};

inline Message whole_message(uint16_t port, const json& body) {
  const json answer = post_json(port, kMessages, body);
  Message out;
  EXPECT_EQ(answer.value("type", ""), "message") << answer.dump();
  EXPECT_EQ(answer.value("role", ""), "assistant") << answer.dump();
  EXPECT_TRUE(answer.value("id", "").starts_with("msg_")) << answer.dump();
  for (const json& block : answer.value("content", json::array())) {
    const std::string type = block.at("type");
    out.block_types.push_back(type);
    if (type == "thinking") out.thinking += block.at("thinking").get<std::string>();
    if (type == "text") out.text += block.at("text").get<std::string>();
    if (type == "tool_use") {
      out.tool_uses.push_back(
          {{"id", block.at("id")}, {"name", block.at("name")}, {"input", block.at("input")}});
    }
  }
  out.stop_reason = answer.value("stop_reason", json());
  out.stop_sequence = answer.value("stop_sequence", json("absent"));
  out.usage = answer.value("usage", json());
  return out;
}

// The stream's events laid end to end, after checking their order: message_start (its usage
// the end's input and cache reads) and ping;
// each block started, filled by deltas of its kind (tool_use: one input_json_delta) at its
// index and stopped before the next starts; message_delta; message_stop.
inline Message streamed_message(uint16_t port, json body) {
  body["stream"] = true;
  const std::vector<Event> events =
      responses_http::typed_events(fetch(port, "POST", kMessages, body.dump()));
  Message out;
  if (events.size() < 4) {
    ADD_FAILURE() << "too few events";
    return out;
  }
  EXPECT_EQ(events[0].type, "message_start");
  EXPECT_EQ(events[0].data["message"]["content"], json::array());
  EXPECT_EQ(events[1].type, "ping");
  EXPECT_EQ(events[events.size() - 2].type, "message_delta");
  EXPECT_EQ(events.back().type, "message_stop");
  int open = -1;
  std::string partial_json;
  for (size_t i = 2; i + 2 < events.size(); ++i) {
    const json& data = events[i].data;
    const std::string& type = events[i].type;
    if (type == "content_block_start") {
      EXPECT_EQ(open, -1) << "a block started inside another: " << data.dump();
      open = data["index"];
      EXPECT_EQ(open, static_cast<int>(out.block_types.size())) << data.dump();
      out.block_types.push_back(data["content_block"]["type"]);
      if (out.block_types.back() == "tool_use") {
        EXPECT_EQ(data["content_block"]["input"], json::object());
        out.tool_uses.push_back(
            {{"id", data["content_block"]["id"]}, {"name", data["content_block"]["name"]}});
        partial_json.clear();
      }
    } else if (type == "content_block_delta") {
      EXPECT_EQ(data["index"], open) << data.dump();
      const json& delta = data["delta"];
      const std::string& block = out.block_types.at(static_cast<size_t>(open));
      if (block == "thinking") out.thinking += delta.at("thinking").get<std::string>();
      if (block == "text") out.text += delta.at("text").get<std::string>();
      if (block == "tool_use") partial_json += delta.at("partial_json").get<std::string>();
      EXPECT_EQ(delta["type"], block == "tool_use" ? "input_json_delta" : block + "_delta");
    } else if (type == "content_block_stop") {
      EXPECT_EQ(data["index"], open) << data.dump();
      if (open >= 0 && out.block_types.at(static_cast<size_t>(open)) == "tool_use") {
        out.tool_uses.back()["input"] = json::parse(partial_json);
      }
      open = -1;
    } else {
      ADD_FAILURE() << "an event out of place: " << type;
    }
  }
  EXPECT_EQ(open, -1) << "a block left open";
  const json& end = events[events.size() - 2].data;
  out.stop_reason = end["delta"]["stop_reason"];
  out.stop_sequence = end["delta"]["stop_sequence"];
  out.usage = end["usage"];
  // message_start already splits the prompt into new and cached tokens as the end does.
  const json& start_usage = events[0].data["message"]["usage"];
  EXPECT_EQ(start_usage["input_tokens"], out.usage["input_tokens"]);
  EXPECT_EQ(start_usage["cache_read_input_tokens"], out.usage["cache_read_input_tokens"]);
  return out;
}

// The chat request's answer: content, reasoning_content, finish_reason, usage.
struct ChatAnswer {
  std::string content;
  std::string reasoning;
  std::string finish;
  json usage;
};

inline ChatAnswer chat_answer(uint16_t port, const json& body) {
  const json answer = post_json(port, kChat, body);
  ChatAnswer out;
  if (!answer.contains("choices")) return out;
  const json& message = answer["choices"][0]["message"];
  if (message["content"].is_string()) out.content = message["content"];
  out.reasoning = message.value("reasoning_content", "");
  out.finish = answer["choices"][0]["finish_reason"];
  out.usage = answer["usage"];
  return out;
}

// A chat body as /v1/messages sends its request on: the template asked not to think
// (Anthropic's default without `thinking`) and the reasoning split off.
inline json as_messages_send_it(json chat) {
  chat["chat_template_kwargs"] = {{"enable_thinking", false}};
  chat["reasoning_format"] = "deepseek";
  return chat;
}

// The prompt's tokens as the message's usage splits them (input plus cache reads).
inline int64_t prompt_tokens_of(const json& usage) {
  return usage.value("input_tokens", int64_t{-1}) + usage.value("cache_read_input_tokens", 0);
}

inline int64_t counted_tokens(uint16_t port, json body) {
  body.erase("max_tokens");
  const json counted = post_json(port, "/v1/messages/count_tokens", body);
  return counted.value("input_tokens", int64_t{-1});
}

// An Anthropic error body's error, after checking the status and the shape.
inline json anthropic_error(const HttpResult& result, int status) {
  EXPECT_EQ(result.status, status) << result.body;
  const json body = json::parse(result.body, nullptr, false);
  EXPECT_EQ(body.value("type", ""), "error") << result.body;
  if (!body.contains("error")) return json::object();
  EXPECT_TRUE(body["error"]["message"].is_string()) << result.body;
  EXPECT_FALSE(body.contains("param")) << result.body;
  return body["error"];
}

}  // namespace tandem::testing::messages_http
