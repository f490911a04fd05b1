// How a model family writes tool calls in its output, detected from its chat template's
// source (as llama.cpp's common/chat.cpp and vLLM's tool parsers tell them apart), and the
// text around the calls' JSON, which both the output grammar (tool_choice "required" or a
// named function) and the parser (tool_call_parser.h) follow.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tandem {

enum class ToolCallFormat {
  // No family recognized: the calls as a JSON array of {"name", "arguments"} objects
  // (a single such object is read too).
  kJson,
  // Hermes, Qwen2.5, Qwen3: "<tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>",
  // one block per call.
  kHermes,
  // Llama 3.1+: {"name": ..., "parameters": {...}} ("arguments" read too), optionally after
  // <|python_tag|>; several calls separated by "; ".
  kLlama3,
  // Mistral: [TOOL_CALLS][{"name": ..., "arguments": {...}}, ...] (v3 to v7 tokenizers).
  kMistral,
  // Mistral templates that write [ARGS] (v11 tokenizers): [TOOL_CALLS]name[ARGS]{...} per
  // call. Read by the same parser as kMistral, which takes either form.
  kMistralArgs,
  // Qwen3-Coder: "<tool_call>\n<function=NAME>\n<parameter=P>\nVALUE\n</parameter>\n...
  // </function>\n</tool_call>", each value as text, read back by its parameter's schema type
  // (as vLLM's qwen3_coder parser reads them).
  kQwenXml,
  // GLM 4.5+: "<tool_call>NAME<arg_key>K</arg_key><arg_value>V</arg_value>...</tool_call>",
  // strings as they are and any other value as JSON (vLLM's glm4_moe parser).
  kGlmXml,
};

// "json", "hermes", "llama3", "mistral", "mistral-args", "qwen3-coder", "glm": for logs and
// /v1/models.
const char* tool_call_format_name(ToolCallFormat format);

// Whether the format's call marker is a control token of its family's vocabulary
// (Mistral's [TOOL_CALLS], Llama's <|python_tag|>), whose text is dropped when special
// tokens are skipped: a request that parses calls keeps them in its output text then, as
// vLLM's Mistral tool parser does, so the parser sees the marker.
bool tool_call_marker_is_control_token(ToolCallFormat format);

// The format a chat template's source shows: the markers it writes for assistant calls.
ToolCallFormat detect_tool_call_format(std::string_view template_source);

// The text of a format's calls, for the grammar of tool_choice "required" or a named
// function: open, then calls separated by `separator`, then close; a call of function NAME
// is before_name + NAME + after_name + ARGUMENTS (a JSON object) + after_arguments.
struct ToolCallFraming {
  std::string open;
  std::string separator;
  std::string close;
  std::string before_name;
  std::string after_name;
  std::string after_arguments;
};
ToolCallFraming tool_call_framing(ToolCallFormat format);

// The format calls are written in where a grammar writes them (tool_choice "required", a
// named function, or a call beside a JSON answer): the format itself, except that an XML
// format's values are text no JSON Schema grammar frames, so there the calls are the plain
// JSON array (as vLLM constrains a required call for every parser), and read as such.
ToolCallFormat framed_call_format(ToolCallFormat format);

// The id of a response's call number `call` of choice `choice`; `response_key` names the
// response (the hex digits of its id). Mistral's templates refuse any id that is not 9
// characters of [a-zA-Z0-9] ("Tool call IDs should be alphanumeric strings with length 9!"),
// as vLLM's Mistral parser writes them: for kMistral and kMistralArgs the id is 9 base-62
// digits of a 64-bit hash of the three (deterministic; two calls share one with odds about
// 1 in 10^16). Other formats: "call_<response_key>_<choice>_<call>".
std::string tool_call_id(ToolCallFormat format, std::string_view response_key, int32_t choice,
                         size_t call);

// The id a Mistral template is given for a call id a client sent back (another provider's
// "toolu_..." or "call_..."): the id itself when it is 9 alphanumerics, else 9 base-62 digits
// of a hash of it, so a call and its result still match (vLLM truncates such ids to their
// last 9 characters, which may leave other characters or make two ids one).
std::string mistral_call_id(std::string_view id);

}  // namespace tandem
