// The published chat templates of the tool-calling families (../shared/chat-templates):
// the format each one's source shows is detected, and a request's tools reach the template
// (rendered with them, the tool's name, description and parameters appear in the prompt
// as that family writes them). The oracle has no case with tools, so these check for the
// family's own markup rather than a byte-exact render.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "protocol/chat_messages.h"
#include "protocol/chat_prompt.h"
#include "protocol/tool_calls/tool_call_format.h"
#include "protocol/tool_calls/tool_call_parser.h"
#include "protocol/tool_calls/tool_fields.h"
#include "tests/common/test_support.h"

namespace tandem::TANDEM_UNITY_ID {
namespace {

using nlohmann::ordered_json;

std::string template_source(const std::string& name) {
  std::ifstream in(*testing::shared_dir() / "chat-templates" / (name + ".jinja"));
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

const ordered_json kTools = ordered_json::parse(R"([{"type": "function", "function": {
  "name": "get_weather", "description": "Current weather in a city",
  "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                 "required": ["city"]}}}])");

std::string render_with_tools(const std::string& source) {
  auto compiled = JinjaChatTemplate::compile(source);
  if (auto* error = std::get_if<ChatTemplateError>(&compiled)) return "ERROR " + error->describe();
  ChatRenderOptions options;
  options.tools = kTools;
  options.bos_token = "<s>";
  options.eos_token = "</s>";
  options.now = [] { return jinja::DateTime{2024, 7, 26, 12, 0, 0}; };
  const ordered_json messages = ordered_json::parse(
      R"([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Weather in Paris?"}])");
  auto rendered = std::get<JinjaChatTemplate>(compiled).render(messages, options);
  if (auto* error = std::get_if<ChatTemplateError>(&rendered)) return "ERROR " + error->describe();
  return join_segments(std::get<std::vector<PromptSegment>>(rendered));
}

struct Family {
  const char* template_name;
  ToolCallFormat format;
  const char* tools_markup;  // how the family's template introduces the tools
};

TEST(ToolTemplates, FamiliesAreDetectedAndTheirTemplatesRenderTheTools) {
  TANDEM_REQUIRE_SHARED();
  const Family families[] = {
      {"Qwen-Qwen2.5-7B-Instruct", ToolCallFormat::kHermes, "<tools>\n{\"type\": \"function\""},
      {"Qwen-Qwen3-0.6B", ToolCallFormat::kHermes, "<tools>\n{\"type\": \"function\""},
      {"meta-llama-Llama-3.1-8B-Instruct", ToolCallFormat::kLlama3, "\"name\": \"get_weather\""},
      {"meta-llama-Llama-3.2-3B-Instruct", ToolCallFormat::kLlama3, "\"name\": \"get_weather\""},
      {"mistralai-Mistral-Nemo-Instruct-2407", ToolCallFormat::kMistral, "[AVAILABLE_TOOLS]"},
      {"Mistral-Small-3.2-24B-Instruct-2506", ToolCallFormat::kMistralArgs, "[AVAILABLE_TOOLS]"},
      {"Qwen3-Coder", ToolCallFormat::kQwenXml, "<tools>"},
  };
  for (const Family& family : families) {
    SCOPED_TRACE(family.template_name);
    const std::string source = template_source(family.template_name);
    ASSERT_FALSE(source.empty());
    EXPECT_EQ(detect_tool_call_format(source), family.format);
    const std::string prompt = render_with_tools(source);
    EXPECT_EQ(prompt.find("ERROR"), std::string::npos) << prompt;
    EXPECT_NE(prompt.find(family.tools_markup), std::string::npos) << prompt;
    EXPECT_NE(prompt.find("get_weather"), std::string::npos) << prompt;
    EXPECT_NE(prompt.find("Current weather in a city"), std::string::npos) << prompt;
  }
}

// The next turn of a conversation in which the model called a tool: the assistant message
// with the call as the response gave it (`id`) and the tool's answer (`tool_call_id`),
// as a client sends them back, rendered by the template. An error's text, or "".
std::string render_next_turn(const std::string& source, const std::string& id) {
  auto compiled = JinjaChatTemplate::compile(source);
  if (auto* error = std::get_if<ChatTemplateError>(&compiled)) return error->describe();
  ordered_json body = ordered_json::parse(R"({"messages": [
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": null, "tool_calls": [{"id": "", "type": "function",
     "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]},
    {"role": "tool", "tool_call_id": "", "content": "21 C"}]})");
  body["tools"] = kTools;
  body["messages"][1]["tool_calls"][0]["id"] = id;
  body["messages"][2]["tool_call_id"] = id;
  auto inputs = parse_apply_template_request(body.dump());
  if (auto* error = std::get_if<ApiError>(&inputs)) return error->message;
  auto rendered = render_chat_request(std::get<JinjaChatTemplate>(compiled),
                                      std::get<ChatInputs>(inputs), "<s>", "</s>");
  if (auto* error = std::get_if<ApiError>(&rendered)) return error->message;
  return "";
}

