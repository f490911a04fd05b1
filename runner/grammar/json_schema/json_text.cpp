// The pieces of JSON text every schema grammar is made of: whitespace, string characters,
// numbers, and the value of any type (for `{}`, `true`, absent `items`, json_object mode).
// Each is built once per compiler and shared (the expression graph is a DAG).

#include <algorithm>

#include "runner/grammar/json_schema/compiler.h"

namespace tandem::grammar::json_schema {

const std::vector<CodepointRange>& raw_string_chars() {
  static const std::vector<CodepointRange> raw = {
      {0x20, 0x21}, {0x23, 0x5B}, {0x5D, 0x7E}, {0x80, 0x10FFFF}};
  return raw;
}

std::vector<CodepointRange> intersect(const std::vector<CodepointRange>& a,
                                      const std::vector<CodepointRange>& b) {
  std::vector<CodepointRange> out;
  for (const CodepointRange& x : a)
    for (const CodepointRange& y : b)
      if (std::max(x.first, y.first) <= std::min(x.last, y.last))
        out.push_back({std::max(x.first, y.first), std::min(x.last, y.last)});
  return GrammarBuilder::normalize(std::move(out));
}

namespace {

bool contains(const std::vector<CodepointRange>& set, char32_t cp) {
  return std::any_of(set.begin(), set.end(),
                     [&](const CodepointRange& r) { return r.first <= cp && cp <= r.last; });
}

// The escape a JSON encoder writes for a character that cannot appear raw.
std::string escape_of(char32_t cp) {
  switch (cp) {
    case '"':
      return "\\\"";
    case '\\':
      return "\\\\";
    case '\b':
      return "\\b";
    case '\f':
      return "\\f";
    case '\n':
      return "\\n";
    case '\r':
      return "\\r";
    case '\t':
      return "\\t";
    default:
      break;
  }
  static const char kHex[] = "0123456789abcdef";
  return std::string("\\u00") + kHex[(cp >> 4) & 15] + kHex[cp & 15];
}

}  // namespace

ExprId SchemaCompiler::ws() {
  return piece("ws", [&] {
    const ExprId indent = b_.repeat(b_.codepoints({{' ', ' '}, {'\t', '\t'}}), 0, 20);
    return b_.optional(b_.choice({b_.literal(" "), b_.sequence({b_.literal("\n"), indent})}));
  });
}

ExprId SchemaCompiler::string_char() {
  return piece("char", [&] {
    const ExprId hex = b_.codepoints({{'0', '9'}, {'a', 'f'}, {'A', 'F'}});
    const ExprId d = b_.codepoints({{'d', 'd'}, {'D', 'D'}});
    // \uXXXX for every code point but the surrogates, which come only as a valid pair.
    const ExprId bmp = b_.choice(
        {b_.sequence({b_.codepoints({{'0', '9'}, {'a', 'c'}, {'A', 'C'}, {'e', 'f'}, {'E', 'F'}}),
                      hex, hex, hex}),
         b_.sequence({d, b_.codepoints({{'0', '7'}}), hex, hex})});
    const ExprId pair =
        b_.sequence({d, b_.codepoints({{'8', '9'}, {'a', 'b'}, {'A', 'B'}}), hex, hex,
                     b_.literal("\\u"), d, b_.codepoints({{'c', 'f'}, {'C', 'F'}}), hex, hex});
    const ExprId escape = b_.sequence(
        {b_.literal("\\"), b_.choice({b_.codepoints({{'"', '"'},
                                                     {'\\', '\\'},
                                                     {'/', '/'},
                                                     {'b', 'b'},
                                                     {'f', 'f'},
                                                     {'n', 'n'},
                                                     {'r', 'r'},
                                                     {'t', 't'}}),
                                      b_.sequence({b_.literal("u"), b_.choice({bmp, pair})})})});
    return b_.choice({b_.codepoints(raw_string_chars()), escape});
  });
}

ExprId SchemaCompiler::any_string() {
  return piece("string", [&] {
    const ExprId content = b_.star(string_char());
    return b_.sequence({b_.literal("\""), content, b_.literal("\"")});
  });
}

ExprId SchemaCompiler::digits(uint32_t min, uint32_t max) {
  return b_.repeat(b_.codepoints({{'0', '9'}}), min, max);
}

ExprId SchemaCompiler::integer() {
  return piece("integer", [&] {
    const ExprId integral =
        b_.choice({b_.literal("0"), b_.sequence({b_.codepoints({{'1', '9'}}), digits(0, 15)})});
    return b_.sequence({b_.optional(b_.literal("-")), integral});
  });
}

// A JSON number: the integer part (at most 16 digits), an optional fraction of at most 16
// digits and an optional exponent of at most `exponent_digits` digits.
ExprId SchemaCompiler::decimal(uint32_t exponent_digits) {
  const ExprId fraction = b_.sequence({b_.literal("."), digits(1, 16)});
  const ExprId exponent = b_.sequence({b_.codepoints({{'e', 'e'}, {'E', 'E'}}),
                                       b_.optional(b_.codepoints({{'-', '-'}, {'+', '+'}})),
                                       digits(1, exponent_digits)});
  return b_.sequence({integer(), b_.optional(fraction), b_.optional(exponent)});
}

ExprId SchemaCompiler::number() {
  return piece("number", [&] { return decimal(2); });
}

// A number a 32-bit float holds (OpenAPI's format "float"): a one-digit exponent keeps it
// under 1e26, within float's 3.4e38.
ExprId SchemaCompiler::float_number() {
  return piece("float", [&] { return decimal(1); });
}

// Objects and arrays of anything are one recursive rule; scalars are inlined where they
// are used, so a value that is a string or a number never ends a rule (which keeps the
// matcher's uncertain tokens to those that cross a closing } or ]).
ExprId SchemaCompiler::any_value() {
  if (const auto it = pieces_.find("value"); it != pieces_.end()) return it->second;
  const RuleId container = b_.rule("any JSON object or array");
  const ExprId str = any_string(), num = number();
  const ExprId value = b_.choice(
      {str, num, b_.literal("true"), b_.literal("false"), b_.literal("null"), b_.ref(container)});
  pieces_["value"] = value;
  const ExprId space = ws();
  const ExprId member = b_.sequence({str, space, b_.literal(":"), space, value, space});
  const ExprId comma = b_.sequence({b_.literal(","), space});
  const ExprId object = b_.sequence(
      {b_.literal("{"), space,
       b_.optional(b_.sequence({member, b_.star(b_.sequence({comma, member}))})), b_.literal("}")});
  const ExprId element = b_.sequence({value, space});
  const ExprId array =
      b_.sequence({b_.literal("["), space,
                   b_.optional(b_.sequence({element, b_.star(b_.sequence({comma, element}))})),
                   b_.literal("]")});
  b_.define(container, b_.choice({object, array}));
  return value;
}

ExprId SchemaCompiler::literal_of(const Json& value) { return b_.literal(value.dump()); }

ExprId SchemaCompiler::json_chars(const std::vector<CodepointRange>& set) {
  std::vector<ExprId> items{b_.codepoints(intersect(set, raw_string_chars()))};
  for (char32_t cp = 0; cp < 0x80; ++cp) {
    if (contains(raw_string_chars(), cp) || !contains(set, cp)) continue;
    items.push_back(b_.literal(escape_of(cp)));
  }
  return b_.choice(std::move(items));
}

}  // namespace tandem::grammar::json_schema
