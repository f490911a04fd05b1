#include "tests/runner/grammar/schema_validator.h"

#include <cmath>
#include <regex>

namespace tandem::grammar::testing {

namespace {

using nlohmann::json;
using Result = std::optional<std::string>;

std::u32string code_points(const std::string& s) {
  std::u32string out;
  for (size_t i = 0; i < s.size();) {
    const auto lead = static_cast<unsigned char>(s[i]);
    const size_t n = lead < 0x80 ? 1 : lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
    char32_t cp = n == 1 ? lead : lead & (0x7F >> n);
    for (size_t k = 1; k < n && i + k < s.size(); ++k)
      cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    out.push_back(cp);
    i += n;
  }
  return out;
}

bool digits_at(const std::string& s, size_t pos, size_t n) {
  if (pos + n > s.size()) return false;
  for (size_t i = pos; i < pos + n; ++i)
    if (s[i] < '0' || s[i] > '9') return false;
  return true;
}

int number_at(const std::string& s, size_t pos, size_t n) { return std::stoi(s.substr(pos, n)); }

bool is_date(const std::string& s) {
  if (s.size() != 10 || !digits_at(s, 0, 4) || s[4] != '-' || !digits_at(s, 5, 2) || s[7] != '-' ||
      !digits_at(s, 8, 2))
    return false;
  const int year = number_at(s, 0, 4), month = number_at(s, 5, 2), day = number_at(s, 8, 2);
  const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  const int days[] = {31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return month >= 1 && month <= 12 && day >= 1 && day <= days[month - 1];
}

bool is_time(const std::string& s) {
  if (s.size() < 9 || !digits_at(s, 0, 2) || s[2] != ':' || !digits_at(s, 3, 2) || s[5] != ':' ||
      !digits_at(s, 6, 2))
    return false;
  if (number_at(s, 0, 2) > 23 || number_at(s, 3, 2) > 59 || number_at(s, 6, 2) > 60) return false;
  size_t pos = 8;
  if (s[pos] == '.') {
    const size_t start = ++pos;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') ++pos;
    if (pos == start) return false;
  }
  const std::string offset = s.substr(pos);
  if (offset == "Z" || offset == "z") return true;
  return offset.size() == 6 && (offset[0] == '+' || offset[0] == '-') && digits_at(offset, 1, 2) &&
         offset[3] == ':' && digits_at(offset, 4, 2) && number_at(offset, 1, 2) <= 23 &&
         number_at(offset, 4, 2) <= 59;
}

bool is_uuid(const std::string& s) {
  if (s.size() != 36) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (s[i] != '-') return false;
    } else if (!std::isxdigit(static_cast<unsigned char>(s[i]))) {
      return false;
    }
  }
  return true;
}

bool is_email(const std::string& s) {
  const size_t at = s.find('@');
  if (at == std::string::npos || at == 0 || s.find('@', at + 1) != std::string::npos) return false;
  const std::string domain = s.substr(at + 1);
  return s.find(' ') == std::string::npos && domain.find('.') != std::string::npos &&
         domain.front() != '.' && domain.back() != '.';
}

bool has_format(const std::string& format, const std::string& s) {
  if (format == "date") return is_date(s);
  if (format == "time") return is_time(s);
  if (format == "date-time")
    return s.size() > 11 && (s[10] == 'T' || s[10] == 't') && is_date(s.substr(0, 10)) &&
           is_time(s.substr(11));
  if (format == "uuid") return is_uuid(s);
  if (format == "email") return is_email(s);
  return true;  // an unknown format is an annotation
}

bool has_type(const json& v, const std::string& type) {
  if (type == "null") return v.is_null();
  if (type == "boolean") return v.is_boolean();
  if (type == "object") return v.is_object();
  if (type == "array") return v.is_array();
  if (type == "string") return v.is_string();
  if (type == "number") return v.is_number();
  if (type == "integer")
    return v.is_number_integer() ||
           (v.is_number_float() && std::trunc(v.get<double>()) == v.get<double>());
  return false;
}

class Validator {
 public:
  explicit Validator(const json& root) : root_(root) {}

  Result check(const json& v, const json& s, const std::string& at) {
    if (s.is_boolean()) return s.get<bool>() ? Result{} : at + ": the schema is false";
    if (s.contains("$ref")) {
      const std::string ref = s["$ref"];
      const json& target = ref == "#" ? root_ : root_.at(json::json_pointer(ref.substr(1)));
      if (auto e = check(v, target, at)) return e;
    }
    for (const auto& part :
         {&Validator::check_generic, &Validator::check_combinators, &Validator::check_object,
          &Validator::check_array, &Validator::check_string, &Validator::check_number}) {
      if (auto e = (this->*part)(v, s, at)) return e;
    }
    return {};
  }

