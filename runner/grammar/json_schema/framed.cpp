// FramedJson (../json_schema.h): literal text and schema-valid JSON values composed in one
// grammar, for tool calls. Every schema part is compiled by one SchemaCompiler over a
// document that holds them all ({"parts": [...]}), its local "$ref"s rebased onto its place
// there, so that references of different parts cannot collide.
#include <string>

#include "runner/grammar/grammar.h"
#include "runner/grammar/json_schema/compiler.h"

namespace tandem::grammar::json_schema {
namespace {

// Keywords whose values are data, not schemas: a "$ref" key inside them is not a reference.
bool holds_data(const std::string& key) {
  return key == "const" || key == "enum" || key == "default" || key == "examples";
}

Json rebased(const Json& schema, const std::string& base) {
  if (schema.is_array()) {
    Json out = Json::array();
    for (const Json& item : schema) out.push_back(rebased(item, base));
    return out;
  }
  if (!schema.is_object()) return schema;
  Json out = Json::object();
  for (const auto& [key, value] : schema.items()) {
    if (key == "$ref" && value.is_string() &&
        value.get_ref<const std::string&>().starts_with("#")) {
      out[key] = base + value.get<std::string>().substr(1);
    } else if (holds_data(key)) {
      out[key] = value;
    } else {
      out[key] = rebased(value, base);
    }
  }
  return out;
}

}  // namespace
}  // namespace tandem::grammar::json_schema

namespace tandem::grammar {

std::shared_ptr<const Grammar> compile_framed_json(const FramedJson& framed,
                                                   const BuildLimits& limits) {
  using json_schema::Json;
  Json document{{"parts", Json::array()}};
  for (const auto& alternative : framed.alternatives) {
    for (const FramedJson::Part& part : alternative) {
      if (!part.is_schema) continue;
      const std::string base = "#/parts/" + std::to_string(document["parts"].size());
      document["parts"].push_back(json_schema::rebased(part.schema, base));
    }
  }
  json_schema::SchemaCompiler compiler(document, limits);
  GrammarBuilder& b = compiler.builder();
  std::vector<ExprId> alternatives;
  size_t next_schema = 0;
  for (const auto& alternative : framed.alternatives) {
    std::vector<ExprId> parts;
    for (const FramedJson::Part& part : alternative) {
      if (!part.is_schema) {
        parts.push_back(b.literal(part.text));
        continue;
      }
      const std::string path = "#/parts/" + std::to_string(next_schema);
      parts.push_back(compiler.schema(document["parts"][next_schema++], path));
    }
    alternatives.push_back(b.sequence(std::move(parts)));
  }
  if (framed.min_items < 1 || framed.max_items < framed.min_items)
    throw GrammarError("framed json: items must be at least 1 and min_items <= max_items");
  const ExprId item = b.choice(std::move(alternatives));
  const uint32_t more_max = framed.max_items == GrammarBuilder::kUnbounded
                                ? GrammarBuilder::kUnbounded
                                : framed.max_items - 1;
  const ExprId more =
      b.repeat(b.sequence({b.literal(framed.separator), item}), framed.min_items - 1, more_max);
  return compiler.build(b.sequence({b.literal(framed.open), item, more, b.literal(framed.close)}));
}

std::string framed_json_key(const FramedJson& framed) {
  json_schema::Json key = json_schema::Json::array();
  for (const auto& alternative : framed.alternatives) {
    json_schema::Json parts = json_schema::Json::array();
    for (const FramedJson::Part& part : alternative) {
      parts.push_back(part.is_schema ? json_schema::Json{{"schema", part.schema}}
                                     : json_schema::Json(part.text));
    }
    key.push_back(std::move(parts));
  }
  return json_schema::Json{{"alternatives", std::move(key)}, {"open", framed.open},
                           {"separator", framed.separator},  {"close", framed.close},
                           {"min", framed.min_items},        {"max", framed.max_items}}
      .dump();
}

}  // namespace tandem::grammar
