// Objects: properties in the schema's order, the required ones always present, the
// others optional, then additional properties (keys that differ from every listed name).
//
// The comma before a property depends on whether any came before it, so the grammar is
// built from the last property back: after_i[c] is "properties i.. given that a comma is
// needed (c) or not", and both after_i[false] and after_i[true] refer to after_{i+1}[true].
// The expression graph shares those tails, so the automaton stays linear in the number of
// properties however many are optional.

#include <map>

#include "runner/grammar/json_schema/compiler.h"

namespace tandem::grammar::json_schema {

namespace {

std::string pointer_escape(const std::string& name) {
  std::string out;
  for (char ch : name) {
    if (ch == '~')
      out += "~0";
    else if (ch == '/')
      out += "~1";
    else
      out += ch;
  }
  return out;
}

std::u32string decode(SchemaCompiler& c, const std::string& s, const std::string& path) {
  std::u32string out;
  for (size_t i = 0; i < s.size();) {
    const auto lead = static_cast<uint8_t>(s[i]);
    const size_t n = lead < 0x80 ? 1 : lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 0;
    if (n == 0 || i + n > s.size()) c.fail(path, "a property name is not valid UTF-8");
    char32_t cp = n == 1 ? lead : lead & (0x7F >> n);
    for (size_t k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<uint8_t>(s[i + k]) & 0x3F);
    out.push_back(cp);
    i += n;
  }
  return out;
}

// A JSON string whose decoded value is none of `names`: it follows the names' trie with
// exact characters and leaves it with a raw character no name has there (or ends where no
// name ends). Escapes are used only once off the trie: a narrowing, never a loosening.
class KeyExcluding {
 public:
  KeyExcluding(SchemaCompiler& c, const std::vector<std::u32string>& names) : c_(c) {
    nodes_.emplace_back();
    for (const std::u32string& name : names) {
      size_t node = 0;
      for (char32_t cp : name) {
        auto [it, added] = nodes_[node].children.try_emplace(cp, nodes_.size());
        if (added) nodes_.emplace_back();
        node = it->second;
      }
      nodes_[node].is_name = true;
    }
  }

  ExprId build() {
    GrammarBuilder& b = c_.builder();
    return b.sequence({b.literal("\""), from(0)});
  }

 private:
  struct Node {
    std::map<char32_t, size_t> children;
    bool is_name = false;
  };

  ExprId from(size_t node) {
    GrammarBuilder& b = c_.builder();
    std::vector<ExprId> items;
    if (!nodes_[node].is_name) items.push_back(b.literal("\""));
    std::vector<CodepointRange> taken;
    for (const auto& [cp, child] : nodes_[node].children) {
      taken.push_back({cp, cp});
      items.push_back(b.sequence({c_.json_chars({{cp, cp}}), from(child)}));
    }
    const std::vector<CodepointRange> others =
        GrammarBuilder::complement(GrammarBuilder::normalize(std::move(taken)));
    items.push_back(b.sequence({b.codepoints(intersect(others, raw_string_chars())),
                                b.star(c_.string_char()), b.literal("\"")}));
    return b.choice(std::move(items));
  }

  SchemaCompiler& c_;
  std::vector<Node> nodes_;
};

struct Property {
  std::string name;
  ExprId value;
  bool required;
};

}  // namespace

ExprId compile_object(SchemaCompiler& c, const Json& s, const std::string& path) {
  GrammarBuilder& b = c.builder();
  std::vector<Property> properties;
  std::vector<std::u32string> names;
  if (const auto it = s.find("properties"); it != s.end()) {
    if (!it->is_object()) c.fail(path, "'properties' must be an object");
    for (const auto& [name, schema] : it->items()) {
      properties.push_back(
          {name, c.schema(schema, path + "/properties/" + pointer_escape(name)), false});
      names.push_back(decode(c, name, path));
    }
  }
  const auto extra = s.find("additionalProperties");
  if (extra != s.end() && !extra->is_boolean() && !extra->is_object())
    c.fail(path, "'additionalProperties' must be a boolean or a schema");
  const bool extras = extra == s.end() ? !s.contains("properties") : *extra != Json(false);
  const ExprId extra_value =
      extras && extra != s.end() ? c.schema(*extra, path + "/additionalProperties") : c.any_value();

  if (const auto it = s.find("required"); it != s.end()) {
    if (!it->is_array()) c.fail(path, "'required' must be an array of strings");
    for (const Json& name : *it) {
      if (!name.is_string()) c.fail(path, "'required' must be an array of strings");
      const std::string required = name.get<std::string>();
      bool listed = false;
      for (Property& p : properties) {
        if (p.name == required) p.required = listed = true;
      }
      if (listed) continue;
      if (extra != s.end() && !extras)
        return c.unsatisfiable(path, "required property '" + required +
                                         "' is not in 'properties' and additionalProperties is "
                                         "false");
      properties.push_back({required, extra_value, true});
      names.push_back(decode(c, required, path));
    }
  }

  const ExprId ws = c.ws();
  const ExprId comma = b.sequence({b.literal(","), ws});
  const auto member = [&](ExprId key, ExprId value) {
    return b.sequence({key, ws, b.literal(":"), ws, value, ws});
  };
  ExprId after_comma = b.empty(), after_none = b.empty();
  if (extras) {
    const ExprId extra_member = member(KeyExcluding(c, names).build(), extra_value);
    after_comma = b.star(b.sequence({comma, extra_member}));
    after_none = b.optional(b.sequence({extra_member, after_comma}));
  }
  for (size_t i = properties.size(); i-- > 0;) {
    const Property& p = properties[i];
    const ExprId kv = member(b.literal(Json(p.name).dump()), p.value);
    const ExprId with_comma = b.sequence({comma, kv, after_comma});
    const ExprId first = b.sequence({kv, after_comma});
    after_comma = p.required ? with_comma : b.choice({with_comma, after_comma});
    after_none = p.required ? first : b.choice({first, after_none});
  }
  return b.sequence({b.literal("{"), ws, after_none, b.literal("}")});
}

}  // namespace tandem::grammar::json_schema
