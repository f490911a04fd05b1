// What the JSON Schema compiler refuses, and how: every keyword outside the supported set
// is named, with the path of the schema that holds it; unsupported combinations and regex
// features are named too; annotations pass.

#include <gtest/gtest.h>

#include "runner/grammar/grammar.h"

namespace tandem::grammar::TANDEM_UNITY_ID {
namespace {

std::string error_of(const std::string& schema) {
  try {
    compile_json_schema(schema);
  } catch (const GrammarError& e) {
    return e.what();
  }
  return "(no error)";
}

// Found by fuzz_json_schema: a key with a newline made a two-line message.
TEST(JsonSchemaErrors, AKeyWithControlCharactersIsNamedOnOneLine) {
  const std::string message = error_of(R"({"type": "string", "maxL\ngth": 5})");
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  EXPECT_NE(message.find("unsupported keyword 'maxL\\x0agth'"), std::string::npos) << message;
}

TEST(JsonSchemaErrors, EveryUnsupportedKeywordIsRefusedByName) {
  const char* const keywords[] = {"not",
                                  "if",
                                  "then",
                                  "else",
                                  "minProperties",
                                  "maxProperties",
                                  "patternProperties",
                                  "propertyNames",
                                  "dependentRequired",
                                  "dependentSchemas",
                                  "unevaluatedProperties",
                                  "unevaluatedItems",
                                  "contains",
                                  "minContains",
                                  "maxContains",
                                  "uniqueItems",
                                  "multipleOf",
                                  "contentEncoding",
                                  "contentMediaType",
                                  "$anchor",
                                  "$dynamicRef",
                                  "nullable",
                                  "discriminator",
                                  "x-custom"};
  for (const char* keyword : keywords) {
    EXPECT_EQ(error_of(std::string(R"({"type": "object", ")") + keyword + R"(": 1})"),
              std::string("json_schema: at #: unsupported keyword '") + keyword + "'");
  }
}

TEST(JsonSchemaErrors, TheErrorGivesThePathOfTheSchemaHoldingTheKeyword) {
  EXPECT_EQ(error_of(R"({"properties": {"a/b": {"items": {"uniqueItems": true}}}})"),
            "json_schema: at #/properties/a~1b/items: unsupported keyword 'uniqueItems'");
  EXPECT_EQ(error_of(R"({"$defs": {"x": {"multipleOf": 2}}, "$ref": "#/$defs/x"})"),
            "json_schema: at #/$defs/x: unsupported keyword 'multipleOf'");
  EXPECT_EQ(error_of(R"({"anyOf": [{"type": "string"}, {"not": {}}]})"),
            "json_schema: at #/anyOf/1: unsupported keyword 'not'");
}

TEST(JsonSchemaErrors, AnnotationsAreAllowedAndIgnored) {
  EXPECT_EQ(error_of(R"({"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "x",
      "title": "T", "description": "D", "examples": [1], "default": 1, "$comment": "c",
      "deprecated": false, "readOnly": true, "writeOnly": false, "type": "integer"})"),
            "(no error)");
}

TEST(JsonSchemaErrors, UnsupportedCombinationsAndValuesAreNamed) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"type": "string", "format": "uri"})", "format 'uri' is not supported"},
      {R"({"type": "integer", "format": "bogus"})",
       "format \"bogus\" on an integer is not supported (int32 and int64 on integers"},
      {R"({"type": "number", "format": "single"})",
       "format \"single\" on a number is not supported"},
      {R"({"type": ["boolean", "null"], "format": "date"})",
       "format \"date\" on boolean is not supported (formats apply to strings, integers"},
      {R"({"type": "string", "format": "date", "maxLength": 5})",
       "'format' beside 'pattern', 'minLength' or 'maxLength' is not supported"},
      {R"({"type": "string", "pattern": "^a+$", "maxLength": 5})",
       "'pattern' beside 'minLength' or 'maxLength' is not supported"},
      {R"({"type": "object", "anyOf": [{"required": ["a"]}]})", "'type' beside 'anyOf'"},
      {R"({"$ref": "#/$defs/a", "maxLength": 3, "$defs": {"a": {}}})", "'maxLength' beside '$ref'"},
      {R"({"allOf": [{"type": "string"}, {"maxLength": 3}]})",
       "'allOf' is supported with exactly one"},
      {R"({"oneOf": [{"type": "number"}, {"type": "integer"}]})", "may both match a value"},
      {R"({"oneOf": [{"properties": {"a": {}}}, {"type": "string"}]})", "may both match a value"},
      {R"({"type": "number", "minimum": 0.5})", "a number's bounds must be integers (0.5 is not)"},
      {R"({"type": "integer", "minimum": 12345678901234567, "maximum": 12345678901234567})",
       "bounds beyond 16 digits (minimum)"},
      {R"({"type": "integer", "maximum": -100000000000000000})",
       "bounds beyond 16 digits (maximum)"},
      {R"({"type": "number", "minimum": 0, "exclusiveMinimum": true})", "draft 4's boolean form"},
      // A non-integer literal between 2^53 and 1e17 may not be the number written.
      {R"({"type": "integer", "minimum": 9007199254740993.0})",
       "'minimum' 9.007199254740992e+15 is beyond 2^53"},
      {R"({"type": "integer", "exclusiveMaximum": 1.5e16})",
       "'exclusiveMaximum' 1.5e+16 is beyond"},
      {R"({"type": "number", "maximum": -9007199254740995.0})", "'maximum' -9.007199254740996e+15"},
      {R"({"type": "array", "items": [{"type": "string"}]})",
       "'items' as an array (draft 4 tuples)"},
      {R"({"$ref": "https://example.com/schema.json"})", "only local references"},
      {R"({"$ref": "#/$defs/missing"})", "unresolvable $ref '#/$defs/missing'"},
      {R"({"type": "text"})", "'type' must be one of the seven JSON types"},
      {R"({"type": "string", "minLength": -1})", "'minLength' must be a non-negative integer"},
      {R"({"type": "string", "maxLength": 1000000})", "'maxLength' above 100000 is not supported"},
      {R"({"type": "object", "properties": {}, "required": ["a"], "additionalProperties": false})",
       "no JSON value can satisfy the schema (at #: required property 'a' is not in "
       "'properties' and additionalProperties is false)"},
      {R"({"type": "string", "minLength": 5, "maxLength": 2})", "no JSON value can satisfy"},
      {R"({"type": "object", "properties": {"a": false}, "required": ["a"]})",
       "no JSON value can satisfy"},
      {R"({"type": "string", "pattern": "^(?=a)b$"})", "pattern: lookaround is not supported"},
      {R"({"type": "string", "pattern": "(a)\\1"})", "pattern: backreferences are not supported"},
      {R"({"type": "string", "pattern": "\\bword"})", "pattern: word boundaries"},
      {R"({"type": "string", "pattern": "\\p{L}"})", "pattern: Unicode property escapes"},
      {R"({"type": "string", "pattern": "(?i)abc"})", "pattern: inline flags"},
      {R"({"type": "string", "pattern": "a^b"})",
       "pattern: '^' is supported only at the very start"},
      {R"({"type": "string", "pattern": "a**"})",
       "pattern: a quantifier cannot follow a quantifier"},
      {R"({"type": "string", "pattern": "(ab"})", "pattern: missing ')'"},
      {R"({"type": "string", "pattern": "[a-"})", "pattern: unterminated character class"},
      {R"({"type": "": })", "the schema is not valid JSON"},
      {R"(42)", "a schema must be an object or a boolean"},
  };
  for (const auto& [schema, message] : cases) {
    const std::string error = error_of(schema);
    EXPECT_NE(error.find(message), std::string::npos) << schema << "\n -> " << error;
    EXPECT_EQ(error.rfind("json_schema: ", 0), 0u) << error;
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  }
}

TEST(JsonSchemaErrors, ProvablyDisjointOneOfIsAccepted) {
  EXPECT_EQ(error_of(R"({"oneOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]})"),
            "(no error)");
  EXPECT_EQ(error_of(R"({"oneOf": [{"const": 1}, {"enum": [2, "x"]}]})"), "(no error)");
  EXPECT_EQ(error_of(R"({"oneOf": [
      {"type": "object", "properties": {"kind": {"const": "a"}}, "required": ["kind"]},
      {"type": "object", "properties": {"kind": {"enum": ["b", "c"]}}, "required": ["kind"]}]})"),
            "(no error)");
}

