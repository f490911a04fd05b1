#include "protocol/jinja/operators.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>

#include "protocol/jinja/error.h"
#include "protocol/jinja/unicode.h"

namespace tandem::jinja {
namespace {

bool list_equals(const ListData& a, const ListData& b) {
  if (a.items.size() != b.items.size()) return false;
  for (size_t i = 0; i < a.items.size(); ++i) {
    if (!equals(a.items[i], b.items[i])) return false;
  }
  return true;
}

bool dict_equals(const DictData& a, const DictData& b) {
  if (a.entries.size() != b.entries.size()) return false;
  for (const auto& [key, value] : a.entries) {
    const Value* other = b.find(key);
    if (other == nullptr || !equals(value, *other)) return false;
  }
  return true;
}

bool is_sequence_list(const Value& v) {
  return v.is_list() && (v.list().kind == ListKind::kList || v.list().kind == ListKind::kTuple);
}

[[noreturn]] void fail_operands(std::string_view op, const Value& a, const Value& b) {
  fail("unsupported operand type(s) for " + std::string(op) + ": '" + type_name(a) + "' and '" +
       type_name(b) + "'");
}

void check_overflow(bool overflow) {
  if (overflow) unsupported("integers beyond 64 bits");
}

Value repeat(const Value& seq, int64_t times) {
  times = std::max<int64_t>(times, 0);
  const size_t unit = seq.is_string() ? seq.text().size() : seq.list().items.size();
  const size_t limit = seq.is_string() ? kMaxTextBytes : kMaxItems;
  if (unit > 0 && static_cast<uint64_t>(times) > limit / unit) {
    if (seq.is_string()) unsupported("strings over 16 MiB");
    check_items(limit + 1);
  }
  if (seq.is_string()) {
    Text out;
    for (int64_t i = 0; i < times; ++i) out.append(seq.text());
    return Value(std::move(out));
  }
  std::vector<Value> items;
  for (int64_t i = 0; i < times; ++i) {
    items.insert(items.end(), seq.list().items.begin(), seq.list().items.end());
  }
  return Value::list(std::move(items), seq.list().kind);
}

Value add(const Value& a, const Value& b) {
  if (a.is_string() && b.is_string()) {
    Text out = a.text();
    out.append(b.text());
    return Value(std::move(out));
  }
  if (is_sequence_list(a) && is_sequence_list(b) && a.list().kind == b.list().kind) {
    check_items(a.list().items.size() + b.list().items.size());  // before the copy is made
    std::vector<Value> items = a.list().items;
    items.insert(items.end(), b.list().items.begin(), b.list().items.end());
    return Value::list(std::move(items), a.list().kind);
  }
  if (a.is_string()) {
    fail("can only concatenate str (not \"" + type_name(b) + "\") to str");
  }
  fail_operands("+", a, b);
}

// CPython's float_divmod (floatobject.c): the floor quotient from the unadjusted
// remainder, rounded to the nearest integer, and the signs of zero results as Python gives
// them (-4 % 0.5 is 0.0, -0.0 // 1 is -0.0).
std::pair<double, double> float_divmod(double x, double y) {
  double mod = std::fmod(x, y);
  double div = (x - mod) / y;
  if (mod != 0) {
    if ((y < 0) != (mod < 0)) {
      mod += y;
      div -= 1.0;
    }
  } else {
    mod = std::copysign(0.0, y);
  }
  double floor_div = std::copysign(0.0, x / y);
  if (div != 0) {
    floor_div = std::floor(div);
    if (div - floor_div > 0.5) floor_div += 1.0;
  }
  return {floor_div, mod};
}

// Python's float **: an overflow is an error, not inf, and a negative base to a fractional
// power (a complex number in Python) is refused.
double float_pow(double x, double y) {
  if (x == 0 && y < 0) fail("0.0 cannot be raised to a negative power");
  if (x < 0 && std::isfinite(x) && std::isfinite(y) && y != std::floor(y))
    unsupported("complex numbers (a negative number to a fractional power)");
  const double result = std::pow(x, y);
  if (std::isinf(result) && std::isfinite(x) && std::isfinite(y))
    fail("(34, 'Numerical result out of range')");
  return result;
}

Value int_arith(BinaryOp op, int64_t x, int64_t y) {
  int64_t r = 0;
  switch (op) {
    case BinaryOp::kAdd:
      check_overflow(__builtin_add_overflow(x, y, &r));
      return r;
    case BinaryOp::kSub:
      check_overflow(__builtin_sub_overflow(x, y, &r));
      return r;
    case BinaryOp::kMul:
      check_overflow(__builtin_mul_overflow(x, y, &r));
      return r;
    case BinaryOp::kFloorDiv:
    case BinaryOp::kMod: {
      if (y == 0) fail("integer division or modulo by zero");
      if (x == INT64_MIN && y == -1) unsupported("integers beyond 64 bits");
      int64_t q = x / y;
      int64_t m = x % y;
      if (m != 0 && ((m < 0) != (y < 0))) {
        q -= 1;
        m += y;
      }
      return op == BinaryOp::kFloorDiv ? q : m;
    }
    case BinaryOp::kPow: {
      if (y < 0 && x == 0) fail("0.0 cannot be raised to a negative power");
      if (y < 0) return float_pow(static_cast<double>(x), static_cast<double>(y));
      int64_t result = 1;
      for (int64_t base = x; y > 0; y >>= 1) {
        if (y & 1) check_overflow(__builtin_mul_overflow(result, base, &result));
        if (y > 1) check_overflow(__builtin_mul_overflow(base, base, &base));
      }
      return result;
    }
    case BinaryOp::kDiv:
      break;
  }
  if (y == 0) fail("division by zero");
  // Python divides two ints exactly and rounds once. Where both are exact doubles (below
  // 2^53) so is one double division; beyond, long double's 64-bit mantissa holds every
  // int64 and its quotient is rounded twice, which is Python's result but for a last-place
  // difference in rare cases (9007199254740993 / 3 is ...331.0, as in Python).
  constexpr int64_t kExact = int64_t{1} << 53;
  if (x > -kExact && x < kExact && y > -kExact && y < kExact)
    return static_cast<double>(x) / static_cast<double>(y);
  return static_cast<double>(static_cast<long double>(x) / static_cast<long double>(y));
}

Value float_arith(BinaryOp op, double x, double y) {
  switch (op) {
    case BinaryOp::kAdd:
      return x + y;
    case BinaryOp::kSub:
      return x - y;
    case BinaryOp::kMul:
      return x * y;
    case BinaryOp::kPow:
      return float_pow(x, y);
    case BinaryOp::kDiv:
      if (y == 0) fail("float division by zero");
      return x / y;
    case BinaryOp::kFloorDiv:
    case BinaryOp::kMod: {
      if (y == 0) fail(op == BinaryOp::kMod ? "float modulo" : "float floor division by zero");
      const auto [quotient, remainder] = float_divmod(x, y);
      return op == BinaryOp::kMod ? remainder : quotient;
    }
  }
  return 0.0;
}

const char* op_symbol(BinaryOp op) {
  static constexpr std::array<const char*, 7> kSymbols = {"+",  "-", "*",          "/",
                                                          "//", "%", "** or pow()"};
  return kSymbols[static_cast<size_t>(op)];
}

}  // namespace

void check_items(size_t n) {
  if (n > kMaxItems) unsupported("lists over " + std::to_string(kMaxItems) + " items");
}

void fail_undefined(const Value& value) { throw Error(ErrorKind::kRender, value.undefined_hint()); }

bool truthy(const Value& value) {
  switch (value.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone:
      return false;
    case Value::Kind::kBool:
      return value.as_bool();
    case Value::Kind::kInt:
      return value.as_int() != 0;
    case Value::Kind::kFloat:
      return value.as_float() != 0.0;
    case Value::Kind::kString:
      return !value.text().empty();
    case Value::Kind::kList:
      return value.list().kind == ListKind::kIterator || !value.list().items.empty();
    case Value::Kind::kDict:
      return !value.dict().entries.empty();
    case Value::Kind::kObject:
    case Value::Kind::kFunction:
      return true;
  }
  return false;
}

bool equals(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.to_double() == b.to_double();
    return a.to_int() == b.to_int();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone:
      return true;
    case Value::Kind::kString:
      return a.text().str() == b.text().str();
    case Value::Kind::kList:
      if (!is_sequence_list(a) || a.list().kind != b.list().kind) return a.same_object(b);
      return list_equals(a.list(), b.list());
    case Value::Kind::kDict:
      return dict_equals(a.dict(), b.dict());
    default:
      return a.same_object(b);
  }
}

