#include "tests/runner/grammar/schema_suite.h"

namespace tandem::grammar::testing {

std::string thirty_property_schema() {
  static const char* const kTypes[] = {
      R"({"type": "string", "maxLength": 24})",
      R"({"type": "integer", "minimum": 0, "maximum": 100000})",
      R"({"type": "boolean"})",
      R"({"type": "number"})",
      R"({"enum": ["low", "medium", "high"]})",
      R"({"type": "string", "format": "date"})",
      R"({"type": "array", "items": {"type": "integer"}, "maxItems": 4})",
      R"({"type": ["string", "null"]})",
      R"({"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
          "required": ["x", "y"]})",
      R"({"type": "string", "pattern": "^[A-Z]{3}-[0-9]{2,4}$"})"};
  std::string properties, required;
  for (int i = 0; i < 30; ++i) {
    const std::string name = "field_" + std::to_string(i);
    properties += (i ? ",\n" : "") + std::string("\"") + name + "\": " + kTypes[i % 10];
    if (i % 3 != 2) required += (required.empty() ? "\"" : ", \"") + name + "\"";
  }
  return R"({"type": "object", "properties": {)" + properties + "}, \"required\": [" + required +
         "], \"additionalProperties\": false}";
}

namespace {

const NamedSchema kSuite[] = {
    {"flat_object", R"({"type": "object", "properties": {"name": {"type": "string"},
        "age": {"type": "integer"}, "member": {"type": "boolean"}},
        "required": ["name", "age", "member"]})"},
    {"nested_objects", R"({"type": "object", "properties": {
        "person": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 12},
          "address": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 10},
            "zip": {"type": "string", "pattern": "^[0-9]{5}$"}}, "required": ["city", "zip"]}},
          "required": ["name", "address"]}}, "required": ["person"]})"},
    {"array_of_objects", R"({"type": "array", "minItems": 1, "maxItems": 3, "items": {
        "type": "object", "properties": {"id": {"type": "integer", "minimum": 1},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 6}, "maxItems": 3}},
        "required": ["id", "tags"]}})"},
    {"string_enum", R"({"enum": ["red", "green", "blue", "light blue"]})"},
    {"mixed_enum", R"({"enum": [1, 2.5, "two", null, true, {"a": [1, 2]}, [3, "x"]]})"},
    {"const_value", R"({"type": "object", "properties": {"kind": {"const": "circle"},
        "r": {"type": "number", "minimum": 0}}, "required": ["kind", "r"]})"},
    {"any_of_string_null", R"({"anyOf": [{"type": "string", "maxLength": 5}, {"type": "null"}]})"},
    {"type_array", R"({"type": "array", "items": {"type": ["string", "integer", "null"]},
        "maxItems": 5})"},
    {"defs_and_refs", R"({"$defs": {"point": {"type": "object", "properties": {
        "x": {"type": "integer"}, "y": {"type": "integer"}}, "required": ["x", "y"]}},
        "type": "object", "properties": {"from": {"$ref": "#/$defs/point"},
        "to": {"$ref": "#/$defs/point"}}, "required": ["from", "to"]})"},
    {"recursive_tree", R"({"$defs": {"node": {"type": "object", "properties": {
        "value": {"type": "integer"}, "children": {"type": "array", "maxItems": 2,
        "items": {"$ref": "#/$defs/node"}}}, "required": ["value"]}},
        "$ref": "#/$defs/node"})"},
    {"recursive_root", R"({"type": "object", "properties": {"name": {"type": "string",
        "maxLength": 4}, "next": {"anyOf": [{"$ref": "#"}, {"type": "null"}]}},
        "required": ["name", "next"]})"},
    {"definitions_keyword", R"({"definitions": {"id": {"type": "string", "format": "uuid"}},
        "type": "array", "items": {"$ref": "#/definitions/id"}, "maxItems": 2})"},
    {"string_bounds", R"({"type": "object", "properties": {
        "short": {"type": "string", "minLength": 2, "maxLength": 4},
        "exact": {"type": "string", "minLength": 3, "maxLength": 3},
        "empty": {"type": "string", "maxLength": 0}}, "required": ["short", "exact", "empty"]})"},
    {"anchored_pattern", R"({"type": "string", "pattern": "^[A-Z]{2}-[0-9]{3,5}$"})"},
    {"unanchored_pattern", R"({"type": "string", "pattern": "[0-9]{2}|x"})"},
    {"pattern_groups", R"({"type": "string", "pattern": "^(foo|bar)(-[a-z]+)*\\.(txt|md)?$"})"},
    {"pattern_escapes", R"({"type": "string", "pattern": "^\\d{2}[\\w.]+\\x41[^\"\\\\]?$"})"},
    {"formats", R"({"type": "object", "properties": {"d": {"type": "string", "format": "date"},
        "t": {"type": "string", "format": "time"}, "dt": {"type": "string", "format": "date-time"},
        "u": {"type": "string", "format": "uuid"}, "e": {"type": "string", "format": "email"}},
        "required": ["d", "t", "dt", "u", "e"]})"},
    {"integer_range", R"({"type": "integer", "minimum": -50, "maximum": 1200})"},
    {"integer_exclusive", R"({"type": "array", "items": {"type": "integer",
        "exclusiveMinimum": 7, "exclusiveMaximum": 93}, "minItems": 3, "maxItems": 6})"},
    {"number_integer_bounds", R"({"type": "array", "items": {"type": "number", "minimum": -1,
        "maximum": 100}, "minItems": 4, "maxItems": 8})"},
    {"number_exclusive_zero", R"({"type": "array", "items": {"type": "number",
        "exclusiveMinimum": 0, "exclusiveMaximum": 1}, "minItems": 3, "maxItems": 6})"},
    {"tuple_closed", R"({"type": "array", "prefixItems": [{"type": "string", "maxLength": 3},
        {"type": "integer"}, {"type": "boolean"}], "items": false, "minItems": 2})"},
    {"tuple_open", R"({"type": "array", "prefixItems": [{"const": "head"}],
        "items": {"type": "number"}, "minItems": 3, "maxItems": 5})"},
    {"closed_optional", R"({"type": "object", "properties": {"a": {"type": "integer"},
        "b": {"type": "string", "maxLength": 3}, "c": {"type": "boolean"}},
        "required": ["b"], "additionalProperties": false})"},
    {"additional_schema", R"({"type": "object", "properties": {"fixed": {"type": "boolean"}},
        "required": ["fixed"], "additionalProperties": {"type": "integer"}})"},
    {"additional_true", R"({"type": "object", "properties": {"name": {"const": "n"}},
        "additionalProperties": true})"},
    {"all_optional", R"({"type": "object", "properties": {"p1": {"type": "integer"},
        "p2": {"type": "integer"}, "p3": {"type": "integer"}, "p4": {"type": "integer"},
        "p5": {"type": "integer"}, "p6": {"type": "integer"}, "p7": {"type": "integer"},
        "p8": {"type": "integer"}}})"},
    {"one_of_types", R"({"oneOf": [{"type": "string", "maxLength": 4}, {"type": "integer"},
        {"type": "array", "items": {"type": "boolean"}, "maxItems": 2}]})"},
    {"one_of_discriminator", R"({"oneOf": [
        {"type": "object", "properties": {"kind": {"const": "cat"}, "lives": {"type": "integer"}},
         "required": ["kind", "lives"]},
        {"type": "object", "properties": {"kind": {"const": "dog"}, "good": {"type": "boolean"}},
         "required": ["kind", "good"]}]})"},
    {"all_of_single_ref", R"({"$defs": {"name": {"type": "string", "minLength": 1,
        "maxLength": 8}}, "type": "object", "properties": {"first": {"allOf": [
        {"$ref": "#/$defs/name"}], "description": "as Pydantic writes it"}},
        "required": ["first"]})"},
    {"empty_schema", R"({})"},
    {"true_schema", R"(true)"},
    {"json_object", R"({"type": "object"})"},
    {"matrix", R"({"type": "array", "maxItems": 3, "items": {"type": "array", "minItems": 2,
        "maxItems": 2, "items": {"type": "number"}}})"},
    {"deep_nesting", R"({"type": "object", "properties": {"a": {"type": "object",
        "properties": {"b": {"type": "object", "properties": {"c": {"type": "object",
        "properties": {"d": {"type": "object", "properties": {"e": {"type": "integer"}},
        "required": ["e"]}}, "required": ["d"]}}, "required": ["c"]}}, "required": ["b"]}},
        "required": ["a"]})"},
    {"awkward_names", R"({"type": "object", "properties": {"quo\"te": {"type": "integer"},
        "new\nline": {"enum": ["tab\there", "caf\u00e9", "\u65e5\u672c"]},
        "": {"type": "null"}}, "required": ["quo\"te", "new\nline", ""]})"},
    {"required_not_listed", R"({"type": "object", "properties": {"a": {"type": "integer"}},
        "required": ["a", "b"], "additionalProperties": {"type": "string", "maxLength": 3}})"},
    {"top_level_number", R"({"type": "number"})"},
    {"tool_call", R"({"type": "object", "properties": {
        "name": {"const": "get_weather"}, "arguments": {"type": "object", "properties": {
          "location": {"type": "string", "description": "City and country"},
          "unit": {"enum": ["celsius", "fahrenheit"]}, "days": {"type": "integer",
          "minimum": 1, "maximum": 14}}, "required": ["location"],
          "additionalProperties": false}}, "required": ["name", "arguments"],
        "additionalProperties": false})"},
    {"thirty_properties", thirty_property_schema()},
};

}  // namespace

const std::vector<NamedSchema>& schema_suite() {
  static const std::vector<NamedSchema> suite(std::begin(kSuite), std::end(kSuite));
  return suite;
}

}  // namespace tandem::grammar::testing
