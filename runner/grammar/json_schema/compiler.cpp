// The schema walk: keyword checks, references, combinators, enum/const and types. The
// per-type grammars are in the sibling files.

#include "runner/grammar/json_schema/compiler.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "runner/grammar/grammar.h"

namespace tandem::grammar::json_schema {

namespace {

constexpr int kMaxDepth = 128;

const std::set<std::string, std::less<>> kAnnotations = {
    "title", "description", "examples",   "default",  "$schema",
    "$id",   "$comment",    "deprecated", "readOnly", "writeOnly"};

const std::set<std::string, std::less<>> kSupported = {"type",
                                                       "properties",
                                                       "required",
                                                       "additionalProperties",
                                                       "items",
                                                       "prefixItems",
                                                       "minItems",
                                                       "maxItems",
                                                       "enum",
                                                       "const",
                                                       "anyOf",
                                                       "oneOf",
                                                       "allOf",
                                                       "$ref",
                                                       "$defs",
                                                       "definitions",
                                                       "minLength",
                                                       "maxLength",
                                                       "pattern",
                                                       "format",
                                                       "minimum",
                                                       "maximum",
                                                       "exclusiveMinimum",
                                                       "exclusiveMaximum"};

const char* const kTypeNames[] = {"null",   "boolean", "object", "array",
                                  "number", "integer", "string"};

bool is_known_type(const std::string& t) {
  return std::find(std::begin(kTypeNames), std::end(kTypeNames), t) != std::end(kTypeNames);
}

// Keywords that constrain a value (everything but annotations and definitions).
bool constrains(const std::string& key) {
  return kSupported.count(key) && key != "$defs" && key != "definitions";
}

}  // namespace

std::set<std::string> implied_types(const Json& s) {
  std::set<std::string> types;
  if (!s.is_object()) return {std::begin(kTypeNames), std::end(kTypeNames)};
  if (const auto it = s.find("type"); it != s.end()) {
    if (it->is_string()) types.insert(it->get<std::string>());
    if (it->is_array())
      for (const Json& t : *it)
        if (t.is_string()) types.insert(t.get<std::string>());
    return types;
  }
  const auto any_of = [&](std::initializer_list<const char*> keys) {
    return std::any_of(keys.begin(), keys.end(), [&](const char* k) { return s.contains(k); });
  };
  if (any_of({"properties", "required", "additionalProperties"})) types.insert("object");
  if (any_of({"items", "prefixItems", "minItems", "maxItems"})) types.insert("array");
  if (any_of({"minLength", "maxLength", "pattern", "format"})) types.insert("string");
  if (any_of({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}))
    types.insert("number");
  if (types.empty()) types.insert(std::begin(kTypeNames), std::end(kTypeNames));
  return types;
}

void SchemaCompiler::fail(const std::string& path, const std::string& message) const {
  throw GrammarError("json_schema: at " + path + ": " + message);
}

uint32_t count_keyword(const SchemaCompiler& c, const Json& s, const char* keyword,
                       const std::string& path, uint32_t absent) {
  const auto it = s.find(keyword);
  if (it == s.end()) return absent;
  const double d = it->is_number() ? it->get<double>() : -1;
  if (d < 0 || std::trunc(d) != d)
    c.fail(path, std::string("'") + keyword + "' must be a non-negative integer");
  if (d > 100000) c.fail(path, std::string("'") + keyword + "' above 100000 is not supported");
  return static_cast<uint32_t>(d);
}

void SchemaCompiler::check_keywords(const Json& s, const std::string& path) const {
  for (const auto& [key, value] : s.items()) {
    if (!kAnnotations.count(key) && !kSupported.count(key))
      fail(path, "unsupported keyword '" + key + "'");
  }
  if (const auto it = s.find("type"); it != s.end()) {
    const bool valid =
        (it->is_string() && is_known_type(*it)) ||
        (it->is_array() && !it->empty() && std::all_of(it->begin(), it->end(), [](const Json& t) {
           return t.is_string() && is_known_type(t);
         }));
    if (!valid) fail(path, "'type' must be one of the seven JSON types or an array of them");
  }
}

// Beside `keyword` only annotations, definitions and `also` may stand.
static void only_beside(const SchemaCompiler& c, const Json& s, const std::string& keyword,
                        const std::string& path, std::initializer_list<const char*> also = {}) {
  for (const auto& [key, value] : s.items()) {
    if (key == keyword || !constrains(key)) continue;
    if (std::find(also.begin(), also.end(), key) != also.end()) continue;
    c.fail(path, "'" + key + "' beside '" + keyword +
                     "' is not supported (the engine does not intersect schemas)");
  }
}

const Json& SchemaCompiler::resolve(const std::string& ref, const std::string& path) const {
  if (ref.empty() || ref[0] != '#')
    fail(path, "only local references (\"#/...\") are supported, not '" + ref + "'");
  if (ref == "#") return root_;
  try {
    return root_.at(Json::json_pointer(ref.substr(1)));
  } catch (const nlohmann::json::exception&) {
    fail(path, "unresolvable $ref '" + ref + "'");
  }
}

ExprId SchemaCompiler::reference(const Json& s, const std::string& path) {
  only_beside(*this, s, "$ref", path);
  if (!s["$ref"].is_string()) fail(path, "'$ref' must be a string");
  const std::string ref = s["$ref"].get<std::string>();
  if (const auto it = ref_rules_.find(ref); it != ref_rules_.end()) return b_.ref(it->second);
  const RuleId rule = b_.rule(ref);
  ref_rules_.emplace(ref, rule);
  const Json& target = resolve(ref, path);
  b_.define(rule, schema(target, ref));
  return b_.ref(rule);
}

ExprId SchemaCompiler::alternatives(const Json& s, const std::string& path) {
  const char* keyword = s.contains("allOf") ? "allOf" : s.contains("anyOf") ? "anyOf" : "oneOf";
  only_beside(*this, s, keyword, path);
  const Json& list = s[keyword];
  if (!list.is_array() || list.empty())
    fail(path, std::string("'") + keyword + "' must be a non-empty array");
  const std::string base = path + "/" + keyword + "/";
  if (std::string(keyword) == "allOf") {
    if (list.size() != 1) fail(path, "'allOf' is supported with exactly one subschema");
    return schema(list[0], base + "0");
  }
  std::vector<ExprId> items;
  for (size_t i = 0; i < list.size(); ++i)
    items.push_back(schema(list[i], base + std::to_string(i)));
  if (std::string(keyword) == "oneOf") {
    std::optional<std::pair<size_t, size_t>> overlap;
    try {
      overlap = one_of_overlap(*this, list, path);
    } catch (const OneOfTooComplex&) {
      fail(path,
           "oneOf is too complex to prove that no value matches two alternatives "
           "(use anyOf)");
    }
    if (overlap)
      fail(path, "oneOf alternatives " + std::to_string(overlap->first) + " and " +
                     std::to_string(overlap->second) +
                     " may both match a value (only provably disjoint ones are supported; "
                     "use anyOf)");
  }
  return b_.choice(std::move(items));
}

static bool has_type(const std::set<std::string>& types, const Json& value) {
  if (value.is_null()) return types.count("null");
  if (value.is_boolean()) return types.count("boolean");
  if (value.is_string()) return types.count("string");
  if (value.is_array()) return types.count("array");
  if (value.is_object()) return types.count("object");
  const double d = value.get<double>();
  const bool integral = !value.is_number_float() || (std::isfinite(d) && std::trunc(d) == d);
  return types.count("number") || (integral && types.count("integer"));
}

ExprId SchemaCompiler::enumeration(const Json& s, const std::string& path) {
  const char* keyword = s.contains("const") ? "const" : "enum";
  only_beside(*this, s, keyword, path, {"type"});
  if (s.contains("const") && s.contains("enum"))
    fail(path, "'const' beside 'enum' is not supported");
  Json values = Json::array();
  if (s.contains("const")) {
    values.push_back(s["const"]);
  } else {
    if (!s["enum"].is_array()) fail(path, "'enum' must be an array");
    values = s["enum"];
  }
  const std::set<std::string> types = implied_types(s);
  std::vector<ExprId> items;
  for (const Json& v : values)
    if (has_type(types, v)) items.push_back(literal_of(v));
  return b_.choice(std::move(items));
}

ExprId SchemaCompiler::of_type(const std::string& type, const Json& s, const std::string& path) {
  // JSON Schema makes `format` an annotation outside strings; OpenAPI's numeric formats are
  // enforced on integers and numbers (int32 as bounds, float as the range numbers.cpp keeps;
  // every generated integer, at most 16 digits, is an int64, and every number a double),
  // any other value is refused there rather than ignored. The other types' branches of a
  // type list pass it by, as JSON Schema says (typed() refuses it where no branch takes it).
  if (const auto it = s.find("format"); it != s.end() && (type == "integer" || type == "number")) {
    const bool known = it->is_string() && (type == "integer" ? (*it == "int32" || *it == "int64")
                                                             : (*it == "double" || *it == "float"));
    if (!known)
      fail(path, "format " + it->dump() + " on " + (type == "integer" ? "an " : "a ") + type +
                     " is not supported (int32 and int64 on integers, float and double on "
                     "numbers are)");
  }
  if (type == "object") return compile_object(*this, s, path);
  if (type == "array") return compile_array(*this, s, path);
  if (type == "string") return compile_string(*this, s, path);
  if (type == "number") return compile_number(*this, s, path, false);
  if (type == "integer") return compile_number(*this, s, path, true);
  if (type == "boolean") return b_.choice({b_.literal("true"), b_.literal("false")});
  return b_.literal("null");
}

ExprId SchemaCompiler::typed(const Json& s, const std::string& path) {
  const std::set<std::string> types = implied_types(s);
  if (types.size() == std::size(kTypeNames)) {
    bool bare = true;
    for (const auto& [key, value] : s.items()) bare = bare && !constrains(key);
    if (bare) return any_value();
  }
  if (s.contains("format") && !types.count("string") && !types.count("integer") &&
      !types.count("number"))
    fail(path, "format " + s["format"].dump() + " on " + *types.begin() +
                   " is not supported (formats apply to strings, integers and numbers)");
  std::vector<ExprId> items;
  for (const char* type : kTypeNames)
    if (types.count(type)) items.push_back(of_type(type, s, path));
  return b_.choice(std::move(items));
}

ExprId SchemaCompiler::schema(const Json& s, const std::string& path) {
  if (s.is_boolean()) return s.get<bool>() ? any_value() : b_.nothing();
  if (!s.is_object()) fail(path, "a schema must be an object or a boolean");
  if (depth_ >= kMaxDepth) fail(path, "schema nested too deeply");
  ++depth_;
  struct Leave {
    int& depth;
    ~Leave() { --depth; }
  } leave{depth_};
  check_keywords(s, path);
  if (s.contains("$ref")) return reference(s, path);
  if (s.contains("anyOf") || s.contains("oneOf") || s.contains("allOf"))
    return alternatives(s, path);
  if (s.contains("enum") || s.contains("const")) return enumeration(s, path);
  return typed(s, path);
}

std::shared_ptr<const Grammar> SchemaCompiler::compile() { return build(schema(root_, "#")); }

std::shared_ptr<const Grammar> SchemaCompiler::build(ExprId start) {
  std::string nothing = "no JSON value can satisfy the schema";
  if (!first_unsatisfiable_.empty()) nothing += " (" + first_unsatisfiable_ + ")";
  return build_root(b_, start, limits_, "json_schema", nothing);
}

ExprId SchemaCompiler::unsatisfiable(const std::string& path, const std::string& why) {
  if (first_unsatisfiable_.empty()) first_unsatisfiable_ = "at " + path + ": " + why;
  return b_.nothing();
}

std::shared_ptr<const Grammar> build_root(GrammarBuilder& b, ExprId start,
                                          const BuildLimits& limits, const std::string& what,
                                          const std::string& nothing) {
  const RuleId root = b.rule("root");
  b.define(root, start);
  try {
    return b.build(root, limits);
  } catch (const GrammarError& e) {
    if (std::string(e.what()) == "the grammar matches no string")
      throw GrammarError(what + ": " + nothing);
    throw GrammarError(what + ": " + e.what());
  }
}

}  // namespace tandem::grammar::json_schema

