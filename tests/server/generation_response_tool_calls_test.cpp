// GenerationResponse with tool_choice "auto": the output is read for calls in the family's
// format. Whole: message.tool_calls and finish_reason "tool_calls"; streamed: content held
// back while it may be a call, then the calls as deltas; text that is not a call stays
// content in both, and the streamed content equals the whole response's.
#include "server/generation_response.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/server/server_test_support.h"

namespace tandem::server::TANDEM_UNITY_ID {
namespace {

using nlohmann::json;

GenerationResponse make_response(bool stream, ToolCallFormat format, bool parallel = true,
                                 bool named = false) {
  ResponseHeader header{"chatcmpl-1", 1, "m", 7, "fp"};
  return GenerationResponse(ResponseEncoder(Endpoint::kChatCompletions, header, false), stream,
                            false, 1, {},
                            ToolCallReading{true, format, "x", parallel, named, false, {}});
}

// The output, fed in pieces of `piece` bytes, ending with `reason`.
std::string run(GenerationResponse& response, const std::string& output, size_t piece,
                FinishReason reason = FinishReason::kStop) {
  std::string events = response.opening_events();
  for (size_t at = 0; at < output.size(); at += piece)
    events += response.text(0, output.substr(at, piece));
  events += response.finish(0, reason, Usage{3, 4, 0});
  return events;
}

struct Streamed {
  std::string content;
  json calls = json::array();
  std::string finish;
};

Streamed read_stream(const std::string& events) {
  Streamed out;
  for (const std::string& data : testing::sse_data(events)) {
    if (data == "[DONE]") continue;
    const json chunk = json::parse(data);
    const json& choice = chunk["choices"][0];
    if (choice["finish_reason"].is_string()) out.finish = choice["finish_reason"];
    const json& delta = choice["delta"];
    if (delta.contains("content")) out.content += delta["content"].get<std::string>();
    if (!delta.contains("tool_calls")) continue;
    for (const json& piece : delta["tool_calls"]) {
      const size_t index = piece["index"];
      if (index == out.calls.size()) {
        out.calls.push_back(
            {{"id", piece["id"]},
             {"type", piece["type"]},
             {"function", {{"name", piece["function"]["name"]}, {"arguments", ""}}}});
      }
      out.calls[index]["function"]["arguments"] =
          out.calls[index]["function"]["arguments"].get<std::string>() +
          piece["function"].value("arguments", "");
    }
  }
  return out;
}

TEST(GenerationResponseToolCalls, WholeAndStreamedAgreeOnCallsAndContent) {
  const std::string output =
      "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
      "\"Paris\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1, "
      "\"b\": 2}}\n</tool_call>";
  GenerationResponse whole = make_response(false, ToolCallFormat::kHermes);
  run(whole, output, 5);
  const json body = json::parse(whole.whole_body());
  const json& choice = body["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "tool_calls");
  EXPECT_EQ(choice["message"]["content"], "Let me check.\n");
  const json& calls = choice["message"]["tool_calls"];
  ASSERT_EQ(calls.size(), 2u) << body.dump();
  EXPECT_EQ(calls[0]["id"], "call_x_0_0");
  EXPECT_EQ(calls[0]["type"], "function");
  EXPECT_EQ(calls[0]["function"]["name"], "get_weather");
  EXPECT_EQ(calls[0]["function"]["arguments"], R"({"city":"Paris"})");
  EXPECT_EQ(calls[1]["function"]["arguments"], R"({"a":1,"b":2})");

  for (size_t piece : {1u, 4u, 1000u}) {
    GenerationResponse streamed = make_response(true, ToolCallFormat::kHermes);
    const Streamed got = read_stream(run(streamed, output, piece));
    EXPECT_EQ(got.finish, "tool_calls");
    EXPECT_EQ(got.content, "Let me check.\n");
    EXPECT_EQ(got.calls, calls) << piece;
  }
}

// A named tool_choice's forced call ends with finish_reason "stop", as OpenAI and vLLM
// report it; its call is delivered as any other, whole and streamed.
TEST(GenerationResponseToolCalls, ANamedFunctionsCallFinishesWithStop) {
  const std::string output =
      "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1}}\n</tool_call>";
  GenerationResponse whole = make_response(false, ToolCallFormat::kHermes, true, /*named=*/true);
  run(whole, output, 7);
  EXPECT_EQ(whole.reported_reason(0, FinishReason::kStop), FinishReason::kStop);
  const json body = json::parse(whole.whole_body());
  EXPECT_EQ(body["choices"][0]["finish_reason"], "stop");
  ASSERT_EQ(body["choices"][0]["message"]["tool_calls"].size(), 1u);
  GenerationResponse streamed = make_response(true, ToolCallFormat::kHermes, true, /*named=*/true);
  const Streamed got = read_stream(run(streamed, output, 7));
  EXPECT_EQ(got.finish, "stop");
  EXPECT_EQ(got.calls, body["choices"][0]["message"]["tool_calls"]);
}

TEST(GenerationResponseToolCalls, TextThatIsNotACallStaysContent) {
  for (const std::string& output :
       {std::string("Paris is sunny, 21 C."), std::string("{\"name\": \"f\", \"parameters\": {"),
        std::string("a <tool_call> that never closes")}) {
    for (ToolCallFormat format : {ToolCallFormat::kHermes, ToolCallFormat::kLlama3}) {
      GenerationResponse whole = make_response(false, format);
      run(whole, output, 3);
      const json choice = json::parse(whole.whole_body())["choices"][0];
      EXPECT_EQ(choice["message"]["content"], output);
      EXPECT_FALSE(choice["message"].contains("tool_calls"));
      EXPECT_EQ(choice["finish_reason"], "stop");
      GenerationResponse streamed = make_response(true, format);
      const Streamed got = read_stream(run(streamed, output, 3));
      EXPECT_EQ(got.content, output);
      EXPECT_TRUE(got.calls.empty());
      EXPECT_EQ(got.finish, "stop");
    }
  }
}

TEST(GenerationResponseToolCalls, ALlamaCallCutByTheLengthLimitIsContent) {
  const std::string output = "{\"name\": \"f\", \"parameters\": {\"x\": ";
  GenerationResponse whole = make_response(false, ToolCallFormat::kLlama3);
  run(whole, output, 2, FinishReason::kLength);
  const json choice = json::parse(whole.whole_body())["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "length");
  EXPECT_EQ(choice["message"]["content"], output);
}

// parallel_tool_calls false under "auto": a model that writes two calls gets the first only,
// whole and streamed (OpenAI promises at most one); the second's text is not content.
TEST(GenerationResponseToolCalls, OneCallOnlyWhenParallelToolCallsIsFalse) {
  const std::string output =
      "Both.\n<tool_call>\n{\"name\": \"a\", \"arguments\": {\"x\": 1}}\n</tool_call>\n"
      "<tool_call>\n{\"name\": \"b\", \"arguments\": {}}\n</tool_call>";
  GenerationResponse whole = make_response(false, ToolCallFormat::kHermes, false);
  run(whole, output, 7);
  const json choice = json::parse(whole.whole_body())["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "tool_calls");
  EXPECT_EQ(choice["message"]["content"], "Both.\n");
  const json& calls = choice["message"]["tool_calls"];
  ASSERT_EQ(calls.size(), 1u) << choice.dump();
  EXPECT_EQ(calls[0]["function"]["name"], "a");
  EXPECT_EQ(calls[0]["function"]["arguments"], R"({"x":1})");
  for (size_t piece : {1u, 1000u}) {
    GenerationResponse streamed = make_response(true, ToolCallFormat::kHermes, false);
    const Streamed got = read_stream(run(streamed, output, piece));
    EXPECT_EQ(got.finish, "tool_calls");
    EXPECT_EQ(got.content, "Both.\n");
    EXPECT_EQ(got.calls, calls) << piece;
  }
}

// drop_cut_call (/v1/messages): a call the limit cut short is not content, alone or after
// complete calls, whole and streamed alike; without it (chat) its markup is content.
TEST(GenerationResponseToolCalls, ACutCallIsDroppedFromTheContentWhereAsked) {
  const std::string complete =
      "Hi.\n<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>\n";
  const std::string cut = "<tool_call>\n{\"name\": \"b\", \"argu";
  for (const std::string& output : {cut, complete + cut}) {
    for (bool drop : {false, true}) {
      SCOPED_TRACE(output + (drop ? " (dropped)" : " (kept)"));
      const auto reading = [&] {
        ToolCallReading tools{true, ToolCallFormat::kHermes, "x", true, false, false, {}};
        tools.drop_cut_call = drop;
        return tools;
      };
      ResponseHeader header{"chatcmpl-1", 1, "m", 7, "fp"};
      GenerationResponse whole(ResponseEncoder(Endpoint::kChatCompletions, header, false), false,
                               false, 1, {}, reading());
      run(whole, output, 4, FinishReason::kLength);
      const json message = json::parse(whole.whole_body())["choices"][0]["message"];
      const std::string content = message["content"].is_string() ? message["content"] : "";
      EXPECT_EQ(content.find("<tool_call>") != std::string::npos, !drop) << content;
      EXPECT_EQ(message.contains("tool_calls"), output != cut);
      GenerationResponse streamed(ResponseEncoder(Endpoint::kChatCompletions, header, false), true,
                                  false, 1, {}, reading());
      const Streamed got = read_stream(run(streamed, output, 3, FinishReason::kLength));
      EXPECT_EQ(got.content, content);
      EXPECT_EQ(got.calls.size(), output == cut ? 0u : 1u);
    }
  }
}

// Mistral's calls get 9 alphanumeric characters as ids (its templates refuse any other),
// the same whole and streamed, different per call.
TEST(GenerationResponseToolCalls, MistralCallIdsAreNineAlphanumerics) {
  const std::string output =
      "[TOOL_CALLS][{\"name\": \"a\", \"arguments\": {}}, {\"name\": \"b\", \"arguments\": {}}]";
  GenerationResponse whole = make_response(false, ToolCallFormat::kMistral);
  run(whole, output, 5);
  const json calls = json::parse(whole.whole_body())["choices"][0]["message"]["tool_calls"];
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0]["id"], tool_call_id(ToolCallFormat::kMistral, "x", 0, 0));
  EXPECT_EQ(calls[1]["id"], tool_call_id(ToolCallFormat::kMistral, "x", 0, 1));
  EXPECT_NE(calls[0]["id"], calls[1]["id"]);
  for (const json& call : calls) {
    const std::string id = call["id"];
    EXPECT_EQ(id.size(), 9u) << id;
    EXPECT_EQ(
        id.find_first_not_of("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"),
        std::string::npos)
        << id;
  }
  GenerationResponse streamed = make_response(true, ToolCallFormat::kMistral);
  EXPECT_EQ(read_stream(run(streamed, output, 3)).calls, calls);
}

}  // namespace
}  // namespace tandem::server::TANDEM_UNITY_ID
