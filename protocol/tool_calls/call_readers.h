// Internal to protocol/tool_calls/: the pieces every format's reader shares, and one
// reader per format (hermes_calls.cpp, llama3_calls.cpp, mistral_calls.cpp, json_calls.cpp,
// xml_calls.cpp).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "protocol/tool_calls/tool_call_parser.h"

namespace tandem::tool_calls {

using Json = nlohmann::ordered_json;

// Where the JSON object or array that starts at text[begin] ends (one past its closing
// bracket), by bracket depth outside strings; nullopt when it does not close.
std::optional<size_t> json_end(std::string_view text, size_t begin);
// The JSON value in text (whole, space around it allowed); nullopt when it is not JSON.
std::optional<Json> parse_json(std::string_view text);
// Valid JSON text (as parsed into a Json) without the space outside its strings: every
// number keeps the digits the model wrote (a double would round 123456789012345678901),
// every string its escapes, every object its keys in order.
std::string minify_json(std::string_view json);
// {"name": NAME, "arguments" or "parameters": OBJECT or its JSON text}: the call, its
// arguments the object's own text minified; nullopt when the object is not one. `raw` is
// the text `object` was parsed from.
std::optional<ParsedToolCall> call_of(const Json& object, std::string_view raw);
// A JSON array of call objects, or one call object: the calls; nullopt when any is not one.
// `raw` is the text `value` was parsed from.
std::optional<std::vector<ParsedToolCall>> calls_of(const Json& value, std::string_view raw);

bool is_space(char c);
std::string_view trim(std::string_view text);
// Content made only of space is no content.
std::string content_or_empty(std::string text);

// Calls written as blocks between open_tag and close_tag anywhere in the output (Hermes,
// Qwen3-Coder): `block` reads a block's inside, nullopt where it is not a call, which then
// stays in the content, tags and all. The closing tag may be missing at the very end (the
// model stopped right after the call).
using BlockReader = std::function<std::optional<ParsedToolCall>(std::string_view inside)>;
ParsedToolCalls read_blocks(std::string_view text, std::string_view open_tag,
                            std::string_view close_tag, const BlockReader& block);

ParsedToolCalls read_hermes(std::string_view text);
ParsedToolCalls read_llama3(std::string_view text);
ParsedToolCalls read_mistral(std::string_view text);
ParsedToolCalls read_json(std::string_view text);
ParsedToolCalls read_qwen_xml(std::string_view text, const std::vector<ToolFunction>& functions);
ParsedToolCalls read_glm_xml(std::string_view text, const std::vector<ToolFunction>& functions);

}  // namespace tandem::tool_calls