namespace tandem::grammar {

std::shared_ptr<const Grammar> compile_json_schema(std::string_view schema_text,
                                                   const BuildLimits& limits) {
  json_schema::Json schema;
  try {
    schema = json_schema::Json::parse(schema_text);
  } catch (const nlohmann::json::exception& e) {
    throw GrammarError(std::string("json_schema: the schema is not valid JSON: ") + e.what());
  }
  return compile_json_schema(schema, limits);
}

std::shared_ptr<const Grammar> compile_json_schema(const std::string& schema_text,
                                                   const BuildLimits& limits) {
  return compile_json_schema(std::string_view(schema_text), limits);
}

std::shared_ptr<const Grammar> compile_json_schema(const char* schema_text,
                                                   const BuildLimits& limits) {
  return compile_json_schema(std::string_view(schema_text), limits);
}

std::shared_ptr<const Grammar> compile_json_schema(const nlohmann::ordered_json& schema,
                                                   const BuildLimits& limits) {
  return json_schema::SchemaCompiler(schema, limits).compile();
}

std::shared_ptr<const Grammar> compile_json_schema(const nlohmann::json& schema,
                                                   const BuildLimits& limits) {
  return compile_json_schema(nlohmann::ordered_json::parse(schema.dump()), limits);
}

std::shared_ptr<const Grammar> json_object_grammar() {
  static const std::shared_ptr<const Grammar> grammar =
      compile_json_schema(nlohmann::ordered_json{{"type", "object"}});
  return grammar;
}

}  // namespace tandem::grammar
