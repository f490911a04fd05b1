#include "protocol/tool_calls/tool_call_parser.h"

#include <algorithm>

#include "protocol/tool_calls/call_readers.h"

namespace tandem {
namespace {

// The text that opens a call wherever it appears.
std::string_view marker_of(ToolCallFormat format) {
  switch (format) {
    case ToolCallFormat::kHermes:
    case ToolCallFormat::kQwenXml:
    case ToolCallFormat::kGlmXml:
      return "<tool_call>";
    case ToolCallFormat::kLlama3:
      return "<|python_tag|>";
    case ToolCallFormat::kMistral:
    case ToolCallFormat::kMistralArgs:
      return "[TOOL_CALLS]";
    case ToolCallFormat::kJson:
      break;
  }
  return {};
}

// Formats whose calls are the whole output: an output that starts (after space) with one of
// these characters may be a call.
std::string_view whole_output_starts(ToolCallFormat format) {
  switch (format) {
    case ToolCallFormat::kHermes:
    case ToolCallFormat::kQwenXml:
    case ToolCallFormat::kGlmXml:
      return {};
    case ToolCallFormat::kLlama3:
      return "{";
    case ToolCallFormat::kMistral:
    case ToolCallFormat::kMistralArgs:
      return "[";
    case ToolCallFormat::kJson:
      break;
  }
  return "[{";
}

}  // namespace

ParsedToolCalls parse_tool_calls(ToolCallFormat format, std::string_view text,
                                 const std::vector<ToolFunction>& functions) {
  switch (format) {
    case ToolCallFormat::kHermes:
      return tool_calls::read_hermes(text);
    case ToolCallFormat::kQwenXml:
      return tool_calls::read_qwen_xml(text, functions);
    case ToolCallFormat::kGlmXml:
      return tool_calls::read_glm_xml(text, functions);
    case ToolCallFormat::kLlama3:
      return tool_calls::read_llama3(text);
    case ToolCallFormat::kMistral:
    case ToolCallFormat::kMistralArgs:
      return tool_calls::read_mistral(text);
    case ToolCallFormat::kJson:
      break;
  }
  return tool_calls::read_json(text);
}

size_t tool_call_safe_prefix(ToolCallFormat format, std::string_view text, size_t released) {
  const std::string_view starts = whole_output_starts(format);
  if (!starts.empty()) {
    const size_t first = text.find_first_not_of(" \t\r\n");
    // All space so far, or the start of a whole-output call: hold everything.
    if (first == std::string_view::npos || starts.find(text[first]) != std::string_view::npos)
      return 0;
  }
  size_t end = text.size();
  const std::string_view marker = marker_of(format);
  if (!marker.empty()) {
    const size_t found = text.find(marker);
    if (found != std::string_view::npos) {
      end = found;
    } else {
      // A suffix that may grow into the marker is held.
      for (size_t n = std::min(marker.size() - 1, text.size()); n > 0; --n) {
        if (text.substr(text.size() - n) == marker.substr(0, n)) {
          end = text.size() - n;
          break;
        }
      }
    }
  }
  // Space before a call is not content (parse_tool_calls trims it), so it waits for what
  // follows.
  while (end > 0 && tool_calls::is_space(text[end - 1])) --end;
  return end > released ? end - released : 0;
}

}  // namespace tandem
