// JSON Schema -> Grammar. The grammar generates JSON texts that are valid against the
// schema: a subset of them (it narrows where noted below), never a superset. A keyword
// outside the supported set is refused with a GrammarError that names it; nothing is
// silently dropped. Errors read "json_schema: at #/properties/age: unsupported keyword
// 'multipleOf'".
//
// Supported keywords
//   type            "object", "array", "string", "number", "integer", "boolean", "null", or
//                   an array of them. Without "type", the keywords present imply it (e.g.
//                   "properties" -> object); with none, any JSON value.
//   properties      emitted in the schema's order (pass the text or an ordered_json to keep
//                   it; nlohmann::json sorts keys).
//   required        required properties must appear; the others may be left out. A required
//                   name missing from "properties" comes after them, valued by
//                   additionalProperties (any value when it is absent).
//   additionalProperties  false: none. true or a schema: any number of other properties
//                   after the listed ones, with keys that differ from every listed name.
//                   Absent: none when "properties" is given (as llama.cpp and xgrammar's
//                   strict mode do: a narrowing), any when it is not.
//   items, prefixItems, minItems, maxItems
//                   "items" absent or true: any values; false: nothing after prefixItems.
//   enum, const     the values' compact serialization (nlohmann's dump()); with "type",
//                   values of other types are dropped. No other constraint may sit beside.
//   anyOf           any alternative.
//   oneOf           only when the alternatives are provably disjoint (different types,
//                   different const/enum values, or a required property whose schemas are
//                   disjoint), so that exactly one matches; otherwise refused (use anyOf).
//   allOf           with exactly one subschema (as Pydantic writes refs); else refused.
//   $ref, $defs, definitions
//                   local references only ("#", "#/$defs/name", any "#/json/pointer");
//                   recursion is supported. Beside $ref, anyOf, oneOf and allOf only
//                   annotations and $defs/definitions may stand.
//   minLength, maxLength   in code points, as JSON Schema counts (an escape is one).
//   pattern         the regex subset below, on the decoded string; not together with
//                   minLength/maxLength or format (refused: the engine does not intersect).
//   format          "date", "time", "date-time" (RFC 3339: leap years, "T" and "Z" upper
//                   case, seconds 00-59), "uuid", "email" (dot-atom local part @ a domain
//                   of dot-separated labels with at least one dot); on an integer, OpenAPI's
//                   "int32" (bounds) or "int64", on a number "float" (a float's range) or
//                   "double"; other types' branches pass it by. Other formats refused.
//   minimum, maximum, exclusiveMinimum, exclusiveMaximum
//                   integers: exact ranges. numbers: exact when the bounds are integers
//                   (the exponent form is then not generated); non-integer bounds on a
//                   number are refused. Integers are generated with at most 16 digits, as
//                   llama.cpp does, and ranges are clipped to that. A bound written as a
//                   JSON integer is read exactly (64 bits); one written otherwise (1e16,
//                   9007199254740993.0) whose magnitude is between 2^53 and 1e17 is refused
//                   naming the keyword, as its double may not be the number written.
//   Annotations, allowed and ignored: title, description, examples, default, $schema,
//   $id, $comment, deprecated, readOnly, writeOnly.
//
// The pattern subset (ECMA-262 syntax, matched against the decoded string, unanchored
// unless ^ / $ are given, as JSON Schema specifies; compile_regex takes the same subset,
// always anchored): literal characters; escapes \\ \/ \.
// \- and the other syntax characters, \t \n \r \f \v \0 \xHH \uHHHH; classes [...] and
// [^...] with ranges and \d \w \s \D \W \S inside; `.` (any character but \n \r \u2028
// \u2029); groups ( ) (?: ) (?<name> ); alternation |; quantifiers ? * + {n} {n,} {n,m}
// (lazy forms accepted: they match the same strings); ^ only at the very start and $ only
// at the very end. Refused: backreferences, lookaround, \b \B, \p{...}, inline flags.
//
// Generated text and whitespace: no whitespace before or after the top-level value;
// between tokens (after { [ , : and after keys and values) at most one of "", " ", or "\n"
// followed by up to 20 spaces or tabs, as llama.cpp's SPACE_RULE. Strings use raw UTF-8
// and the escapes \" \\ \/ \b \f \n \r \t \uXXXX (surrogates only as valid pairs); raw DEL
// (0x7F) is not generated. Numbers: -?(0|[1-9][0-9]{0,15})(\.[0-9]{1,16})?([eE][-+]?[0-9]{1,2})?
// (a two-digit exponent keeps every number a finite double).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "runner/grammar/builder.h"

namespace tandem::grammar {

// Parses the text (keeping the property order) and compiles it. Throws GrammarError.
// (The std::string and const char* overloads pick this one over the json ones, which a
// string would otherwise also convert to.)
// `limits` bound the automaton (builder.h); the defaults suit a server.
std::shared_ptr<const Grammar> compile_json_schema(std::string_view schema_text,
                                                   const BuildLimits& limits = {});
std::shared_ptr<const Grammar> compile_json_schema(const std::string& schema_text,
                                                   const BuildLimits& limits = {});
std::shared_ptr<const Grammar> compile_json_schema(const char* schema_text,
                                                   const BuildLimits& limits = {});
std::shared_ptr<const Grammar> compile_json_schema(const nlohmann::ordered_json& schema,
                                                   const BuildLimits& limits = {});
std::shared_ptr<const Grammar> compile_json_schema(const nlohmann::json& schema,
                                                   const BuildLimits& limits = {});

// A whole output constrained by a regex (vLLM's guided_regex, structured_outputs.regex):
// the grammar generates exactly the texts the regex fully matches, as raw UTF-8 (^ and $
// are implicit; a leading ^ and a trailing $ are accepted). The regex subset and its
// classes are the pattern subset below. Errors read "regex: lookaround is not supported".
std::shared_ptr<const Grammar> compile_regex(std::string_view regex,
                                             const BuildLimits& limits = {});

// Text with JSON values in it, for formats that frame JSON (tool calls:
// "<tool_call>\n{\"name\": \"f\", \"arguments\": " ARGS "}\n</tool_call>"): `open`, then
// between min_items and max_items items separated by `separator`, then `close`. An item is
// one of `alternatives`, each a sequence of parts: literal text, or a JSON value valid
// against a schema (compiled as compile_json_schema would, its "$ref"s relative to itself).
struct FramedJson {
  struct Part {
    std::string text;                         // a literal, when !is_schema
    nlohmann::ordered_json schema = nullptr;  // when is_schema
    bool is_schema = false;
  };
  std::vector<std::vector<Part>> alternatives;
  std::string open, separator, close;
  uint32_t min_items = 1;
  uint32_t max_items = 1;  // GrammarBuilder::kUnbounded: no limit
  // Non-empty: the whole text may be this sequence instead of the framed items (tools under
  // "auto" beside a response format: the calls, or the shaped answer).
  std::vector<Part> instead;
};
std::shared_ptr<const Grammar> compile_framed_json(const FramedJson& framed,
                                                   const BuildLimits& limits = {});
// A text that names the FramedJson exactly (for caches).
std::string framed_json_key(const FramedJson& framed);

// OpenAI's response_format {"type": "json_object"}: any JSON object.
std::shared_ptr<const Grammar> json_object_grammar();

}  // namespace tandem::grammar