 private:
  Result check_generic(const json& v, const json& s, const std::string& at) {
    if (s.contains("type")) {
      const json types = s["type"].is_array() ? s["type"] : json::array({s["type"]});
      bool any = false;
      for (const json& t : types) any = any || has_type(v, t);
      if (!any) return at + ": not of type " + s["type"].dump();
    }
    if (s.contains("const") && v != s["const"]) return at + ": not the const";
    if (s.contains("enum") && std::find(s["enum"].begin(), s["enum"].end(), v) == s["enum"].end())
      return at + ": not in the enum";
    return {};
  }

  Result check_combinators(const json& v, const json& s, const std::string& at) {
    if (s.contains("allOf"))
      for (const json& sub : s["allOf"])
        if (auto e = check(v, sub, at)) return e;
    if (s.contains("anyOf")) {
      bool any = false;
      for (const json& sub : s["anyOf"]) any = any || !check(v, sub, at);
      if (!any) return at + ": matches no anyOf alternative";
    }
    if (s.contains("oneOf")) {
      int matching = 0;
      for (const json& sub : s["oneOf"]) matching += !check(v, sub, at);
      if (matching != 1)
        return at + ": matches " + std::to_string(matching) + " oneOf alternatives";
    }
    return {};
  }

  Result check_object(const json& v, const json& s, const std::string& at) {
    if (!v.is_object()) return {};
    const json properties = s.value("properties", json::object());
    for (const json& name : s.value("required", json::array()))
      if (!v.contains(name.get<std::string>())) return at + ": lacks required " + name.dump();
    for (const auto& [key, value] : v.items()) {
      if (properties.contains(key)) {
        if (auto e = check(value, properties[key], at + "/" + key)) return e;
      } else if (s.contains("additionalProperties")) {
        if (auto e = check(value, s["additionalProperties"], at + "/" + key)) return e;
      }
    }
    return {};
  }

  Result check_array(const json& v, const json& s, const std::string& at) {
    if (!v.is_array()) return {};
    const json prefix = s.value("prefixItems", json::array());
    for (size_t i = 0; i < v.size(); ++i) {
      const std::string where = at + "/" + std::to_string(i);
      if (i < prefix.size()) {
        if (auto e = check(v[i], prefix[i], where)) return e;
      } else if (s.contains("items")) {
        if (auto e = check(v[i], s["items"], where)) return e;
      }
    }
    if (s.contains("minItems") && v.size() < s["minItems"].get<size_t>())
      return at + ": too few items";
    if (s.contains("maxItems") && v.size() > s["maxItems"].get<size_t>())
      return at + ": too many items";
    return {};
  }

  Result check_string(const json& v, const json& s, const std::string& at) {
    if (!v.is_string()) return {};
    const std::string text = v.get<std::string>();
    const std::u32string cps = code_points(text);
    if (s.contains("minLength") && cps.size() < s["minLength"].get<size_t>())
      return at + ": too short";
    if (s.contains("maxLength") && cps.size() > s["maxLength"].get<size_t>())
      return at + ": too long";
    if (s.contains("pattern")) {
      const std::u32string pattern = code_points(s["pattern"].get<std::string>());
      const std::wregex re(std::wstring(pattern.begin(), pattern.end()), std::regex::ECMAScript);
      if (!std::regex_search(std::wstring(cps.begin(), cps.end()), re))
        return at + ": does not match the pattern " + s["pattern"].dump();
    }
    if (s.contains("format") && !has_format(s["format"], text))
      return at + ": not a valid " + s["format"].get<std::string>();
    return {};
  }

  Result check_number(const json& v, const json& s, const std::string& at) {
    if (!v.is_number()) return {};
    const auto value = [](const json& n) {
      return n.is_number_integer() ? static_cast<long double>(n.get<int64_t>())
                                   : static_cast<long double>(n.get<double>());
    };
    const long double x = value(v);
    if (s.contains("minimum") && x < value(s["minimum"])) return at + ": below minimum";
    if (s.contains("maximum") && x > value(s["maximum"])) return at + ": above maximum";
    if (s.contains("exclusiveMinimum") && x <= value(s["exclusiveMinimum"]))
      return at + ": not above exclusiveMinimum";
    if (s.contains("exclusiveMaximum") && x >= value(s["exclusiveMaximum"]))
      return at + ": not below exclusiveMaximum";
    return {};
  }

  const json& root_;
};

}  // namespace

std::optional<std::string> validate(const nlohmann::json& instance, const nlohmann::json& schema) {
  return Validator(schema).check(instance, schema, "#");
}

}  // namespace tandem::grammar::testing
