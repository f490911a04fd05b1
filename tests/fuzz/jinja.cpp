// Fuzzes protocol/jinja/ with a template's source as input: compile it, then render it for a
// chat with tools and tool calls. Nothing may escape (errors come back as values), an error
// says what it is, and a render's segments are non-empty and alternate between template
// and input text.

#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "protocol/chat_prompt.h"

namespace {

// A broken invariant is a crash, so libFuzzer saves the input.
void require(bool condition) {
  if (!condition) std::abort();
}

const nlohmann::ordered_json& messages() {
  static const auto json = nlohmann::ordered_json::parse(R"([
    {"role": "system", "content": "Be brief. <|im_end|>"},
    {"role": "user", "content": [{"type": "text", "text": "Weather?"}]},
    {"role": "assistant", "content": "", "reasoning_content": "think",
     "tool_calls": [{"id": "call00001", "type": "function",
                     "function": {"name": "weather", "arguments": {"city": "Oslo", "days": 2}}}]},
    {"role": "tool", "tool_call_id": "call00001", "content": "{\"temp\": -3.5}"},
    {"role": "user", "content": "Thanks"}])");
  return json;
}

tandem::ChatRenderOptions options() {
  tandem::ChatRenderOptions options;
  options.bos_token = "<s>";
  options.eos_token = "</s>";
  options.tools = nlohmann::ordered_json::parse(R"([{"type": "function", "function": {
      "name": "weather", "description": "Weather.", "parameters": {"type": "object",
      "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
      "required": ["city"]}}}])");
  options.now = [] { return tandem::jinja::DateTime{2024, 7, 26, 12, 0, 0}; };
  return options;
}

void check_error(const tandem::ChatTemplateError& error) {
  require(error.kind == tandem::ChatTemplateError::Kind::kRaised || !error.message.empty());
  require(error.line >= 0 && error.column >= 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view source(reinterpret_cast<const char*>(data), size);
  auto compiled = tandem::JinjaChatTemplate::compile(source);
  if (const auto* error = std::get_if<tandem::ChatTemplateError>(&compiled)) {
    require(error->kind == tandem::ChatTemplateError::Kind::kSyntax);
    check_error(*error);
    return 0;
  }
  static const tandem::ChatRenderOptions kOptions = options();
  const auto& chat_template = std::get<tandem::JinjaChatTemplate>(compiled);
  const auto result = chat_template.render(messages(), kOptions);
  if (const auto* error = std::get_if<tandem::ChatTemplateError>(&result)) {
    require(error->kind != tandem::ChatTemplateError::Kind::kSyntax);
    check_error(*error);
    return 0;
  }
  const auto& segments = std::get<std::vector<tandem::PromptSegment>>(result);
  for (size_t i = 0; i < segments.size(); ++i) {
    require(!segments[i].text.empty());
    require(i == 0 || segments[i].from_input != segments[i - 1].from_input);
  }
  return 0;
}
