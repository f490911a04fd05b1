// The JSON Schema compiler's insides (the supported subset is in ../json_schema.h). One
// SchemaCompiler per schema: it walks the schema, checks every keyword, and builds the
// grammar in a GrammarBuilder. The pieces for each type live in their own files:
// json_text.cpp (whitespace, strings, numbers, any value), objects.cpp, arrays.cpp,
// strings.cpp (lengths, formats), numbers.cpp (ranges), regex.cpp (pattern), disjoint.cpp
// (oneOf).
#pragma once

#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "runner/grammar/builder.h"

namespace tandem::grammar::json_schema {

using Json = nlohmann::ordered_json;

class SchemaCompiler {
 public:
  SchemaCompiler(const Json& root, const BuildLimits& limits) : root_(root), limits_(limits) {}

  std::shared_ptr<const Grammar> compile();
  // The grammar whose start is `root`, an expression built in builder() (framed.cpp).
  std::shared_ptr<const Grammar> build(ExprId root);

  // A (sub)schema at `path` (a JSON pointer: "#/properties/a") as an expression.
  ExprId schema(const Json& s, const std::string& path);
  [[noreturn]] void fail(const std::string& path, const std::string& message) const;
  // A subschema no value satisfies: nothing, so an optional place (an anyOf branch, an
  // optional property, array items) simply drops out; the first reason is kept for the
  // error when the whole schema ends up satisfied by nothing.
  ExprId unsatisfiable(const std::string& path, const std::string& why);
  // The schema a local "$ref" points to.
  const Json& resolve(const std::string& ref, const std::string& path) const;
  GrammarBuilder& builder() { return b_; }
  // The steps one_of_overlap has taken for this schema, all its oneOfs together.
  size_t& disjointness_steps() { return disjointness_steps_; }

  // JSON text pieces (json_text.cpp), each built once and shared.
  ExprId ws();
  ExprId string_char();  // one character of a JSON string: raw UTF-8 or an escape
  ExprId any_string();
  ExprId number();
  ExprId float_number();  // number()'s within a 32-bit float's range
  ExprId integer();
  ExprId any_value();
  ExprId digits(uint32_t min, uint32_t max);
  ExprId literal_of(const Json& value);  // the value's compact serialization
  // One decoded character from `set`, written as JSON string content: raw where JSON
  // allows, escaped where it must be.
  ExprId json_chars(const std::vector<CodepointRange>& set);

 private:
  ExprId typed(const Json& s, const std::string& path);
  ExprId reference(const Json& s, const std::string& path);
  ExprId alternatives(const Json& s, const std::string& path);
  ExprId enumeration(const Json& s, const std::string& path);
  ExprId of_type(const std::string& type, const Json& s, const std::string& path);
  void check_keywords(const Json& s, const std::string& path) const;
  ExprId decimal(uint32_t exponent_digits);  // number() and float_number()'s shape

  // The piece called `name`, built by `build` the first time.
  template <typename Build>
  ExprId piece(const std::string& name, Build build) {
    if (const auto it = pieces_.find(name); it != pieces_.end()) return it->second;
    const ExprId e = build();
    pieces_[name] = e;
    return e;
  }

  GrammarBuilder b_;
  const Json& root_;
  const BuildLimits& limits_;
  std::unordered_map<std::string, RuleId> ref_rules_;
  std::unordered_map<std::string, ExprId> pieces_;
  int depth_ = 0;
  std::string first_unsatisfiable_;  // "at PATH: WHY", or empty
  size_t disjointness_steps_ = 0;
};

// The types a schema's keywords allow, in JSON Schema's names; all seven when nothing
// restricts them.
std::set<std::string> implied_types(const Json& s);

ExprId compile_object(SchemaCompiler& c, const Json& s, const std::string& path);
ExprId compile_array(SchemaCompiler& c, const Json& s, const std::string& path);
ExprId compile_string(SchemaCompiler& c, const Json& s, const std::string& path);
ExprId compile_number(SchemaCompiler& c, const Json& s, const std::string& path, bool integer);
// The decoded-string language of `pattern` (regex.cpp), as JSON string content.
ExprId compile_pattern(SchemaCompiler& c, const std::string& pattern, const std::string& path);
// Thrown by one_of_overlap when the proof would take more steps than it allows.
struct OneOfTooComplex {};
// The first pair of a oneOf's alternatives (indices into `list`) that some JSON value may
// match both of, or nullopt when none can (sound, not complete: "may" when unproven).
std::optional<std::pair<size_t, size_t>> one_of_overlap(SchemaCompiler& c, const Json& list,
                                                        const std::string& path);

// The code points a JSON string may hold unescaped (DEL excluded, as llama.cpp does).
const std::vector<CodepointRange>& raw_string_chars();
std::vector<CodepointRange> intersect(const std::vector<CodepointRange>& a,
                                      const std::vector<CodepointRange>& b);

// The grammar whose root is `start`, built in `b`; its errors prefixed "`what`: ", and the
// builder's "matches no string" said as `nothing` (the schema's or the regex's words).
std::shared_ptr<const Grammar> build_root(GrammarBuilder& b, ExprId start,
                                          const BuildLimits& limits, const std::string& what,
                                          const std::string& nothing);

// Keyword value checks shared by the type files.
uint32_t count_keyword(const SchemaCompiler& c, const Json& s, const char* keyword,
                       const std::string& path, uint32_t absent);

}  // namespace tandem::grammar::json_schema
