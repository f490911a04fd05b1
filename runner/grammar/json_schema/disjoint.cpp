// oneOf needs exactly one alternative to match. A grammar can only say "at least one", so
// oneOf is accepted when no value can match two alternatives, which this proves from the
// schemas' full JSON Schema meaning (not from the narrower grammar): different types,
// different const/enum values, or a property both require whose schemas are disjoint.
// It answers "not proven" rather than guess, and oneOf is then refused.

#include <algorithm>
#include <cmath>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "runner/grammar/json_schema/compiler.h"

namespace tandem::grammar::json_schema {

namespace {

// A value's types in JSON Schema's names (an integral number is both).
std::set<std::string> types_of_value(const Json& v) {
  if (v.is_null()) return {"null"};
  if (v.is_boolean()) return {"boolean"};
  if (v.is_string()) return {"string"};
  if (v.is_array()) return {"array"};
  if (v.is_object()) return {"object"};
  const double d = v.get<double>();
  if (!v.is_number_float() || (std::isfinite(d) && std::trunc(d) == d))
    return {"number", "integer"};
  return {"number"};
}

// The types a schema admits in JSON Schema's full meaning: keywords such as "properties"
// do not restrict the type (non-objects pass them), only "type" does.
std::set<std::string> declared_types(const Json& s) {
  if (s.is_object() && s.contains("type")) return implied_types(s);
  return {"null", "boolean", "object", "array", "number", "integer", "string"};
}

bool types_overlap(const std::set<std::string>& a, const std::set<std::string>& b) {
  for (const std::string& t : a) {
    if (b.count(t)) return true;
    if (t == "integer" && b.count("number")) return true;
    if (t == "number" && b.count("integer")) return true;
  }
  return false;
}

const Json* values_of(const Json& s, Json& storage) {
  if (!s.is_object()) return nullptr;
  if (s.contains("const")) {
    storage = Json::array({s["const"]});
    return &storage;
  }
  if (s.contains("enum") && s["enum"].is_array()) return &s["enum"];
  return nullptr;
}

const Json* alternatives_of(const Json& s) {
  for (const char* k : {"anyOf", "oneOf"})
    if (s.is_object() && s.contains(k) && s[k].is_array()) return &s[k];
  return nullptr;
}

// Equality as JSON Schema defines it (enum and const): numbers by mathematical value
// whatever their kind, objects as sets of members whatever their order. (nlohmann's ==
// compares ordered_json's members in order, and an unsigned number with a signed one by
// casting, so 2^64 - 1 == -1 there.)
bool same_value(const Json& a, const Json& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_number_float() || b.is_number_float()) return a.get<double>() == b.get<double>();
    if (a.is_number_unsigned() != b.is_number_unsigned()) {
      const Json& s = a.is_number_unsigned() ? b : a;  // the signed one
      const Json& u = a.is_number_unsigned() ? a : b;
      return s.get<int64_t>() >= 0 && static_cast<uint64_t>(s.get<int64_t>()) == u.get<uint64_t>();
    }
    return a == b;
  }
  if (a.type() != b.type()) return false;
  if (a.is_array()) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (!same_value(a[i], b[i])) return false;
    return true;
  }
  if (a.is_object()) {
    if (a.size() != b.size()) return false;
    for (auto it = a.begin(); it != a.end(); ++it) {
      const auto other = b.find(it.key());
      if (other == b.end() || !same_value(it.value(), *other)) return false;
    }
    return true;
  }
  return a == b;
}

