// Filters on strings and numbers: trim, upper, lower, title, capitalize, replace, indent,
// wordcount, string, safe, escape, format, int, float, abs, round, tojson, default.
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include <array>

#include "protocol/jinja/builtin_tables.h"
#include "protocol/jinja/error.h"
#include "protocol/jinja/json.h"
#include "protocol/jinja/operators.h"
#include "protocol/jinja/string_ops.h"
#include "protocol/jinja/unicode.h"

namespace tandem::jinja {
namespace {

Value trim(Interpreter&, const Value& input, const CallArgs& args) {
  const BoundArgs a("trim", args, {"chars"});
  return strip(to_text(input), optional_string(a, 0), StripSide::kBoth);
}

template <CaseMap kMode>
Value change_case(Interpreter&, const Value& input, const CallArgs& args) {
  const BoundArgs a("case filter", args, {});
  return map_case(to_text(input), kMode);
}

Value replace_filter(Interpreter&, const Value& input, const CallArgs& args) {
  const BoundArgs a("replace", args, {"old", "new", "count"}, 2);
  const Value count = a.get(2, Value::none());
  return replace(to_text(input), to_text(a[0]).str(), to_text(a[1]),
                 count.is_none() ? -1 : count.to_int());
}

Value indent(Interpreter&, const Value& input, const CallArgs& args) {
  const BoundArgs a("indent", args, {"width", "first", "blank"});
  // Jinja2's do_indent appends "\n" to its input: only a string takes it.
  require_defined(input);
  if (!input.is_string())
    fail("unsupported operand type(s) for +=: '" + type_name(input) + "' and 'str'");
  const Value width = a.get(0, Value(4));
  // Bounded before it is built: indent(1000000000) had made 1 GB before the 16 MiB check.
  if (!width.is_string() && width.to_int() > static_cast<int64_t>(kMaxTextBytes))
    unsupported("strings over 16 MiB");
  const Text indention =
      width.is_string()
          ? width.text()
          : Text(std::string(static_cast<size_t>(std::max<int64_t>(0, width.to_int())), ' '));
  Text s = to_text(input);
  s.append("\n", false);
  const std::vector<Text> lines = splitlines(s);
  Text out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) out.append("\n", false);
    const bool indent_line = truthy(a.get(2, false)) ? i > 0 : (i > 0 && !lines[i].empty());
    if (indent_line) out.append(indention);
    out.append(lines[i]);
  }
  if (truthy(a.get(1, false))) {
    Text first = indention;
    first.append(out);
    return Value(std::move(first));
  }
  return Value(std::move(out));
}

Value wordcount(Interpreter&, const Value& input, const CallArgs&) {
  const std::string s = to_text(input).str();
  int64_t words = 0;
  bool in_word = false;
  for (size_t pos = 0; pos < s.size();) {
    const bool word = is_word_char(decode_utf8(s, pos));
    if (word && !in_word) ++words;
    in_word = word;
  }
  return words;
}

Value string_filter(Interpreter&, const Value& input, const CallArgs&) { return to_text(input); }

Value escape(Interpreter&, const Value& input, const CallArgs&) {
  const Text text = to_text(input);
  Text out;
  const std::string& s = text.str();
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const char* entity = c == '&'    ? "&amp;"
                         : c == '<'  ? "&lt;"
                         : c == '>'  ? "&gt;"
                         : c == '"'  ? "&#34;"
                         : c == '\'' ? "&#39;"
                                     : nullptr;
    if (entity) {
      out.append(entity, text.from_input_at(i));
    } else {
      out.append(text, i, 1);
    }
  }
  return Value(std::move(out));
}

