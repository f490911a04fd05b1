// Python's semantics for what Jinja2 does with values: truth, equality, ordering, str()
// and repr(), iteration, len(), `in`, and the arithmetic operators. Undefined behaves as
// Jinja2's default Undefined: it prints as "", iterates as nothing, is false, equals only
// another undefined, and raises (with its hint) when used in arithmetic or compared.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/jinja/text.h"
#include "protocol/jinja/value.h"

namespace tandem::jinja {

// The most items a list may hold (a string split or iterated into more is refused too).
inline constexpr size_t kMaxItems = size_t{1} << 20;
// Raises the "unsupported" error for lists over kMaxItems when n exceeds it.
void check_items(size_t n);

enum class BinaryOp { kAdd, kSub, kMul, kDiv, kFloorDiv, kMod, kPow };

bool truthy(const Value& value);
bool equals(const Value& a, const Value& b);
// Python's a < b (op names the operator in the TypeError for values that do not compare).
bool less(const Value& a, const Value& b, std::string_view op = "<");

// str(value): what {{ value }} prints. Containers print as Python's repr of them.
Text to_text(const Value& value);
// Appends repr(value).
void append_repr(Text& out, const Value& value);
// Python's repr(float): the shortest round-trip digits, "1.0", "1e+16", "1.5e-07".
std::string float_repr(double d);
// None, a bool, an int or a float as Python prints it ("None", "True", "1.5", "nan") or as
// json.dumps writes it ("null", "true", "1.5", "NaN"); nullopt for other values.
enum class ScalarStyle { kPython, kJson };
std::optional<std::string> scalar_text(const Value& value, ScalarStyle style);

// The items a for loop sees: a string's characters, a dict's keys, nothing for undefined.
// Iterating a generator exhausts it, as in Python.
std::vector<Value> iterate(const Value& value);
// len(value); undefined has length 0.
int64_t length(const Value& value);
// item in container
bool contains(const Value& container, const Value& item);
// Fails as Python does for a value that cannot be a dict key or set member: a list or a
// dict, or a tuple holding one (a generator or a range can).
void require_hashable(const Value& value);

Value binary(BinaryOp op, const Value& a, const Value& b);
Value negate(const Value& value);
// Python's int/float parsing of a string with surrounding whitespace; false when invalid.
bool parse_int(std::string_view s, int base, int64_t& out);
bool parse_float(std::string_view s, double& out);

// Raises the UndefinedError of an undefined value.
[[noreturn]] void fail_undefined(const Value& value);
// Raises fail_undefined when value is undefined.
inline void require_defined(const Value& value) {
  if (value.is_undefined()) fail_undefined(value);
}

}  // namespace tandem::jinja