bool less(const Value& a, const Value& b, std::string_view op) {
  require_defined(a);
  require_defined(b);
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.to_double() < b.to_double();
    return a.to_int() < b.to_int();
  }
  if (a.is_string() && b.is_string()) return a.text().str() < b.text().str();
  if (is_sequence_list(a) && is_sequence_list(b) && a.list().kind == b.list().kind) {
    const auto& x = a.list().items;
    const auto& y = b.list().items;
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (!equals(x[i], y[i])) return less(x[i], y[i], op);
    }
    return x.size() < y.size();
  }
  fail("'" + std::string(op) + "' not supported between instances of '" + type_name(a) + "' and '" +
       type_name(b) + "'");
}

std::vector<Value> iterate(const Value& value) {
  switch (value.kind()) {
    case Value::Kind::kUndefined:
      return {};
    case Value::Kind::kString: {
      std::vector<Value> chars;
      const Text& text = value.text();
      const auto offsets = code_point_offsets(text.str());
      check_items(offsets.size() - 1);
      for (size_t i = 0; i + 1 < offsets.size(); ++i) {
        chars.emplace_back(text.substr(offsets[i], offsets[i + 1] - offsets[i]));
      }
      return chars;
    }
    case Value::Kind::kList: {
      ListData& list = value.mutable_list();
      if (list.kind != ListKind::kIterator) return list.items;
      if (list.exhausted) return {};
      list.exhausted = true;
      return list.items;
    }
    case Value::Kind::kDict: {
      std::vector<Value> keys;
      for (const auto& entry : value.dict().entries) keys.push_back(entry.first);
      return keys;
    }
    default:
      fail("'" + type_name(value) + "' object is not iterable");
  }
}

