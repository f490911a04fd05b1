// The published chat templates of the tool-calling families (../shared/chat-templates):
// the format each one's source shows is detected, and a request's tools reach the template
// (rendered with them, the tool's name, description and parameters appear in the prompt
// as that family writes them). The oracle has no case with tools, so these check for the
// family's own markup rather than a byte-exact render.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "protocol/chat_prompt.h"
#include "protocol/tool_calls/tool_call_format.h"
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
      {"Qwen3-Coder", ToolCallFormat::kJson, "<tools>"},
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

}  // namespace
}  // namespace tandem::TANDEM_UNITY_ID
