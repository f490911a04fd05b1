#include "protocol/tool_calls/tool_call_format.h"

namespace tandem {
namespace {

bool has(std::string_view text, std::string_view needle) {
  return text.find(needle) != std::string_view::npos;
}

}  // namespace

const char* tool_call_format_name(ToolCallFormat format) {
  switch (format) {
    case ToolCallFormat::kHermes:
      return "hermes";
    case ToolCallFormat::kLlama3:
      return "llama3";
    case ToolCallFormat::kMistral:
      return "mistral";
    case ToolCallFormat::kMistralArgs:
      return "mistral-args";
    case ToolCallFormat::kJson:
      break;
  }
  return "json";
}

ToolCallFormat detect_tool_call_format(std::string_view source) {
  // Qwen3-Coder's "<tool_call>\n<function=name>" and GLM's "<tool_call>name<arg_key>" are
  // XML inside the block, not Hermes JSON.
  if (has(source, "<tool_call>") && !has(source, "<function=") && !has(source, "<arg_key>")) {
    return ToolCallFormat::kHermes;
  }
  if (has(source, "[TOOL_CALLS]")) {
    return has(source, "[ARGS]") ? ToolCallFormat::kMistralArgs : ToolCallFormat::kMistral;
  }
  // Llama 3.1's and 3.2's templates: the header tokens, and tool calls written as a JSON
  // object with "parameters" (3.1 also names <|python_tag|> for its built-in tools).
  if (has(source, "<|python_tag|>") ||
      (has(source, "<|start_header_id|>") && has(source, "\"parameters\""))) {
    return ToolCallFormat::kLlama3;
  }
  return ToolCallFormat::kJson;
}

bool tool_call_marker_is_control_token(ToolCallFormat format) {
  return format == ToolCallFormat::kMistral || format == ToolCallFormat::kMistralArgs ||
         format == ToolCallFormat::kLlama3;
}

ToolCallFraming tool_call_framing(ToolCallFormat format) {
  // As each family's template writes an assistant's calls (and its parser reads them).
  switch (format) {
    case ToolCallFormat::kHermes:
      return {"", "\n", "", "<tool_call>\n{\"name\": \"", "\", \"arguments\": ", "}\n</tool_call>"};
    case ToolCallFormat::kLlama3:
      return {"", "; ", "", "{\"name\": \"", "\", \"parameters\": ", "}"};
    case ToolCallFormat::kMistral:
      return {"[TOOL_CALLS][", ", ", "]", "{\"name\": \"", "\", \"arguments\": ", "}"};
    case ToolCallFormat::kMistralArgs:
      return {"", "", "", "[TOOL_CALLS]", "[ARGS]", ""};
    case ToolCallFormat::kJson:
      break;
  }
  return {"[", ", ", "]", "{\"name\": \"", "\", \"arguments\": ", "}"};
}

}  // namespace tandem