// "%s and %d" | format(a, b): printf-style with %s, %d, %i and %%.
Value format_filter(Interpreter&, const Value& input, const CallArgs& args) {
  const Text pattern = to_text(input);
  const std::string& s = pattern.str();
  Text out;
  size_t next_arg = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out.append(pattern, i, 1);
      continue;
    }
    const char spec = i + 1 < s.size() ? s[++i] : '\0';
    if (spec == '%') {
      out.append("%", false);
      continue;
    }
    if (spec != 's' && spec != 'd' && spec != 'i') unsupported(std::string("format spec %") + spec);
    if (next_arg >= args.positional.size()) fail("not enough arguments for format string");
    const Value& arg = args.positional[next_arg++];
    if (spec == 's') {
      out.append(to_text(arg));
    } else {
      if (!arg.is_number()) fail("%d format: a real number is required, not " + type_name(arg));
      out.append(
          std::to_string(arg.is_float() ? static_cast<int64_t>(arg.as_float()) : arg.to_int()),
          false);
    }
  }
  if (next_arg < args.positional.size())
    fail("not all arguments converted during string formatting");
  return Value(std::move(out));
}

// Python's int(x) of a finite float; one beyond int64 is a Python int tandem lacks (a cast
// there is undefined: it printed -9223372036854775808 for 1e19).
int64_t truncated(double x) {
  if (!(x >= -9223372036854775808.0 && x < 9223372036854775808.0))
    unsupported("integers beyond 64 bits");
  return static_cast<int64_t>(x);
}

Value int_filter(Interpreter&, const Value& input, const CallArgs& args) {
  const BoundArgs a("int", args, {"default", "base"});
  require_defined(input);
  int64_t parsed = 0;
  double number = 0;
  if (input.is_string() &&
      parse_int(input.text().str(), static_cast<int>(a.get(1, Value(10)).to_int()), parsed)) {
    return parsed;
  }
  if (input.is_int() || input.is_bool()) return input.to_int();
  // Jinja2's int(value) lets a float's OverflowError out; its fallback int(float(value))
  // gives the default for NaN and infinity alike.
  if (input.is_float() && std::isinf(input.as_float()))
    fail("cannot convert float infinity to integer");
  if (input.is_float() && std::isfinite(input.as_float())) return truncated(input.as_float());
  if (input.is_string() && parse_float(input.text().str(), number) && std::isfinite(number))
    return truncated(number);
  return a.get(0, Value(0));
}

Value float_filter(Interpreter&, const Value& input, const CallArgs& args) {
  const BoundArgs a("float", args, {"default"});
  require_defined(input);
  double number = 0;
  if (input.is_number()) return input.to_double();
  if (input.is_string() && parse_float(input.text().str(), number)) return number;
  return a.get(0, Value(0.0));
}

Value abs_filter(Interpreter&, const Value& input, const CallArgs&) {
  if (input.is_float()) return std::fabs(input.as_float());
  if (input.is_int() || input.is_bool())
    return input.to_int() < 0 ? negate(input) : Value(input.to_int());
  require_defined(input);
  fail("bad operand type for abs(): '" + type_name(input) + "'");
}

// Python's round(x, -digits): to a multiple of 10^digits, halves to even; an int stays an
// int, a float a float (round(1234.5, -2) is 1200.0, round(7, -1) is 10).
Value round_to_tens(const Value& input, int64_t digits) {
  if (input.is_float()) {
    const double x = input.as_float();
    if (digits > 308) return std::copysign(0.0, x);  // 10^digits is past double's range
    const double unit = std::pow(10.0, static_cast<double>(digits));
    return std::nearbyint(x / unit) * unit;  // ties to even: the default rounding mode
  }
  const int64_t x = input.to_int();
  if (digits > 18) {  // only 10^19 itself is a nearer multiple, for |x| past 5e18
    if (digits == 19 && (x > 5'000'000'000'000'000'000 || x < -5'000'000'000'000'000'000))
      unsupported("integers beyond 64 bits");
    return int64_t{0};
  }
  int64_t unit = 1;
  for (int64_t i = 0; i < digits; ++i) unit *= 10;
  int64_t q = x / unit, r = x % unit;
  if (r < 0) q -= 1, r += unit;  // floor division, remainder in [0, unit)
  if (2 * r > unit || (2 * r == unit && q % 2 != 0)) q += 1;
  int64_t result = 0;
  if (__builtin_mul_overflow(q, unit, &result)) unsupported("integers beyond 64 bits");
  return result;
}

