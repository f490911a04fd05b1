// The Messages API's settings, read for messages_api_request.cpp: the fields around the
// conversation (tools, tool_choice, output_format, thinking, metadata) in their chat forms,
// and the refusals of what is not Anthropic's, not tandem's, or not served here. Internal to
// protocol/: throws request_fields::RequestRejected like the other readers.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>

#include "protocol/request_fields.h"
#include "protocol/responses_api_request.h"  // ParamRenames

namespace tandem::messages_fields {

using request_fields::Json;

inline constexpr const char* kNoMedia =
    "is not supported by this server (it reads no images or documents).";
inline constexpr const char* kNoHostedTools =
    "is not supported by this server: it runs no server tools (web search, code execution, "
    "MCP); send client tools with an input_schema.";

// Anthropic refuses inputs it does not define ("Extra inputs are not permitted"); so does
// this reader, naming the key ("param.key"), since a key it does not know may be a setting
// it cannot honour.
void refuse_unknown_keys(const Json& object, std::initializer_list<std::string_view> known,
                         const std::string& param);
// Whether a body's field goes to the chat parser as it is: the Messages API's fields that
// mean what chat's mean (model, temperature, top_p, top_k, stream) and tandem's chat
// extensions (seed, min_p, the penalties, guided_*, ...); the others are this reader's.
bool passes_to_chat(std::string_view name);
// The body's own fields: Anthropic's and tandem's chat extensions pass, chat's names for
// this API's fields are refused pointing at them, and so is anything else.
void refuse_unknown_fields(const Json& body);
// Server tools, containers, context management, service tiers other than the standard one.
void refuse_what_is_not_served(const Json& body);

Json read_tools(const Json& tools, ParamRenames& renames);
void read_tool_choice(const Json& value, Json& chat, ParamRenames& renames);
void read_output_format(const Json& body, Json& chat, ParamRenames& renames);
// Whether thinking is on; sets the template's enable_thinking.
bool read_thinking(const Json& body, Json& chat);
void read_metadata(const Json& body, Json& chat, ParamRenames& renames);

}  // namespace tandem::messages_fields
