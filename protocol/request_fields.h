// Typed, range-checked reads of JSON request fields, shared by the request parsers.
// A mismatch throws RequestRejected carrying a 400 ApiError that names the field; the
// public parse_* functions catch it at their boundary, so it never escapes protocol/.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "protocol/api_error.h"

namespace tandem::request_fields {

// Ordered, as Python keeps keys: chat templates show the order (tojson, loops over items).
using Json = nlohmann::ordered_json;

// Thrown, not returned: a parser reads a dozen fields and each read may fail, and
// unwinding to the one catch keeps every read a single line.
struct RequestRejected {
  ApiError error;
};

[[noreturn]] void reject(std::string message, std::string param);

// The body as a JSON object; malformed JSON (with its line and column), a number
// beyond double's range, invalid UTF-8, nesting deeper than 64 levels or a non-object
// body are rejected. Duplicate keys: the last one wins (as in Python's json, vLLM's), in
// the key's first place. Linear in the body's size, however many keys an object has.
Json parse_body_object(std::string_view body);

// Any JSON value read by the same rules (JSON text inside a field: a tool call's
// arguments). Its depth is bounded for the same reason: the templates' tojson and the
// response writers recurse once per level. wide_integers: an integer beyond 64 bits is
// read as the nearest double instead of refused (a call's arguments, which the server
// itself may have returned verbatim from the model's text).
Json parse_json_value(std::string_view text, bool wide_integers = false);

// The field's value, or nullptr when it is absent or null (null means "the default",
// as in OpenAI's API).
const Json* find_field(const Json& object, const char* name);

// "a string", "an integer", "a decimal number", "an array", ...: for error messages.
std::string describe_type(const Json& value);

// "messages[3]": the param that names an array's element in error messages.
std::string element_param(const std::string& array, size_t index);
// The value itself when it is an object (an array), else a 400 naming param and the type.
const Json& require_object(const Json& value, const std::string& param);
const Json& require_array(const Json& value, const std::string& param);

bool read_bool(const Json& value, const std::string& param);
const std::string& read_string(const Json& value, const std::string& param);
// object[key] as a string; absent (or null) is a 400 naming "param.key" as required.
const std::string& required_string(const Json& object, const char* key, const std::string& param);

// An API read as chat (/v1/responses, /v1/messages) refuses chat's names for the fields it
// names otherwise: each (name, what to send instead) present is a 400 naming it and route;
// "n" is refused only other than 1, which changes nothing.
void refuse_chat_names(const Json& body,
                       std::span<const std::pair<const char*, const char*>> chat_names,
                       std::string_view route);
// An integer in [min, max]. A float with no fractional part (16.0) counts as an integer,
// as in vLLM's validation; 16.5 does not.
int64_t read_integer(const Json& value, const std::string& param, int64_t min, int64_t max);
// A finite number that stays finite as a float (1e39 does not).
float read_float(const Json& value, const std::string& param);
// An array of token ids, each an integer in [0, INT32_MAX]; may be empty.
std::vector<int32_t> read_token_ids(const Json& value, const std::string& param);

}  // namespace tandem::request_fields
