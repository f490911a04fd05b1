// /v1/responses requests read as the chat requests they amount to: the messages, tools,
// output constraint and sampling a Responses body gives equal those of the chat body that
// says the same, and every refusal names the Responses field the client sent.
#include <gtest/gtest.h>

#include <string>
#include <variant>

#include "protocol/completion_request.h"
#include "protocol/responses_api_request.h"

namespace tandem::TANDEM_UNITY_ID {
namespace {

using Json = nlohmann::ordered_json;

ResponsesRequest parsed(const std::string& body) {
  auto result = parse_responses_request(body);
  if (auto* error = std::get_if<ApiError>(&result)) {
    ADD_FAILURE() << body << " -> " << error->message;
    return {};
  }
  return std::get<ResponsesRequest>(std::move(result));
}

CompletionRequest chat(const std::string& body) {
  auto result = parse_completion_request(body, Endpoint::kChatCompletions);
  if (auto* error = std::get_if<ApiError>(&result)) {
    ADD_FAILURE() << body << " -> " << error->message;
    return {};
  }
  return std::get<CompletionRequest>(std::move(result));
}

ApiError refused(const std::string& body) {
  auto result = parse_responses_request(body);
  if (auto* error = std::get_if<ApiError>(&result)) return *error;
  ADD_FAILURE() << "accepted: " << body;
  return {};
}

TEST(ResponsesApiRequest, InstructionsAndInputAreTheChatMessages) {
  const ResponsesRequest r = parsed(
      R"({"instructions": "Be brief.", "input": "Hi", "max_output_tokens": 9, "seed": 4,
          "temperature": 0.5, "top_p": 0.9})");
  const CompletionRequest c = chat(
      R"({"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}],
          "max_completion_tokens": 9, "seed": 4, "temperature": 0.5, "top_p": 0.9})");
  EXPECT_EQ(r.request.endpoint, Endpoint::kResponses);
  EXPECT_EQ(r.request.chat.messages, c.chat.messages);
  EXPECT_EQ(r.request.max_tokens, c.max_tokens);
  EXPECT_EQ(r.request.seed, c.seed);
  EXPECT_EQ(r.request.sampling.temperature, c.sampling.temperature);
  EXPECT_EQ(r.request.sampling.top_p, c.sampling.top_p);
  EXPECT_EQ(r.request.n, 1);
  EXPECT_FALSE(r.request.max_tokens == std::nullopt);
  // Without max_output_tokens the output runs to the context, as chat's does.
  EXPECT_EQ(parsed(R"({"input": "Hi"})").request.max_tokens, std::nullopt);
}

TEST(ResponsesApiRequest, ItemsBecomeTurnsWithACallsTurnJoinedToItsText) {
  const ResponsesRequest r = parsed(R"({"input": [
      {"role": "developer", "content": "Rules."},
      {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Add"},
                                                      {"type": "input_text", "text": " 2+2"}]},
      {"role": "assistant", "content": [{"type": "output_text", "text": "Calling."}]},
      {"type": "function_call", "call_id": "c1", "name": "add", "arguments": "{\"a\": 2}"},
      {"type": "function_call", "call_id": "c2", "name": "add", "arguments": "{}"},
      {"type": "function_call_output", "call_id": "c1", "output": "4"},
      {"type": "function_call_output", "call_id": "c2",
       "output": [{"type": "input_text", "text": "0"}]}]})");
  const CompletionRequest c = chat(R"({"messages": [
      {"role": "system", "content": "Rules."},
      {"role": "user", "content": [{"type": "text", "text": "Add"}, {"type": "text", "text": " 2+2"}]},
      {"role": "assistant", "content": [{"type": "text", "text": "Calling."}], "tool_calls": [
         {"id": "c1", "type": "function", "function": {"name": "add", "arguments": "{\"a\": 2}"}},
         {"id": "c2", "type": "function", "function": {"name": "add", "arguments": "{}"}}]},
      {"role": "tool", "tool_call_id": "c1", "content": "4"},
      {"role": "tool", "tool_call_id": "c2", "content": "0"}]})");
  EXPECT_EQ(r.request.chat.messages, c.chat.messages);
  // A call with no text before it opens its own assistant turn.
  const ResponsesRequest alone = parsed(R"({"input": [{"role": "user", "content": "x"},
      {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"}]})");
  const CompletionRequest alone_chat = chat(R"({"messages": [{"role": "user", "content": "x"},
      {"role": "assistant", "content": null, "tool_calls": [
         {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}]})");
  EXPECT_EQ(alone.request.chat.messages, alone_chat.chat.messages);
}