// The proof is bounded (QA: a 1.7 KB schema whose oneOf alternatives reach the same
// anyOf definitions through 8 levels of $ref took 25 s, one of 2.1 KB some 40 minutes):
// past its step budget the oneOf is refused, as quickly as the budget allows.
TEST(JsonSchemaErrors, AOneOfTooCostlyToProveIsRefused) {
  std::string defs = R"("A0": {"const": "a"}, "B0": {"const": "b"})";
  for (int level = 1; level <= 8; ++level)
    for (const char* side : {"A", "B"}) {
      const std::string ref =
          R"({"$ref": "#/$defs/)" + std::string(side) + std::to_string(level - 1) + R"("})";
      defs += R"(, ")" + std::string(side) + std::to_string(level) + R"(": {"anyOf": [)" + ref +
              "," + ref + "," + ref + "," + ref + "]}";
    }
  const std::string schema =
      R"({"$defs": {)" + defs + R"(}, "oneOf": [{"$ref": "#/$defs/A8"}, {"$ref": "#/$defs/B8"}]})";
  EXPECT_NE(error_of(schema).find("oneOf is too complex to prove"), std::string::npos)
      << error_of(schema);
}

// Alternatives that all list values (const or enum) are checked in one hashed pass, so a
// long oneOf of constants costs its length (QA: 20000 took 56 s pair by pair); values
// equal as JSON Schema compares them (1 and 1.0) still overlap.
TEST(JsonSchemaErrors, AOneOfOfConstantsIsCheckedInOnePass) {
  std::string many = R"({"oneOf": [)";
  for (int i = 0; i < 20000; ++i)
    many += std::string(i ? ", " : "") + R"({"const": )" + std::to_string(i) + "}";
  EXPECT_EQ(error_of(many + "]}"), "(no error)");
  EXPECT_NE(error_of(many + R"(, {"enum": ["x", 19999.0]}]})").find("alternatives 19999 and 20000"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"oneOf": [{"enum": [[1, {"a": 2}]]}, {"const": [1.0, {"a": 2.0}]}]})")
                .find("may both match"),
            std::string::npos);
  // Equal as JSON Schema compares them: objects whatever their members' order; and not
  // 2^64 - 1 and -1, which nlohmann's == calls equal.
  EXPECT_NE(error_of(R"({"oneOf": [{"const": {"a": 1, "b": 2}}, {"const": {"b": 2, "a": 1}}]})")
                .find("may both match"),
            std::string::npos);
  EXPECT_EQ(error_of(R"({"oneOf": [{"const": 18446744073709551615}, {"const": -1}]})"),
            "(no error)");
}

// The budget is the schema's: many oneOfs, each cheap alone, add up (QA review: 100 of
// them at 262k steps each took 11 s and were accepted).
TEST(JsonSchemaErrors, TheOneOfBudgetCoversTheWholeSchema) {
  std::string alternatives;  // 600 objects: 180k pairs, each some steps
  for (int i = 0; i < 600; ++i)
    alternatives += std::string(i ? ", " : "") + R"({"type": "object", "required": ["k"], )" +
                    R"("properties": {"k": {"const": )" + std::to_string(i) + "}}}";
  const std::string one = R"({"oneOf": [)" + alternatives + "]}";
  EXPECT_EQ(error_of(one), "(no error)");
  std::string many = R"({"type": "object", "properties": {)";
  for (int i = 0; i < 8; ++i)
    many += std::string(i ? ", " : "") + "\"p" + std::to_string(i) + "\": " + one;
  EXPECT_NE(error_of(many + "}}").find("oneOf is too complex to prove"), std::string::npos);
}

}  // namespace
}  // namespace tandem::grammar::TANDEM_UNITY_ID
