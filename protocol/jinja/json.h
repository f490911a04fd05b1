// Values from JSON (the request's messages and tools) and to JSON (the tojson filter, as
// transformers defines it: json.dumps(x, ensure_ascii=False, indent=indent,
// separators=separators, sort_keys=sort_keys)).
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "protocol/jinja/text.h"
#include "protocol/jinja/value.h"

namespace tandem::jinja {

// Objects become dicts in the document's key order with ordered_json (Python keeps it);
// nlohmann::json has already sorted its keys. Strings (keys included) are marked
// from_input as asked. Integers beyond 64 bits are refused (Error).
Value from_json(const nlohmann::ordered_json& json, bool from_input);
Value from_json(const nlohmann::json& json, bool from_input);

struct JsonFormat {
  bool ensure_ascii = false;
  std::optional<std::string> indent;          // nullopt: one line
  std::optional<std::string> item_separator;  // default ", " on one line, "," indented
  std::string key_separator = ": ";
  bool sort_keys = false;
};

// json.dumps. String contents keep their origin; the JSON syntax is template text.
Text to_json(const Value& value, const JsonFormat& format);

}  // namespace tandem::jinja