// A reasoning item sent back (as a store: false client sends a turn's whole output) is the
// reasoning_content of the assistant turn it begins.
TEST(ResponsesApiRequest, AReasoningItemIsItsTurnsReasoningContent) {
  const ResponsesRequest r = parsed(R"({"input": [
      {"role": "user", "content": "Hi"},
      {"type": "reasoning", "id": "rs_1", "summary": [],
       "content": [{"type": "reasoning_text", "text": "Greet back."}]},
      {"type": "message", "role": "assistant", "id": "msg_1", "status": "completed",
       "content": [{"type": "output_text", "text": "Hello!", "annotations": []}]},
      {"role": "user", "content": "Add 1"},
      {"type": "reasoning", "summary": [{"type": "summary_text", "text": "Use add."}]},
      {"type": "function_call", "call_id": "c1", "name": "add", "arguments": "{}"},
      {"type": "function_call_output", "call_id": "c1", "output": "1"}]})");
  const CompletionRequest c = chat(R"({"messages": [
      {"role": "user", "content": "Hi"},
      {"role": "assistant", "content": [{"type": "text", "text": "Hello!"}],
       "reasoning_content": "Greet back."},
      {"role": "user", "content": "Add 1"},
      {"role": "assistant", "content": null, "reasoning_content": "Use add.", "tool_calls": [
         {"id": "c1", "type": "function", "function": {"name": "add", "arguments": "{}"}}]},
      {"role": "tool", "tool_call_id": "c1", "content": "1"}]})");
  EXPECT_EQ(r.request.chat.messages, c.chat.messages);
}

TEST(ResponsesApiRequest, ToolsChoiceAndFormatTakeTheirChatForms) {
  const ResponsesRequest r = parsed(R"({"input": "x",
      "tools": [{"type": "function", "name": "f", "description": "d",
                 "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}}}],
      "tool_choice": {"type": "function", "name": "f"}, "parallel_tool_calls": false})");
  const CompletionRequest c = chat(R"({"messages": [{"role": "user", "content": "x"}],
      "tools": [{"type": "function", "function": {"name": "f", "description": "d",
                 "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}}}}],
      "tool_choice": {"type": "function", "function": {"name": "f"}}, "parallel_tool_calls": false})");
  EXPECT_EQ(r.request.chat.tools, c.chat.tools);
  EXPECT_TRUE(r.request.tools.constrains());
  EXPECT_EQ(r.request.tools.choice.mode, ToolChoice::Mode::kNamed);
  EXPECT_FALSE(r.request.tools.parallel);
  EXPECT_EQ(r.echo["tool_choice"], Json::parse(R"({"type": "function", "name": "f"})"));
  EXPECT_EQ(r.echo["parallel_tool_calls"], false);

  const ResponsesRequest schema = parsed(R"({"input": "x", "text": {"format": {
      "type": "json_schema", "name": "n", "schema": {"type": "object"}, "strict": true}}})");
  EXPECT_TRUE(schema.request.constraint.active());
  EXPECT_EQ(schema.echo["text"]["format"]["name"], "n");
  EXPECT_TRUE(parsed(R"({"input": "x", "text": {"format": {"type": "json_object"}}})")
                  .request.constraint.active());
  EXPECT_FALSE(parsed(R"({"input": "x", "text": {"format": {"type": "text"}}})")
                   .request.constraint.active());
}

TEST(ResponsesApiRequest, LogprobsComeWithTheirInclude) {
  const ResponsesRequest r =
      parsed(R"({"input": "x", "include": ["message.output_text.logprobs"], "top_logprobs": 3})");
  EXPECT_EQ(r.request.sampling.logprobs, 3);
  EXPECT_EQ(r.echo["top_logprobs"], 3);
  EXPECT_EQ(parsed(R"({"input": "x", "include": ["message.output_text.logprobs"]})")
                .request.sampling.logprobs,
            0);
  // Values that include nothing made here are accepted, and change nothing.
  EXPECT_LT(parsed(R"({"input": "x", "include": ["reasoning.encrypted_content"]})")
                .request.sampling.logprobs,
            0);
}

TEST(ResponsesApiRequest, TheEchoRepeatsTheRequestAndStoresNothing) {
  const ResponsesRequest r = parsed(R"({"input": "x", "instructions": "I", "temperature": 0.7,
      "max_output_tokens": 5, "metadata": {"k": "v"}, "user": "u", "store": false})");
  EXPECT_EQ(r.echo["instructions"], "I");
  EXPECT_EQ(r.echo["temperature"], 0.7);  // as sent, not as the float it is read into
  EXPECT_EQ(r.echo["max_output_tokens"], 5);
  EXPECT_EQ(r.echo["metadata"], Json::parse(R"({"k": "v"})"));
  EXPECT_EQ(r.echo["user"], "u");
  EXPECT_EQ(r.echo["store"], false);
  EXPECT_EQ(r.echo["previous_response_id"], nullptr);
  EXPECT_EQ(r.echo["tools"], Json::array());
  EXPECT_EQ(r.echo["text"]["format"]["type"], "text");
  EXPECT_EQ(r.request.user, "u");
}