// A hash that values same_value calls equal share: every number hashes as a double (equal
// values are equal doubles), an object's members as an order-free sum.
size_t value_hash(const Json& v) {
  if (v.is_number()) return std::hash<double>()(v.get<double>() + 0.0);  // -0 as 0
  size_t h = std::hash<int>()(static_cast<int>(v.type()));
  const auto mix = [&](size_t x) { h ^= x + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
  if (v.is_string()) mix(std::hash<std::string>()(v.get_ref<const std::string&>()));
  if (v.is_boolean()) mix(v.get<bool>());
  if (v.is_array())
    for (const Json& x : v) mix(value_hash(x));
  if (v.is_object())
    for (auto it = v.begin(); it != v.end(); ++it)
      h += std::hash<std::string>()(it.key()) * 31 + value_hash(it.value());
  return h;
}

struct ValueHash {
  size_t operator()(const Json* v) const { return value_hash(*v); }
};
struct ValueEqual {
  bool operator()(const Json* a, const Json* b) const { return same_value(*a, *b); }
};
using ValueSet = std::unordered_map<const Json*, size_t, ValueHash, ValueEqual>;

class Disjointness {
 public:
  Disjointness(const SchemaCompiler& c, const std::string& path, size_t& steps)
      : c_(c), path_(path), steps_(steps) {}

  bool disjoint(const Json& a_in, const Json& b_in, int depth) {
    if (depth > 16) return false;
    spend(1);
    const Json& a = deref(a_in);
    const Json& b = deref(b_in);
    if (a.is_boolean() || b.is_boolean()) return a == Json(false) || b == Json(false);
    if (const Json* alts = alternatives_of(a))
      return std::all_of(alts->begin(), alts->end(),
                         [&](const Json& x) { return disjoint(x, b, depth + 1); });
    if (const Json* alts = alternatives_of(b))
      return std::all_of(alts->begin(), alts->end(),
                         [&](const Json& x) { return disjoint(a, x, depth + 1); });
    Json storage_a, storage_b;
    const Json* va = values_of(a, storage_a);
    const Json* vb = values_of(b, storage_b);
    if (va && vb) return !shares_a_value(*va, *vb);
    spend((va ? va->size() : 0) + (vb ? vb->size() : 0));  // the scans of the values below
    if (va && values_outside_types(*va, declared_types(b))) return true;
    if (vb && values_outside_types(*vb, declared_types(a))) return true;
    const auto ta = declared_types(a), tb = declared_types(b);
    if (!types_overlap(ta, tb)) return true;
    if (ta == std::set<std::string>{"object"} && tb == ta)
      return required_property_differs(a, b, depth);
    return false;
  }

  // Two value lists share a value: hashed, so two long enums cost their lengths' sum.
  bool shares_a_value(const Json& a, const Json& b) {
    spend(a.size() + b.size());
    ValueSet seen;
    for (const Json& x : a) seen.emplace(&x, 0);
    return std::any_of(b.begin(), b.end(), [&](const Json& x) { return seen.contains(&x); });
  }

  // Where every alternative lists its values (const or enum, the common large oneOf), the
  // alternatives are disjoint when no value appears in two: one hashed pass over them all,
  // not a comparison per pair. The pair found, or nullopt; false when some alternative
  // lists no values.
  bool values_only(const Json& list, std::optional<std::pair<size_t, size_t>>& overlap) {
    std::vector<Json> storage(list.size());
    std::vector<const Json*> values(list.size());
    for (size_t i = 0; i < list.size(); ++i)
      if (!(values[i] = values_of(deref(list[i]), storage[i]))) return false;
    ValueSet first_in;
    for (size_t i = 0; i < list.size(); ++i)
      for (const Json& v : *values[i]) {
        const auto [it, fresh] = first_in.emplace(&v, i);
        if (!fresh && it->second != i) {
          overlap = std::pair{it->second, i};
          return true;
        }
      }
    return true;
  }

 private:
  // Bounds the proof's work: alternatives expand anyOf and $ref again at every use, so a
  // small schema can ask for exponentially many steps (W^16 for 16 levels of W choices).
  // The budget is the whole schema's, not each oneOf's (a hundred oneOfs of 262k steps
  // each had taken 11 s): steps_ is the compiler's.
  static constexpr size_t kMaxSteps = 1'000'000;
  void spend(size_t steps) {
    steps_ += steps;
    if (steps_ > kMaxSteps) throw OneOfTooComplex{};
  }

  const Json& deref(const Json& s) {
    const Json* x = &s;
    for (int hops = 0; hops < 32 && x->is_object(); ++hops) {
      if (x->contains("$ref") && (*x)["$ref"].is_string())
        x = &c_.resolve((*x)["$ref"].get<std::string>(), path_);
      else if (x->contains("allOf") && (*x)["allOf"].is_array() && (*x)["allOf"].size() == 1)
        x = &(*x)["allOf"][0];
      else
        break;
    }
    return *x;
  }

  static bool values_outside_types(const Json& values, const std::set<std::string>& types) {
    return std::none_of(values.begin(), values.end(),
                        [&](const Json& v) { return types_overlap(types_of_value(v), types); });
  }

  // The schema a property's value must satisfy, or nullptr when unknown or unconstrained.
  static const Json* property_schema(const Json& s, const std::string& name) {
    if (s.contains("properties") && s["properties"].is_object() && s["properties"].contains(name))
      return &s["properties"][name];
    if (s.contains("additionalProperties")) return &s["additionalProperties"];
    return nullptr;
  }

  bool required_property_differs(const Json& a, const Json& b, int depth) {
    if (!a.contains("required") || !b.contains("required")) return false;
    for (const Json& name : a["required"]) {
      if (!name.is_string() || !b["required"].is_array()) continue;
      if (std::find(b["required"].begin(), b["required"].end(), name) == b["required"].end())
        continue;
      const Json* pa = property_schema(a, name);
      const Json* pb = property_schema(b, name);
      if (pa && pb && disjoint(*pa, *pb, depth + 1)) return true;
    }
    return false;
  }

  const SchemaCompiler& c_;
  const std::string& path_;
  size_t& steps_;
};

}  // namespace

std::optional<std::pair<size_t, size_t>> one_of_overlap(SchemaCompiler& c, const Json& list,
                                                        const std::string& path) {
  Disjointness d(c, path, c.disjointness_steps());
  std::optional<std::pair<size_t, size_t>> overlap;
  if (d.values_only(list, overlap)) return overlap;
  for (size_t i = 0; i < list.size(); ++i)
    for (size_t j = i + 1; j < list.size(); ++j)
      if (!d.disjoint(list[i], list[j], 0)) return std::pair{i, j};
  return std::nullopt;
}

}  // namespace tandem::grammar::json_schema