int64_t length(const Value& value) {
  switch (value.kind()) {
    case Value::Kind::kUndefined:
      return 0;
    case Value::Kind::kString:
      return static_cast<int64_t>(code_point_count(value.text().str()));
    case Value::Kind::kList:
      if (value.list().kind == ListKind::kIterator) break;
      return static_cast<int64_t>(value.list().items.size());
    case Value::Kind::kDict:
      return static_cast<int64_t>(value.dict().entries.size());
    default:
      break;
  }
  fail("object of type '" + type_name(value) + "' has no len()");
}

void require_hashable(const Value& value) {
  if (value.is_dict()) fail("unhashable type: 'dict'");
  if (!value.is_list()) return;
  if (value.list().kind == ListKind::kList) fail("unhashable type: 'list'");
  if (value.list().kind != ListKind::kTuple) return;  // generators and ranges hash
  for (const Value& item : value.list().items) require_hashable(item);
}

bool contains(const Value& container, const Value& item) {
  if (container.is_string()) {
    if (!item.is_string()) {
      fail("'in <string>' requires string as left operand, not " + type_name(item));
    }
    return container.text().str().find(item.text().str()) != std::string::npos;
  }
  if (container.is_dict()) {
    require_hashable(item);
    return container.dict().find(item) != nullptr;
  }
  if (container.is_list() || container.is_undefined()) {
    for (const Value& element : iterate(container)) {
      if (equals(element, item)) return true;
    }
    return false;
  }
  fail("argument of type '" + type_name(container) + "' is not iterable");
}

Value binary(BinaryOp op, const Value& a, const Value& b) {
  require_defined(a);
  require_defined(b);
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return float_arith(op, a.to_double(), b.to_double());
    return int_arith(op, a.to_int(), b.to_int());
  }
  if (op == BinaryOp::kAdd) return add(a, b);
  if (op == BinaryOp::kMul) {
    const bool a_seq = a.is_string() || is_sequence_list(a);
    const bool b_seq = b.is_string() || is_sequence_list(b);
    if (a_seq && (b.is_int() || b.is_bool())) return repeat(a, b.to_int());
    if (b_seq && (a.is_int() || a.is_bool())) return repeat(b, a.to_int());
  }
  if (op == BinaryOp::kMod && a.is_string()) unsupported("printf-style formatting with %");
  fail_operands(op_symbol(op), a, b);
}

Value negate(const Value& value) {
  require_defined(value);
  if (value.is_float()) return -value.as_float();
  if (value.is_int() || value.is_bool()) {
    return int_arith(BinaryOp::kSub, 0, value.to_int());
  }
  fail("bad operand type for unary -: '" + type_name(value) + "'");
}