TEST(ResponsesApiRequest, ReasoningEffortIsTheTemplatesAndNoneAsksItNotToThink) {
  const ResponsesRequest r = parsed(R"({"input": "x", "reasoning": {"effort": "none"}})");
  EXPECT_EQ(r.request.chat.template_kwargs["enable_thinking"], false);
  EXPECT_EQ(r.echo["reasoning"]["effort"], "none");
  const ResponsesRequest kept = parsed(R"({"input": "x", "reasoning": {"effort": "none"},
      "chat_template_kwargs": {"enable_thinking": false, "x": 1}})");
  EXPECT_EQ(kept.request.chat.template_kwargs["x"], 1);  // the request's own
  // A kwarg that says the opposite is refused, in the field the client sent.
  EXPECT_EQ(refused(R"({"input": "x", "reasoning": {"effort": "none"},
      "chat_template_kwargs": {"enable_thinking": true}})")
                .param,
            "reasoning.effort");
  EXPECT_EQ(parsed(R"({"input": "x", "reasoning": {"effort": null}})").echo["reasoning"]["effort"],
            nullptr);
  // Every level is the template's reasoning_effort (the server refuses it where the
  // template reads none of it).
  const ResponsesRequest high = parsed(R"({"input": "x", "reasoning": {"effort": "high"}})");
  EXPECT_EQ(high.request.chat.reasoning_effort, "high");
  EXPECT_EQ(high.request.chat.template_kwargs["reasoning_effort"], "high");
  EXPECT_FALSE(high.request.chat.template_kwargs.contains("enable_thinking"));
}

// Every field this endpoint does not name itself reaches the chat parser, which honours or
// refuses it as chat does.
TEST(ResponsesApiRequest, ChatsExtensionsPassThrough) {
  const ResponsesRequest r = parsed(R"({"input": "x", "guided_regex": "[a-z]+",
      "documents": [{"title": "t", "text": "d"}], "seed": 3, "top_k": 5, "min_p": 0.1,
      "repetition_penalty": 1.2, "stop": ["\n"], "cache_salt": "s"})");
  EXPECT_TRUE(r.request.constraint.active());
  EXPECT_EQ(r.request.constraint.param, "guided_regex");
  EXPECT_EQ(r.request.chat.documents.size(), 1u);
  EXPECT_EQ(r.request.seed, 3u);
  EXPECT_EQ(r.request.sampling.top_k, 5);
  EXPECT_EQ(r.request.sampling.repetition_penalty, 1.2f);
  EXPECT_EQ(r.request.stop, std::vector<std::string>{"\n"});
  EXPECT_EQ(r.request.cache_salt, "s");
  EXPECT_TRUE(parsed(R"({"input": "x", "ignore_eos": true})").request.sampling.ignore_eos);
  EXPECT_EQ(parsed(R"({"input": "x", "n": 1})").request.n, 1);  // chat's neutral n: accepted
}

// A required or named call is the turn: text.format, the message's shape, has no message
// to govern (OpenAI accepts both; the Agents SDK sends both for an agent with an output
// type on its first turn).
TEST(ResponsesApiRequest, AFormatBesideToolsIsForTheMessage) {
  const std::string tools = R"("tools": [{"type": "function", "name": "f",
      "parameters": {"type": "object"}}], "text": {"format": {"type": "json_schema",
      "name": "o", "schema": {"type": "object"}}})";
  for (const char* choice : {R"("required")", R"({"type": "function", "name": "f"})"}) {
    const ResponsesRequest r =
        parsed(R"({"input": "x", "tool_choice": )" + std::string(choice) + ", " + tools + "}");
    EXPECT_TRUE(r.request.tools.constrains()) << choice;
    EXPECT_FALSE(r.request.constraint.active()) << choice;
    EXPECT_EQ(r.echo["text"]["format"]["type"], "json_schema") << choice;
  }
  EXPECT_TRUE(parsed(R"({"input": "x", "tool_choice": "none", )" + tools + "}")
                  .request.constraint.active());
  // Under "auto" the format's grammar makes the answer the shaped message (no call).
  for (const char* choice : {R"("tool_choice": "auto", )", ""}) {
    const ResponsesRequest r = parsed(R"({"input": "x", )" + std::string(choice) + tools + "}");
    EXPECT_TRUE(r.request.constraint.active()) << choice;
    EXPECT_FALSE(r.request.tools.constrains()) << choice;
  }
}

struct Refusal {
  const char* body;
  const char* param;
};

