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
  const auto collect = [&](const std::vector<FramedJson::Part>& sequence) {
    for (const FramedJson::Part& part : sequence) {
      if (!part.is_schema) continue;
      const std::string base = "#/parts/" + std::to_string(document["parts"].size());
      document["parts"].push_back(json_schema::rebased(part.schema, base));
    }
  };
  for (const auto& alternative : framed.alternatives) collect(alternative);
  collect(framed.instead);
  json_schema::SchemaCompiler compiler(document, limits);
  GrammarBuilder& b = compiler.builder();
  size_t next_schema = 0;
  const auto sequence_of = [&](const std::vector<FramedJson::Part>& sequence) {
    std::vector<ExprId> parts;
    for (const FramedJson::Part& part : sequence) {
      if (!part.is_schema) {
        parts.push_back(b.literal(part.text));
        continue;
      }
      const std::string path = "#/parts/" + std::to_string(next_schema);
      parts.push_back(compiler.schema(document["parts"][next_schema++], path));
    }
    return b.sequence(std::move(parts));
  };
  std::vector<ExprId> alternatives;
  for (const auto& alternative : framed.alternatives)
    alternatives.push_back(sequence_of(alternative));
  if (framed.min_items < 1 || framed.max_items < framed.min_items)
    throw GrammarError("framed json: items must be at least 1 and min_items <= max_items");
  const ExprId item = b.choice(std::move(alternatives));
  const uint32_t more_max = framed.max_items == GrammarBuilder::kUnbounded
                                ? GrammarBuilder::kUnbounded
                                : framed.max_items - 1;
  const ExprId more =
      b.repeat(b.sequence({b.literal(framed.separator), item}), framed.min_items - 1, more_max);
  const ExprId items = b.sequence({b.literal(framed.open), item, more, b.literal(framed.close)});
  if (framed.instead.empty()) return compiler.build(items);
  return compiler.build(b.choice({items, sequence_of(framed.instead)}));
}

std::string framed_json_key(const FramedJson& framed) {
  const auto key_of = [](const std::vector<FramedJson::Part>& sequence) {
    json_schema::Json parts = json_schema::Json::array();
    for (const FramedJson::Part& part : sequence) {
      parts.push_back(part.is_schema ? json_schema::Json{{"schema", part.schema}}
                                     : json_schema::Json(part.text));
    }
    return parts;
  };
  json_schema::Json key = json_schema::Json::array();
  for (const auto& alternative : framed.alternatives) key.push_back(key_of(alternative));
  return json_schema::Json{{"alternatives", std::move(key)},   {"open", framed.open},
                           {"separator", framed.separator},    {"close", framed.close},
                           {"min", framed.min_items},          {"max", framed.max_items},
                           {"instead", key_of(framed.instead)}}
      .dump();
}

}  // namespace tandem::grammar
