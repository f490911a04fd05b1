// What the end-to-end tests of /v1/responses and /v1/messages share
// (responses_http_test.cpp, responses_http_tools_test.cpp, reasoning_http_test.cpp,
// messages_http_test.cpp): reading typed event streams with the checks every stream must
// pass, the refusal reader, the texts to compare with chat's, and the steering that makes a
// random model write reasoning markers.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/server/server_test_support.h"

namespace tandem::testing::responses_http {

using nlohmann::json;

inline constexpr const char* kRoute = "/v1/responses";

// The whole response's one message text.
inline std::string text_of(const json& response) {
  const json& output = response.at("output");
  EXPECT_EQ(output.size(), 1u) << response.dump();
  EXPECT_EQ(output.at(0).at("type"), "message") << response.dump();
  return output.at(0).at("content").at(0).at("text");
}

inline std::string chat_text(const json& chat) {
  return chat.at("choices").at(0).at("message").at("content");
}

// The output items without the ids made from the response's id (each response has its own).
inline json without_ids(json output) {
  for (json& item : output) {
    item.erase("id");
    item.erase("call_id");
  }
  return output;
}

struct Event {
  std::string type;  // the "event:" line's
  json data;
};

// A streamed body's typed events ("event:" and "data:" lines, as /v1/responses and
// /v1/messages stream them), after checking what every such stream must be: a 200 of
// text/event-stream, each event an "event:" line and a "data:" line whose type is the
// event's, and no [DONE].
inline std::vector<Event> typed_events(const HttpResult& result) {
  EXPECT_EQ(result.status, 200) << result.body;
  EXPECT_EQ(result.headers.count("content-type") ? result.headers.at("content-type") : "",
            "text/event-stream");
  EXPECT_EQ(result.body.find("[DONE]"), std::string::npos) << result.body;
  std::vector<Event> events;
  const std::string& body = result.body;
  size_t start = 0;
  while (start < body.size()) {
    const size_t end = body.find("\n\n", start);
    if (end == std::string::npos) {
      ADD_FAILURE() << "an event without its blank line: " << body.substr(start);
      break;
    }
    std::string_view block(body.data() + start, end - start);
    start = end + 2;
    std::string type;
    std::string data;
    while (!block.empty()) {
      const size_t eol = block.find('\n');
      const std::string_view line = block.substr(0, eol);
      if (line.starts_with("event: ")) {
        EXPECT_TRUE(type.empty()) << "two event lines: " << block;
        type = line.substr(7);
      } else if (line.starts_with("data: ")) {
        EXPECT_TRUE(data.empty()) << "two data lines: " << block;
        data = line.substr(6);
      } else {
        ADD_FAILURE() << "a line that is neither event nor data: " << line;
      }
      if (eol == std::string_view::npos) break;
      block.remove_prefix(eol + 1);
    }
    EXPECT_FALSE(type.empty()) << "an event without its event line: " << data;
    const json parsed = json::parse(data);
    EXPECT_EQ(parsed.value("type", ""), type) << data;
    events.push_back(Event{type, parsed});
  }
  return events;
}

// A /v1/responses stream's events: typed_events, numbered by sequence_number 0, 1, 2, ...
inline std::vector<Event> events_of(const HttpResult& result) {
  std::vector<Event> events = typed_events(result);
  for (size_t i = 0; i < events.size(); ++i) {
    EXPECT_EQ(events[i].data.value("sequence_number", int64_t{-1}), static_cast<int64_t>(i))
        << events[i].data.dump();
  }
  return events;
}

inline std::vector<std::string> types_of(const std::vector<Event>& events) {
  std::vector<std::string> types;
  for (const Event& event : events) types.push_back(event.type);
  return types;
}

inline size_t count_of(const std::vector<Event>& events, std::string_view type) {
  size_t n = 0;
  for (const Event& event : events) n += event.type == type;
  return n;
}

inline HttpResult stream(uint16_t port, json body) {
  body["stream"] = true;
  return fetch(port, "POST", kRoute, body.dump());
}

// The error of a refused request, after checking it is a 400 with an error object.
inline json refused(uint16_t port, const json& body) {
  const HttpResult result = fetch(port, "POST", kRoute, body.dump());
  EXPECT_EQ(result.status, 400) << body.dump() << " -> " << result.body;
  if (result.status != 400) return json::object();
  const json error = result.json().at("error");
  EXPECT_TRUE(error.at("message").is_string()) << result.body;
  return error;
}

inline int32_t eos_id(uint16_t port) {
  const json tokens =
      post_json(port, "/tokenize", {{"prompt", "<|eos|>"}, {"add_special_tokens", false}});
  EXPECT_EQ(tokens["tokens"].size(), 1u) << tokens.dump();
  if (tokens["tokens"].size() != 1) return -1;
  return tokens["tokens"][0].get<int32_t>();
}

// Steering a random model into a thinking model's markers (reasoning_http_test,
// messages_http_test): its tokens are bytes, so no bias alone makes it write a marker; a
// grammar lets it write only blanks, "a" and whole markers, and logit_bias makes the
// markers' tokens and the fillers the likely ones among them (their ids read through
// /tokenize).
inline constexpr std::string_view kThinkOpen = "<think>";
inline constexpr std::string_view kThinkClose = "</think>";

inline std::vector<int32_t> tokens_of(uint16_t port, std::string_view text) {
  const json tokens =
      post_json(port, "/tokenize", {{"content", std::string(text)}, {"add_special", false}});
  EXPECT_TRUE(tokens["tokens"].is_array()) << tokens.dump();
  return tokens.value("tokens", std::vector<int32_t>{});
}

// The markers' tokens and the fillers' made likely: the markers' tokens most, so that
// markers come often. Only the grammar's characters can be written, so the biases rank those.
inline json steering_bias(uint16_t port) {
  json bias = json::object();
  for (std::string_view marker : {kThinkOpen, kThinkClose}) {
    for (int32_t id : tokens_of(port, marker)) bias[std::to_string(id)] = 2;
  }
  for (std::string_view filler : {"a", "\n", " ", "\t"}) {
    for (int32_t id : tokens_of(port, filler)) {
      if (!bias.contains(std::to_string(id))) bias[std::to_string(id)] = 1;
    }
  }
  return bias;
}

// Blanks, "a" and whole markers, in any order and number.
inline std::string steering_grammar() {
  return "root ::= item*\nitem ::= \"a\" | \" \" | \"\\n\" | \"\\t\" | \"\\r\" | \"" +
         std::string(kThinkOpen) + "\" | \"" + std::string(kThinkClose) + "\"\n";
}

}  // namespace tandem::testing::responses_http