TEST(ResponsesApiRequest, EachRefusalNamesTheResponsesField) {
  const Refusal kCases[] = {
      {R"({"input": "x", "previous_response_id": "resp_1"})", "previous_response_id"},
      {R"({"input": "x", "conversation": "conv_1"})", "conversation"},
      {R"({"input": "x", "store": true})", "store"},
      {R"({"input": "x", "background": true})", "background"},
      {R"({"input": "x", "prompt": {"id": "p"}})", "prompt"},
      {R"({"input": "x", "max_tool_calls": 2})", "max_tool_calls"},
      {R"({"input": "x", "truncation": "auto"})", "truncation"},
      {R"({"input": "x", "reasoning": {"effort": "maximum"}})", "reasoning.effort"},
      {R"({"input": "x", "stream": true, "stream_options": {"include_obfuscation": true}})",
       "stream_options.include_obfuscation"},
      {R"({"input": "x", "include": ["everything"]})", "include[0]"},
      {R"({"input": "x", "top_logprobs": 2})", "top_logprobs"},
      {R"({"input": "x", "text": {"verbosity": "low"}})", "text.verbosity"},
      {R"({"input": "x", "text": {"format": {"type": "yaml"}}})", "text.format.type"},
      {R"({"input": "x", "text": {"format": {"type": "json_schema", "name": "n", "schema": 5}}})",
       "text.format.schema"},
      {R"({"input": "x", "tools": [{"type": "web_search"}]})", "tools[0].type"},
      {R"({"input": "x", "tools": [{"type": "function", "name": "f", "parameters": 3}]})",
       "tools[0].parameters"},
      {R"({"input": "x", "tool_choice": {"type": "file_search"}})", "tool_choice.type"},
      {R"({"input": "x", "tools": [{"type": "function", "name": "f"}],
           "tool_choice": {"type": "function", "name": "g"}})",
       "tool_choice.name"},
      {R"({"input": 5})", "input"},
      {R"({"input": []})", "input"},
      {R"({})", "input"},
      {R"({"input": [{"type": "item_reference", "id": "msg_1"}]})", "input[0].type"},
      {R"({"input": [{"type": "reasoning", "encrypted_content": "gAAA"}]})",
       "input[0].encrypted_content"},
      {R"({"input": [{"type": "reasoning", "content": [{"type": "output_text", "text": "x"}]}]})",
       "input[0].content[0].type"},
      {R"({"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "u"}]}]})",
       "input[0].content[0].type"},
      {R"({"input": [{"role": "tool", "content": "x"}]})", "input[0].role"},
      {R"({"input": [{"role": "robot", "content": "x"}]})", "input[0].role"},
      {R"({"instructions": "I", "input": [{"role": "user", "content": "a"},
           {"role": "user", "content": 7}]})",
       "input[1].content"},
      {R"({"input": [{"type": "function_call", "name": "f", "arguments": "{}"}]})",
       "input[0].call_id"},
      {R"({"input": [{"role": "user", "content": "a"},
           {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{"}]})",
       "input[1].arguments"},
      {R"({"instructions": 3, "input": "x"})", "instructions"},
      {R"({"input": "x", "max_output_tokens": 0})", "max_output_tokens"},
      {R"({"input": "x", "temperature": -1})", "temperature"},
      {R"({"input": "x", "mirostat": 3})", "mirostat"},
      {R"({"input": "x", "post_sampling_probs": true})", "post_sampling_probs"},
      {R"({"input": "x", "messages": []})", "messages"},
      {R"({"input": "x", "response_format": {"type": "json_object"}})", "response_format"},
      {R"({"input": "x", "max_tokens": 5})", "max_tokens"},
      {R"({"input": "x", "max_completion_tokens": 5})", "max_completion_tokens"},
      {R"({"input": "x", "logprobs": true})", "logprobs"},
      {R"({"input": "x", "n": 2})", "n"},
      {R"({"input": "x", "context_management": [{"type": "compaction"}]})", "context_management"},
      {R"({"input": "x", "reasoning": {"effort": 5}})", "reasoning.effort"},
      {R"({"input": "x", "reasoning": {"effort": "low"}, "reasoning_effort": "high"})",
       "reasoning_effort"},
      {R"({"input": "x", "guided_regex": 5})", "guided_regex"},
  };
  for (const Refusal& c : kCases) {
    const ApiError error = refused(c.body);
    EXPECT_EQ(error.status, 400) << c.body;
    EXPECT_EQ(error.param, c.param) << c.body << " -> " << error.message;
    // The message speaks of the field the client sent, not of its chat form.
    EXPECT_EQ(error.message.find("messages["), std::string::npos) << error.message;
    if (std::string(c.param) != "response_format") {
      EXPECT_EQ(error.message.find("response_format"), std::string::npos) << error.message;
    }
    EXPECT_EQ(error.message.find(".function."), std::string::npos) << error.message;
    EXPECT_EQ(error.message.find("completions"), std::string::npos) << error.message;
  }
}

}  // namespace
}  // namespace tandem::TANDEM_UNITY_ID