// Mistral's templates refuse a call id that is not 9 alphanumerics: the ids tandem gives
// Mistral's calls render in the next turn (the ids of the other formats would not).
TEST(ToolTemplates, MistralTemplatesAcceptTheCallIdsTandemGivesThem) {
  TANDEM_REQUIRE_SHARED();
  const Family mistrals[] = {
      {"mistralai-Mistral-Nemo-Instruct-2407", ToolCallFormat::kMistral, ""},
      {"Mistral-Small-3.2-24B-Instruct-2506", ToolCallFormat::kMistralArgs, ""},
  };
  for (const Family& family : mistrals) {
    SCOPED_TRACE(family.template_name);
    const std::string source = template_source(family.template_name);
    ASSERT_FALSE(source.empty());
    for (int32_t choice : {0, 3}) {
      for (size_t call : {0u, 1u}) {
        const std::string id =
            tool_call_id(family.format, "489b54d60031ee79e4d860992df7346e", choice, call);
        EXPECT_EQ(render_next_turn(source, id), "") << id;
      }
    }
    const std::string other = tool_call_id(ToolCallFormat::kHermes, "489b54d6", 0, 0);
    EXPECT_NE(render_next_turn(source, other).find("length 9"), std::string::npos);
    // Another provider's ids, sent back, render once given Mistral's shape.
    for (const std::string& foreign : {other, std::string("toolu_01A09q90qw90lq917835lq9")}) {
      EXPECT_EQ(render_next_turn(source, mistral_call_id(foreign)), "") << foreign;
    }
  }
}

// A family's own template as the oracle of its XML format: an assistant turn with calls of
// every value type, rendered by the published template, reads back as the calls sent.
// `turn_open` opens the assistant's turn, `turn_close` ends it.
void expect_rendered_calls_read_back(const std::string& name, ToolCallFormat format,
                                     const std::string& turn_open, const std::string& turn_close) {
  SCOPED_TRACE(name);
  const std::string source = template_source(name);
  ASSERT_EQ(detect_tool_call_format(source), format);
  auto compiled = JinjaChatTemplate::compile(source);
  ASSERT_TRUE(std::holds_alternative<JinjaChatTemplate>(compiled));
  const ordered_json tools = ordered_json::parse(R"([{"type": "function", "function": {
    "name": "plan", "parameters": {"type": "object", "properties": {
      "city": {"type": "string"}, "days": {"type": "integer"}, "scale": {"type": "number"},
      "metric": {"type": "boolean"}, "filters": {"type": "object"},
      "hours": {"type": "array"}, "limit": {"type": ["integer", "null"]}}}}}])");
  const ordered_json arguments = ordered_json::parse(
      R"({"city": "S\u00e3o \"Paulo\"\nnorth <b>", "days": 3, "scale": 1.5, "metric": true,
          "filters": {"rain": false, "wind": [1, 2]}, "hours": [6, 12], "limit": null})");
  ordered_json body = {{"messages", ordered_json::array()}, {"tools", tools}};
  body["messages"].push_back({{"role", "user"}, {"content", "Plan it."}});
  body["messages"].push_back(
      {{"role", "assistant"},
       {"content", "On it."},
       {"tool_calls",
        {{{"id", "call_1"},
          {"type", "function"},
          {"function", {{"name", "plan"}, {"arguments", arguments.dump()}}}},
         {{"id", "call_2"},
          {"type", "function"},
          {"function", {{"name", "plan"}, {"arguments", R"({"days": 1})"}}}}}}});
  body["messages"].push_back({{"role", "user"}, {"content", "Thanks."}});
  auto inputs = parse_apply_template_request(body.dump());
  ASSERT_TRUE(std::holds_alternative<ChatInputs>(inputs));
  auto rendered = render_chat_request(std::get<JinjaChatTemplate>(compiled),
                                      std::get<ChatInputs>(inputs), "", "");
  ASSERT_TRUE(std::holds_alternative<std::vector<PromptSegment>>(rendered));
  const std::string prompt = join_segments(std::get<std::vector<PromptSegment>>(rendered));
  const size_t start = prompt.find(turn_open);
  ASSERT_NE(start, std::string::npos) << prompt;
  const size_t turn = start + turn_open.size();
  const std::string output = prompt.substr(turn, prompt.find(turn_close, turn) - turn);
  ASSERT_NE(output.find("city"), std::string::npos) << output;
  const ParsedToolCalls parsed =
      parse_tool_calls(format, output, request_fields::read_tool_request(body).functions);
  EXPECT_NE(parsed.content.find("On it."), std::string::npos) << output;
  ASSERT_EQ(parsed.calls.size(), 2u) << output;
  EXPECT_EQ(parsed.calls[0].name, "plan");
  EXPECT_EQ(ordered_json::parse(parsed.calls[0].arguments), arguments) << output;
  EXPECT_EQ(ordered_json::parse(parsed.calls[1].arguments), ordered_json::parse(R"({"days": 1})"));
}

