// Jinja2's tests (`x is name(args)`): defined, none, string, mapping, sequence ...
#include <array>

#include "protocol/jinja/builtin_tables.h"
#include "protocol/jinja/error.h"
#include "protocol/jinja/operators.h"
#include "protocol/jinja/string_ops.h"

namespace tandem::jinja {
namespace {

// The one argument of a comparison test (equalto, divisibleby, in ...).
const Value& argument(const CallArgs& args, std::string_view test) {
  if (args.positional.size() != 1 || !args.named.empty()) {
    fail(std::string(test) + "() takes exactly one argument");
  }
  return args.positional[0];
}

bool defined(Interpreter&, const Value& v, const CallArgs&) { return !v.is_undefined(); }
bool undefined(Interpreter&, const Value& v, const CallArgs&) { return v.is_undefined(); }
bool none(Interpreter&, const Value& v, const CallArgs&) { return v.is_none(); }
bool boolean(Interpreter&, const Value& v, const CallArgs&) { return v.is_bool(); }
bool is_false(Interpreter&, const Value& v, const CallArgs&) { return v.is_bool() && !v.as_bool(); }
bool is_true(Interpreter&, const Value& v, const CallArgs&) { return v.is_bool() && v.as_bool(); }
bool integer(Interpreter&, const Value& v, const CallArgs&) { return v.is_int(); }
bool is_float(Interpreter&, const Value& v, const CallArgs&) { return v.is_float(); }
bool number(Interpreter&, const Value& v, const CallArgs&) { return v.is_number(); }
bool string(Interpreter&, const Value& v, const CallArgs&) { return v.is_string(); }
bool mapping(Interpreter&, const Value& v, const CallArgs&) { return v.is_dict(); }
bool callable(Interpreter&, const Value& v, const CallArgs&) { return v.is_function(); }
bool escaped(Interpreter&, const Value&, const CallArgs&) { return false; }

// len() and [] both work: strings, lists, tuples, dicts, range, and (as in Jinja2) undefined.
bool sequence(Interpreter&, const Value& v, const CallArgs&) {
  if (v.is_list())
    return v.list().kind != ListKind::kIterator &&
           (v.list().kind != ListKind::kView || v.list().type_name == "range");
  return v.is_string() || v.is_dict() || v.is_undefined();
}

bool iterable(Interpreter&, const Value& v, const CallArgs&) {
  return v.is_list() || v.is_string() || v.is_dict() || v.is_undefined();
}

bool lower(Interpreter&, const Value& v, const CallArgs&) {
  return is_lower_text(to_text(v).str());
}
bool upper(Interpreter&, const Value& v, const CallArgs&) {
  return is_upper_text(to_text(v).str());
}

int64_t integer_value(const Value& v) {
  if (v.is_int() || v.is_bool()) return v.to_int();
  require_defined(v);
  fail("not all arguments converted during string formatting");
}

// Jinja2's `value % 2 == 1`: floats too (4.0 is even, 3.5 neither).
bool odd(Interpreter&, const Value& v, const CallArgs&) {
  if (v.is_float()) return equals(binary(BinaryOp::kMod, v, Value(2)), Value(1));
  return binary(BinaryOp::kMod, Value(integer_value(v)), Value(2)).as_int() == 1;
}

bool even(Interpreter&, const Value& v, const CallArgs&) {
  if (v.is_float()) return equals(binary(BinaryOp::kMod, v, Value(2)), Value(0));
  return binary(BinaryOp::kMod, Value(integer_value(v)), Value(2)).as_int() == 0;
}

bool divisibleby(Interpreter&, const Value& v, const CallArgs& args) {
  return equals(binary(BinaryOp::kMod, v, argument(args, "divisibleby")), Value(0));
}

bool sameas(Interpreter&, const Value& v, const CallArgs& args) {
  const Value& other = argument(args, "sameas");
  if (v.is_none() || v.is_undefined() || v.is_bool())
    return v.kind() == other.kind() && equals(v, other);
  return v.same_object(other) || (v.is_int() && other.is_int() && v.as_int() == other.as_int() &&
                                  v.as_int() >= -5 && v.as_int() <= 256);
}

bool in(Interpreter&, const Value& v, const CallArgs& args) {
  return contains(argument(args, "in"), v);
}
bool eq(Interpreter&, const Value& v, const CallArgs& args) {
  return equals(v, argument(args, "eq"));
}
bool ne(Interpreter&, const Value& v, const CallArgs& args) {
  return !equals(v, argument(args, "ne"));
}
bool lt(Interpreter&, const Value& v, const CallArgs& args) {
  return less(v, argument(args, "lt"));
}
bool gt(Interpreter&, const Value& v, const CallArgs& args) {
  return less(argument(args, "gt"), v, ">");
}
bool le(Interpreter&, const Value& v, const CallArgs& args) {
  const Value& other = argument(args, "le");
  return less(v, other, "<=") || equals(v, other);
}
bool ge(Interpreter&, const Value& v, const CallArgs& args) {
  const Value& other = argument(args, "ge");
  return less(other, v, ">=") || equals(v, other);
}

bool filter(Interpreter&, const Value& v, const CallArgs&) {
  return v.is_string() && find_filter(v.text().str()) != nullptr;
}

bool test(Interpreter&, const Value& v, const CallArgs&) {
  return v.is_string() && find_test(v.text().str()) != nullptr;
}

}  // namespace

void add_tests(TestTable& table) {
  // Names and their functions, pairwise (an alias repeats its function).
  static constexpr std::array<std::string_view, 39> kNames = {
      "defined",  "undefined", "none",   "boolean",  "false",    "true",        "integer",
      "float",    "number",    "string", "mapping",  "callable", "escaped",     "sequence",
      "iterable", "lower",     "upper",  "odd",      "even",     "divisibleby", "sameas",
      "in",       "filter",    "test",   "==",       "eq",       "equalto",     "!=",
      "ne",       "<",         "lt",     "lessthan", ">",        "gt",          "greaterthan",
      "<=",       "le",        ">=",     "ge"};
  static const std::array<TestFn, 39> kFunctions = {
      defined, undefined, none,    boolean,     is_false, is_true,  integer,  is_float,
      number,  string,    mapping, callable,    escaped,  sequence, iterable, lower,
      upper,   odd,       even,    divisibleby, sameas,   in,       filter,   test,
      eq,      eq,        eq,      ne,          ne,       lt,       lt,       lt,
      gt,      gt,        gt,      le,          le,       ge,       ge};
  for (size_t i = 0; i < kNames.size(); ++i) table[kNames[i]] = kFunctions[i];
}

}  // namespace tandem::jinja
