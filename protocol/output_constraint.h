// The shape a request asks its output to have (structured outputs): OpenAI's
// response_format ({"type": "json_object"} or {"type": "json_schema", "json_schema":
// {name, schema, strict}}), llama-server's `json_schema` (a schema) and `grammar` (GBNF
// text) fields, and vLLM's guided_json, guided_grammar, guided_choice (a GBNF alternation
// of the choices), guided_regex (the whole output fully matches it) and structured_outputs.
// A plain value: protocol reads it, the server compiles it for the model.
#pragma once

#include <string>

namespace tandem {

struct OutputConstraint {
  enum class Kind { kNone, kJsonObject, kJsonSchema, kGbnf, kRegex };
  Kind kind = Kind::kNone;
  // kJsonSchema: the schema as JSON text (its keys in the request's order, which the
  // generated object keeps); kGbnf: the grammar's source; kRegex: the regex the whole
  // output must fully match. Empty otherwise.
  std::string text;
  // The field it came from, which a compile error names ("response_format.json_schema.schema",
  // "guided_json", "structured_outputs.grammar").
  std::string param;

  bool active() const { return kind != Kind::kNone; }
};

}  // namespace tandem