TEST(ToolTemplates, XmlFamiliesRenderedCallsReadBackAsTheCallsSent) {
  TANDEM_REQUIRE_SHARED();
  expect_rendered_calls_read_back("Qwen3-Coder", ToolCallFormat::kQwenXml,
                                  "<|im_start|>assistant\n", "<|im_end|>");
  expect_rendered_calls_read_back("GLM-4.7-Flash", ToolCallFormat::kGlmXml, "<|assistant|>",
                                  "<|user|>");
}

TEST(ToolCallIds, MistralCallIdsKeepAFittingIdAndHashAnyOther) {
  EXPECT_EQ(mistral_call_id("a1B2c3D4e"), "a1B2c3D4e");
  const std::string foreign = mistral_call_id("toolu_01A09q90qw90lq917835lq9");
  EXPECT_EQ(foreign.size(), 9u);
  EXPECT_EQ(
      foreign.find_first_not_of("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"),
      std::string::npos);
  EXPECT_EQ(foreign, mistral_call_id("toolu_01A09q90qw90lq917835lq9"));  // a call = its result
  // Ids that share their last 9 characters stay apart (truncating would make them one).
  EXPECT_NE(mistral_call_id("call_1_abcdefghi"), mistral_call_id("call_2_abcdefghi"));
  EXPECT_NE(mistral_call_id("a1B2c3D4"), mistral_call_id("a1B2c3D4e_"));
}

TEST(ToolCallIds, MistralIdsAreNineAlphanumericsOthersKeepTheirShape) {
  const std::string key = "489b54d60031ee79e4d860992df7346e";
  std::set<std::string> seen;
  for (ToolCallFormat format : {ToolCallFormat::kMistral, ToolCallFormat::kMistralArgs}) {
    for (int32_t choice = 0; choice < 16; ++choice) {
      for (size_t call = 0; call < 16; ++call) {
        const std::string id = tool_call_id(format, key, choice, call);
        EXPECT_EQ(id.size(), 9u) << id;
        EXPECT_EQ(
            id.find_first_not_of("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"),
            std::string::npos)
            << id;
        EXPECT_EQ(id, tool_call_id(format, key, choice, call));  // deterministic
        if (format == ToolCallFormat::kMistral) {
          EXPECT_TRUE(seen.insert(id).second) << id;
        }
      }
    }
    EXPECT_NE(tool_call_id(format, key, 0, 0), tool_call_id(format, "489b54d7", 0, 0));
  }
  for (ToolCallFormat format :
       {ToolCallFormat::kJson, ToolCallFormat::kHermes, ToolCallFormat::kLlama3}) {
    EXPECT_EQ(tool_call_id(format, key, 2, 1), "call_" + key + "_2_1");
  }
}

}  // namespace
}  // namespace tandem::TANDEM_UNITY_ID