Value round_filter(Interpreter&, const Value& input, const CallArgs& args) {
  const BoundArgs a("round", args, {"precision", "method"});
  const int64_t precision = a.get(0, Value(0)).to_int();
  const std::string method = a.has(1) ? to_text(a[1]).str() : "common";
  if (!input.is_number()) fail("round: a number is required, not " + type_name(input));
  if (method == "common" && precision < 0) return round_to_tens(input, -precision);
  if (method == "common" && !input.is_float()) return input.to_int();
  const double x = input.to_double();
  const double scale = std::pow(10.0, static_cast<double>(precision));
  if (method == "ceil") return std::ceil(x * scale) / scale;
  if (method == "floor") return std::floor(x * scale) / scale;
  if (method != "common") fail("method must be common, ceil or floor");
  char buf[512];
  std::snprintf(buf, sizeof buf, "%.*f", static_cast<int>(std::clamp<int64_t>(precision, 0, 300)),
                x);
  return std::strtod(buf, nullptr);
}

// transformers' tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False).
Value tojson(Interpreter&, const Value& input, const CallArgs& args) {
  const BoundArgs a("tojson", args, {"ensure_ascii", "indent", "separators", "sort_keys"});
  JsonFormat format;
  format.ensure_ascii = truthy(a.get(0, false));
  const Value indent = a.get(1, Value::none());
  if (indent.is_string()) {
    format.indent = indent.text().str();
  } else if (!indent.is_none()) {
    format.indent = std::string(static_cast<size_t>(std::max<int64_t>(0, indent.to_int())), ' ');
  }
  const Value separators = a.get(2, Value::none());
  if (!separators.is_none()) {
    const std::vector<Value> parts = iterate(separators);
    if (parts.size() != 2) fail("separators must be an (item_separator, key_separator) pair");
    format.item_separator = to_text(parts[0]).str();
    format.key_separator = to_text(parts[1]).str();
  }
  format.sort_keys = truthy(a.get(3, false));
  return to_json(input, format);
}

Value default_filter(Interpreter&, const Value& input, const CallArgs& args) {
  const BoundArgs a("default", args, {"default_value", "boolean"});
  const bool use_default = input.is_undefined() || (truthy(a.get(1, false)) && !truthy(input));
  return use_default ? a.get(0, Value::string("")) : input;
}

}  // namespace

std::optional<std::string> optional_string(const BoundArgs& args, size_t i) {
  if (!args.has(i) || args[i].is_none()) return std::nullopt;
  return to_text(args[i]).str();
}

void add_text_filters(FilterTable& table) {
  // Names and their functions, pairwise (an alias repeats its function).
  static constexpr std::array<std::string_view, 21> kNames = {
      "trim",      "upper",  "lower", "title",  "capitalize", "replace",     "indent",
      "wordcount", "string", "safe",  "escape", "e",          "forceescape", "format",
      "int",       "float",  "abs",   "round",  "tojson",     "default",     "d"};
  static const std::array<FilterFn, 21> kFunctions = {trim,
                                                      change_case<CaseMap::kUpper>,
                                                      change_case<CaseMap::kLower>,
                                                      change_case<CaseMap::kJinjaTitle>,
                                                      change_case<CaseMap::kCapitalize>,
                                                      replace_filter,
                                                      indent,
                                                      wordcount,
                                                      string_filter,
                                                      string_filter,
                                                      escape,
                                                      escape,
                                                      escape,
                                                      format_filter,
                                                      int_filter,
                                                      float_filter,
                                                      abs_filter,
                                                      round_filter,
                                                      tojson,
                                                      default_filter,
                                                      default_filter};
  for (size_t i = 0; i < kNames.size(); ++i) table[kNames[i]] = kFunctions[i];
}

}  // namespace tandem::jinja