namespace {

// The text Python's int() and float() parse: every decimal digit of any script as its ASCII
// digit and every whitespace as a space (_PyUnicode_TransformDecimalAndSpaceToASCII), then
// stripped. False where another non-ASCII character remains: no number has one.
bool number_text(std::string_view s, std::string& out) {
  out.clear();
  for (size_t pos = 0; pos < s.size();) {
    const char32_t cp = decode_utf8(s, pos);
    const int digit = decimal_value(cp);
    if (digit >= 0) {
      out += static_cast<char>('0' + digit);
    } else if (is_space(cp)) {
      out += ' ';
    } else if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else {
      return false;
    }
  }
  const size_t first = out.find_first_not_of(' ');
  if (first == std::string::npos) return false;
  out = out.substr(first, out.find_last_not_of(' ') - first + 1);
  return true;
}

int digit_in_base(char c, int base) {
  int d = 99;
  if (c >= '0' && c <= '9') d = c - '0';
  if (c >= 'a' && c <= 'z') d = c - 'a' + 10;
  if (c >= 'A' && c <= 'Z') d = c - 'A' + 10;
  return d < base ? d : -1;
}

// Digits of `base` with single underscores between them (PEP 515), or right after a base
// prefix (after_prefix): the digits without the underscores, or false.
bool digit_run(std::string_view s, int base, bool after_prefix, std::string& digits) {
  digits.clear();
  bool underscore_ok = after_prefix;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '_') {
      if (!underscore_ok || i + 1 == s.size()) return false;
      underscore_ok = false;
      continue;
    }
    if (digit_in_base(s[i], base) < 0) return false;
    digits += s[i];
    underscore_ok = true;
  }
  return !digits.empty();  // a trailing '_' was refused above
}

}  // namespace

bool parse_int(std::string_view s, int base, int64_t& out) {
  std::string text, digits;
  if ((base != 0 && (base < 2 || base > 36)) || !number_text(s, text)) return false;
  std::string_view t = text;
  const bool negative = t.front() == '-';
  if (t.front() == '+' || t.front() == '-') t.remove_prefix(1);
  bool prefixed = false;
  if (t.size() >= 2 && t[0] == '0') {
    const char p = static_cast<char>(t[1] | 0x20);
    const int prefix_base = p == 'x' ? 16 : p == 'o' ? 8 : p == 'b' ? 2 : 0;
    if (prefix_base != 0 && (base == 0 || base == prefix_base)) {
      base = prefix_base;
      prefixed = true;
      t.remove_prefix(2);
    }
  }
  const bool guessed = base == 0;  // base 0 without a prefix: decimal, no leading zeros
  if (guessed) base = 10;
  if (!digit_run(t, base, prefixed, digits)) return false;
  if (guessed && digits[0] == '0' && digits.find_first_not_of('0') != std::string::npos)
    return false;
  uint64_t magnitude = 0;
  for (char c : digits) {
    const auto d = static_cast<uint64_t>(digit_in_base(c, base));
    if (magnitude > (UINT64_MAX - d) / static_cast<uint64_t>(base))
      unsupported("integers beyond 64 bits");
    magnitude = magnitude * static_cast<uint64_t>(base) + d;
  }
  const uint64_t limit = negative ? uint64_t{1} << 63 : (uint64_t{1} << 63) - 1;
  if (magnitude > limit) unsupported("integers beyond 64 bits");
  out = negative ? static_cast<int64_t>(0 - magnitude) : static_cast<int64_t>(magnitude);
  return true;
}

// Python's float(): [sign] digits [. digits] [e [sign] digits] (either side of the point may
// be empty, not both), underscores as in int(), or inf, infinity or nan in any case; never
// hex, which strtod alone would take.
bool parse_float(std::string_view s, double& out) {
  std::string text, part, number;
  if (!number_text(s, text)) return false;
  std::string_view t = text;
  if (t.front() == '+' || t.front() == '-') {
    number += t.front();
    t.remove_prefix(1);
  }
  std::string lower(t);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "inf" || lower == "infinity" || lower == "nan") {
    out = std::strtod((number + lower).c_str(), nullptr);
    return true;
  }
  const size_t e = lower.find('e');
  const std::string_view mantissa = t.substr(0, e);
  const size_t point = mantissa.find('.');
  const std::string_view whole = mantissa.substr(0, point);
  const std::string_view fraction =
      point == std::string_view::npos ? std::string_view() : mantissa.substr(point + 1);
  if (whole.empty() && fraction.empty()) return false;
  if (!whole.empty() && !digit_run(whole, 10, false, part)) return false;
  number += part + ".";
  if (!fraction.empty() && !digit_run(fraction, 10, false, part)) return false;
  if (!fraction.empty()) number += part;
  if (e != std::string::npos) {
    std::string_view exponent = t.substr(e + 1);
    number += 'e';
    if (!exponent.empty() && (exponent.front() == '+' || exponent.front() == '-')) {
      number += exponent.front();
      exponent.remove_prefix(1);
    }
    if (!digit_run(exponent, 10, false, part)) return false;
    number += part;
  }
  out = std::strtod(number.c_str(), nullptr);
  return true;
}

}  // namespace tandem::jinja
