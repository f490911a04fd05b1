// str.format(): "{}", "{0}", "{name}", "{!r}", "{{", "}}". Format specs and field
// attribute or index access are refused by name.
#include <string>

#include "protocol/jinja/error.h"
#include "protocol/jinja/operators.h"
#include "protocol/jinja/value.h"

namespace tandem::jinja {
namespace {

const Value& field_value(const std::string& field, const CallArgs& args, int& next_auto,
                         bool& manual) {
  if (field.empty()) {
    if (manual) fail("cannot switch from manual field specification to automatic field numbering");
    next_auto++;
    if (static_cast<size_t>(next_auto) > args.positional.size()) {
      fail("Replacement index " + std::to_string(next_auto - 1) +
           " out of range for positional args tuple");
    }
    return args.positional[static_cast<size_t>(next_auto - 1)];
  }
  if (field.find_first_not_of("0123456789") == std::string::npos) {
    if (next_auto > 0)
      fail("cannot switch from automatic field numbering to manual field specification");
    manual = true;
    const size_t index = std::stoul(field);
    if (index >= args.positional.size()) {
      fail("Replacement index " + field + " out of range for positional args tuple");
    }
    return args.positional[index];
  }
  if (field.find_first_of(".[") != std::string::npos)
    unsupported("str.format field '" + field + "'");
  for (const auto& [name, value] : args.named) {
    if (name == field) return value;
  }
  fail("'" + field + "'");
}

}  // namespace

Value format_string(const Text& pattern, const CallArgs& args) {
  const std::string& s = pattern.str();
  Text out;
  int next_auto = 0;
  bool manual = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if ((c == '{' || c == '}') && i + 1 < s.size() && s[i + 1] == c) {
      out.append(pattern, i++, 1);
      continue;
    }
    if (c == '}') fail("Single '}' encountered in format string");
    if (c != '{') {
      out.append(pattern, i, 1);
      continue;
    }
    const size_t close = s.find('}', i);
    if (close == std::string::npos) fail("expected '}' before end of string");
    std::string field = s.substr(i + 1, close - i - 1);
    if (field.find(':') != std::string::npos) unsupported("str.format specs ('{" + field + "}')");
    char conversion = 's';
    if (const size_t bang = field.find('!'); bang != std::string::npos) {
      conversion = bang + 1 < field.size() ? field[bang + 1] : '\0';
      if ((conversion != 's' && conversion != 'r') || bang + 2 != field.size()) {
        unsupported("str.format conversion in '{" + field + "}'");
      }
      field.resize(bang);
    }
    const Value& value = field_value(field, args, next_auto, manual);
    if (conversion == 'r') {
      append_repr(out, value);
    } else {
      out.append(to_text(value));
    }
    i = close;
  }
  return Value(std::move(out));
}

}  // namespace tandem::jinja
