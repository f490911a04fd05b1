// str() and repr() of values, as Python prints them.
#include <charconv>
#include <cmath>
#include <cstdio>
#include <string>

#include "protocol/jinja/error.h"
#include "protocol/jinja/operators.h"
#include "protocol/jinja/unicode.h"

namespace tandem::jinja {
namespace {

void append_escaped_code_point(char32_t cp, char quote, std::string& out) {
  char buf[16];
  if (cp == static_cast<char32_t>(quote) || cp == '\\') {
    out += '\\';
    out += static_cast<char>(cp);
  } else if (cp == '\n') {
    out += "\\n";
  } else if (cp == '\r') {
    out += "\\r";
  } else if (cp == '\t') {
    out += "\\t";
  } else if (is_printable(cp)) {
    append_utf8(cp, out);
  } else if (cp < 0x100) {
    std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(cp));
    out += buf;
  } else if (cp < 0x10000) {
    std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(cp));
    out += buf;
  } else {
    std::snprintf(buf, sizeof buf, "\\U%08x", static_cast<unsigned>(cp));
    out += buf;
  }
}

void append_string_repr(Text& out, const Text& text) {
  const std::string& s = text.str();
  const bool has_single = s.find('\'') != std::string::npos;
  const bool has_double = s.find('"') != std::string::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  out.append(std::string_view(&quote, 1), false);
  std::string piece;
  for (size_t pos = 0; pos < s.size();) {
    const size_t start = pos;
    const char32_t cp = decode_utf8(s, pos);
    piece.clear();
    append_escaped_code_point(cp, quote, piece);
    out.append(piece, text.from_input_at(start));
  }
  out.append(std::string_view(&quote, 1), false);
}

void append_list_repr(Text& out, const ListData& list) {
  if (list.kind == ListKind::kIterator || list.kind == ListKind::kView) {
    unsupported("printing a " + list.type_name + " object");
  }
  const bool tuple = list.kind == ListKind::kTuple;
  out.append(tuple ? "(" : "[", false);
  for (size_t i = 0; i < list.items.size(); ++i) {
    if (i > 0) out.append(", ", false);
    append_repr(out, list.items[i]);
  }
  if (tuple && list.items.size() == 1) out.append(",", false);
  out.append(tuple ? ")" : "]", false);
}

void append_dict_repr(Text& out, const DictData& dict) {
  out.append("{", false);
  bool first = true;
  for (const auto& [key, value] : dict.entries) {
    if (!first) out.append(", ", false);
    first = false;
    append_repr(out, key);
    out.append(": ", false);
    append_repr(out, value);
  }
  out.append("}", false);
}

}  // namespace

std::string float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  char buf[64];
  const auto result = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  const std::string sci(buf, result.ptr);
  const size_t e = sci.find('e');
  const int exponent = std::stoi(sci.substr(e + 1));
  std::string digits;
  bool negative = false;
  for (size_t i = 0; i < e; ++i) {
    if (sci[i] == '-') negative = true;
    if (sci[i] >= '0' && sci[i] <= '9') digits += sci[i];
  }
  std::string out = negative ? "-" : "";
  if (exponent >= -4 && exponent < 16) {
    if (exponent >= 0) {
      const size_t int_len = static_cast<size_t>(exponent) + 1;
      if (digits.size() < int_len) digits.append(int_len - digits.size(), '0');
      out += digits.substr(0, int_len) + ".";
      out += digits.size() > int_len ? digits.substr(int_len) : "0";
    } else {
      out += "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) out += "." + digits.substr(1);
  char exp_buf[16];
  std::snprintf(exp_buf, sizeof exp_buf, "e%c%02d", exponent < 0 ? '-' : '+',
                exponent < 0 ? -exponent : exponent);
  return out + exp_buf;
}

void append_repr(Text& out, const Value& value) {
  switch (value.kind()) {
    case Value::Kind::kString:
      append_string_repr(out, value.text());
      return;
    case Value::Kind::kUndefined:
      out.append("Undefined", false);
      return;
    default:
      out.append(to_text(value));
      return;
  }
}

std::optional<std::string> scalar_text(const Value& value, ScalarStyle style) {
  const bool json = style == ScalarStyle::kJson;
  if (value.is_none()) return json ? "null" : "None";
  if (value.is_bool())
    return json ? (value.as_bool() ? "true" : "false") : (value.as_bool() ? "True" : "False");
  if (value.is_int()) return std::to_string(value.as_int());
  if (!value.is_float()) return std::nullopt;
  const double d = value.as_float();
  if (json && std::isnan(d)) return "NaN";
  if (json && std::isinf(d)) return d < 0 ? "-Infinity" : "Infinity";
  return float_repr(d);
}

Text to_text(const Value& value) {
  if (value.is_string()) return value.text();
  if (value.is_undefined()) return Text();
  if (auto scalar = scalar_text(value, ScalarStyle::kPython)) return Text(std::move(*scalar));
  Text out;
  if (value.is_list()) {
    append_list_repr(out, value.list());
  } else if (value.is_dict()) {
    append_dict_repr(out, value.dict());
  } else {
    unsupported("printing a " + type_name(value) + " object");
  }
  return out;
}

}  // namespace tandem::jinja
