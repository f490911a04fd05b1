#include "protocol/tool_calls/tool_call_format.h"

#include <algorithm>

namespace tandem {
namespace {

bool has(std::string_view text, std::string_view needle) {
  return text.find(needle) != std::string_view::npos;
}

// splitmix64's finalizer: every input bit reaches every output bit.
uint64_t mix(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Nine base-62 digits of a hash of the response key, the choice and the call.
std::string alphanumeric_id(std::string_view response_key, int32_t choice, size_t call) {
  uint64_t hash = 0xcbf29ce484222325ull;  // FNV-1a over the key, then mixed
  for (const char c : response_key)
    hash = (hash ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
  hash = mix(hash ^ mix(static_cast<uint64_t>(static_cast<uint32_t>(choice)) + 1));
  hash = mix(hash ^ mix(static_cast<uint64_t>(call) + 0x9e3779b97f4a7c15ull));
  static constexpr std::string_view kDigits =
      "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
  std::string id(9, '0');
  for (char& digit : id) {
    digit = kDigits[hash % kDigits.size()];
    hash /= kDigits.size();
  }
  return id;
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
    case ToolCallFormat::kQwenXml:
      return "qwen3-coder";
    case ToolCallFormat::kGlmXml:
      return "glm";
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
  if (has(source, "<tool_call>") && has(source, "<function=") && has(source, "<parameter=")) {
    return ToolCallFormat::kQwenXml;
  }
  if (has(source, "<tool_call>") && has(source, "<arg_key>") && has(source, "<arg_value>")) {
    return ToolCallFormat::kGlmXml;
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
    case ToolCallFormat::kQwenXml:  // framed as the plain JSON array (framed_call_format)
    case ToolCallFormat::kGlmXml:
    case ToolCallFormat::kJson:
      break;
  }
  return {"[", ", ", "]", "{\"name\": \"", "\", \"arguments\": ", "}"};
}

ToolCallFormat framed_call_format(ToolCallFormat format) {
  const bool xml = format == ToolCallFormat::kQwenXml || format == ToolCallFormat::kGlmXml;
  return xml ? ToolCallFormat::kJson : format;
}

std::string tool_call_id(ToolCallFormat format, std::string_view response_key, int32_t choice,
                         size_t call) {
  if (format == ToolCallFormat::kMistral || format == ToolCallFormat::kMistralArgs)
    return alphanumeric_id(response_key, choice, call);
  return "call_" + std::string(response_key) + "_" + std::to_string(choice) + "_" +
         std::to_string(call);
}

std::string mistral_call_id(std::string_view id) {
  const bool fits =
      id.size() == 9 && std::all_of(id.begin(), id.end(), [](char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
      });
  return fits ? std::string(id) : alphanumeric_id(id, -1, 0);
}

}  // namespace tandem
