// The Python methods templates call on strings, dicts and lists (`content.strip()`,
// `message.get('x')`), bound as Jinja2's sandboxed getattr binds them. Methods that change
// a list or dict are refused as transformers' ImmutableSandboxedEnvironment refuses them.
#include <algorithm>
#include <unordered_map>

#include "protocol/jinja/builtins.h"
#include "protocol/jinja/error.h"
#include "protocol/jinja/operators.h"
#include "protocol/jinja/string_ops.h"
#include "protocol/jinja/unicode.h"

namespace tandem::jinja {

Value format_string(const Text& pattern, const CallArgs& args);  // str_format.cpp

namespace {

using Method = Value (*)(const Value& self, const CallArgs& args);
using MethodTable = std::unordered_map<std::string_view, Method>;

std::optional<std::string_view> string_arg(const BoundArgs& a, size_t i, std::string_view what) {
  if (!a.has(i) || a[i].is_none()) return std::nullopt;
  if (!a[i].is_string()) fail(std::string(what) + " arg must be None or str");
  return a[i].text().str();
}

template <StripSide kSide>
Value strip_method(const Value& self, const CallArgs& args) {
  const BoundArgs a("strip", args, {"chars"});
  return strip(self.text(), string_arg(a, 0, "strip"), kSide);
}

template <bool kFromRight>
Value split_method(const Value& self, const CallArgs& args) {
  const BoundArgs a("split", args, {"sep", "maxsplit"});
  std::vector<Value> parts;
  for (Text& part :
       split(self.text(), string_arg(a, 0, "split"), a.get(1, Value(-1)).to_int(), kFromRight)) {
    parts.emplace_back(std::move(part));
  }
  return Value::list(std::move(parts));
}

Value splitlines_method(const Value& self, const CallArgs& args) {
  const BoundArgs a("splitlines", args, {"keepends"});
  std::vector<Value> lines;
  for (Text& line : splitlines(self.text(), truthy(a.get(0, false))))
    lines.emplace_back(std::move(line));
  return Value::list(std::move(lines));
}

// self[start:end] as a string, for startswith/endswith/find with bounds.
std::string bounded(const Value& self, const BoundArgs& a, size_t start_index) {
  if (!a.has(start_index) && !a.has(start_index + 1)) return self.text().str();
  const auto offsets = code_point_offsets(self.text().str());
  const auto n = static_cast<int64_t>(offsets.size()) - 1;
  const auto clamp = [n](const Value& v, int64_t fallback) {
    if (v.is_none() || v.is_undefined()) return fallback;
    int64_t i = v.to_int();
    if (i < 0) i += n;
    return std::clamp<int64_t>(i, 0, n);
  };
  const int64_t begin = clamp(a.get(start_index, Value::none()), 0);
  const int64_t end = std::max(begin, clamp(a.get(start_index + 1, Value::none()), n));
  return self.text().str().substr(
      offsets[static_cast<size_t>(begin)],
      offsets[static_cast<size_t>(end)] - offsets[static_cast<size_t>(begin)]);
}

// Whether start lies past end once both are taken as Python's tailmatch takes them (end
// clamped to the length, start not): then no affix matches, not even "" ("".endswith("", 1)
// is False).
bool starts_past_end(const Value& self, const BoundArgs& a) {
  const Value start = a.get(1, Value::none()), end = a.get(2, Value::none());
  if (start.is_none() || start.is_undefined()) return false;
  const auto n = static_cast<int64_t>(code_point_count(self.text().str()));
  const auto adjust = [n](int64_t i) { return i < 0 ? std::max<int64_t>(0, i + n) : i; };
  const int64_t last = end.is_none() || end.is_undefined() ? n : std::min(adjust(end.to_int()), n);
  return adjust(start.to_int()) > last;
}

template <bool kEnd>
Value affix_method(const Value& self, const CallArgs& args) {
  const BoundArgs a(kEnd ? "endswith" : "startswith", args, {"affix", "start", "end"}, 1);
  const bool past_end = starts_past_end(self, a);
  const std::string s = bounded(self, a, 1);
  const auto matches = [&](const Value& affix) {
    if (!affix.is_string()) fail("startswith/endswith first arg must be str or a tuple of str");
    if (past_end) return false;
    const std::string& x = affix.text().str();
    return x.size() <= s.size() && s.compare(kEnd ? s.size() - x.size() : 0, x.size(), x) == 0;
  };
  if (a[0].is_list() && a[0].list().kind == ListKind::kTuple) {
    const auto& options = a[0].list().items;
    return std::any_of(options.begin(), options.end(), matches);
  }
  return matches(a[0]);
}

Value replace_method(const Value& self, const CallArgs& args) {
  const BoundArgs a("replace", args, {"old", "new", "count"}, 2);
  if (!a[0].is_string() || !a[1].is_string()) fail("replace() arguments must be str");
  return replace(self.text(), a[0].text().str(), a[1].text(), a.get(2, Value(-1)).to_int());
}

template <CaseMap kMode>
Value case_method(const Value& self, const CallArgs& args) {
  const BoundArgs a("case method", args, {});
  return map_case(self.text(), kMode);
}

// find, rfind, index, rindex
template <bool kFromRight, bool kRaise>
Value find_method_impl(const Value& self, const CallArgs& args) {
  const BoundArgs a("find", args, {"sub", "start", "end"}, 1);
  if (!a[0].is_string()) fail("must be str, not " + type_name(a[0]));
  if (a.has(1) || a.has(2)) unsupported("str.find with start or end");
  const int64_t at = find(self.text(), a[0].text().str(), kFromRight);
  if (kRaise && at < 0) fail("substring not found");
  return at;
}

Value count_method(const Value& self, const CallArgs& args) {
  const BoundArgs a("count", args, {"x"}, 1);
  if (self.is_string()) {
    if (!a[0].is_string()) fail("must be str, not " + type_name(a[0]));
    return count(self.text(), a[0].text().str());
  }
  const auto& items = self.list().items;
  return static_cast<int64_t>(
      std::count_if(items.begin(), items.end(), [&](const Value& v) { return equals(v, a[0]); }));
}

Value join_method(const Value& self, const CallArgs& args) {
  const BoundArgs a("join", args, {"iterable"}, 1);
  std::vector<Text> parts;
  for (const Value& item : iterate(a[0])) {
    if (!item.is_string()) {
      fail("sequence item " + std::to_string(parts.size()) + ": expected str instance, " +
           type_name(item) + " found");
    }
    parts.push_back(item.text());
  }
  return join(parts, self.text());
}

Value format_method(const Value& self, const CallArgs& args) {
  return format_string(self.text(), args);
}

template <bool (*kPredicate)(char32_t)>
Value is_method(const Value& self, const CallArgs&) {
  const std::string& s = self.text().str();
  if (s.empty()) return false;
  for (size_t pos = 0; pos < s.size();) {
    if (!kPredicate(decode_utf8(s, pos))) return false;
  }
  return true;
}

// str.isprintable(): unlike the other tests, true for "".
Value printable_method(const Value& self, const CallArgs& args) {
  return self.text().empty() || truthy(is_method<is_printable>(self, args));
}

template <bool kUpper>
Value case_test_method(const Value& self, const CallArgs&) {
  return kUpper ? is_upper_text(self.text().str()) : is_lower_text(self.text().str());
}

template <bool kSuffix>
Value remove_affix(const Value& self, const CallArgs& args) {
  const BoundArgs a(kSuffix ? "removesuffix" : "removeprefix", args, {"affix"}, 1);
  if (!a[0].is_string()) fail("must be str, not " + type_name(a[0]));
  const std::string& s = self.text().str();
  const std::string& x = a[0].text().str();
  if (x.size() > s.size() || s.compare(kSuffix ? s.size() - x.size() : 0, x.size(), x) != 0)
    return self;
  return self.text().substr(kSuffix ? 0 : x.size(), s.size() - x.size());
}

Value get_method(const Value& self, const CallArgs& args) {
  const BoundArgs a("get", args, {"key", "default"}, 1);
  const Value* found = self.dict().find(a[0]);
  return found ? *found : a.get(1, Value::none());
}

// dict.items(), keys(), values(): views (re-iterable, len(), not printable here).
template <int kPart>
Value view_method(const Value& self, const CallArgs& args) {
  const BoundArgs a("view", args, {});
  std::vector<Value> out;
  for (const auto& [key, value] : self.dict().entries) {
    if (kPart == 0) out.push_back(Value::list({key, value}, ListKind::kTuple));
    if (kPart == 1) out.push_back(key);
    if (kPart == 2) out.push_back(value);
  }
  return Value::list(std::move(out), ListKind::kView,
                     kPart == 0   ? "dict_items"
                     : kPart == 1 ? "dict_keys"
                                  : "dict_values");
}

Value copy_method(const Value& self, const CallArgs&) { return self; }

Value index_method(const Value& self, const CallArgs& args) {
  const BoundArgs a("index", args, {"x"}, 1);
  const auto& items = self.list().items;
  for (size_t i = 0; i < items.size(); ++i) {
    if (equals(items[i], a[0])) return static_cast<int64_t>(i);
  }
  fail("x not in list");
}

const MethodTable& string_methods() {
  static const MethodTable table = {
      {"strip", strip_method<StripSide::kBoth>},
      {"lstrip", strip_method<StripSide::kLeft>},
      {"rstrip", strip_method<StripSide::kRight>},
      {"split", split_method<false>},
      {"rsplit", split_method<true>},
      {"splitlines", splitlines_method},
      {"startswith", affix_method<false>},
      {"endswith", affix_method<true>},
      {"replace", replace_method},
      {"upper", case_method<CaseMap::kUpper>},
      {"lower", case_method<CaseMap::kLower>},
      {"title", case_method<CaseMap::kTitle>},
      {"capitalize", case_method<CaseMap::kCapitalize>},
      {"swapcase", case_method<CaseMap::kSwap>},
      {"find", find_method_impl<false, false>},
      {"rfind", find_method_impl<true, false>},
      {"index", find_method_impl<false, true>},
      {"rindex", find_method_impl<true, true>},
      {"count", count_method},
      {"join", join_method},
      {"format", format_method},
      {"isdigit", is_method<is_digit>},
      {"isdecimal", is_method<is_decimal>},
      {"isnumeric", is_method<is_numeric>},
      {"isalpha", is_method<is_alpha>},
      {"isalnum", is_method<is_alnum>},
      {"isprintable", printable_method},
      {"isspace", is_method<is_space>},
      {"islower", case_test_method<false>},
      {"isupper", case_test_method<true>},
      {"removeprefix", remove_affix<false>},
      {"removesuffix", remove_affix<true>},
  };
  return table;
}

const MethodTable& dict_methods() {
  static const MethodTable table = {
      {"get", get_method},        {"items", view_method<0>}, {"keys", view_method<1>},
      {"values", view_method<2>}, {"copy", copy_method},
  };
  return table;
}

const MethodTable& list_methods() {
  static const MethodTable table = {
      {"count", count_method},
      {"index", index_method},
      {"copy", copy_method},
  };
  return table;
}

bool listed(std::string_view name, std::initializer_list<std::string_view> names) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// Python methods this interpreter lacks: an error, never a silent undefined.
bool unimplemented(const Value& obj, std::string_view name) {
  if (obj.is_string()) {
    return listed(name, {"casefold", "center", "encode", "expandtabs", "format_map", "isascii",
                         "isidentifier", "istitle", "ljust", "maketrans", "partition", "rjust",
                         "rpartition", "translate", "zfill"});
  }
  if (obj.is_dict()) return name == "fromkeys";
  return false;
}

bool mutating(const Value& obj, std::string_view name) {
  if (obj.is_dict()) return listed(name, {"clear", "pop", "popitem", "setdefault", "update"});
  if (obj.is_list() && obj.list().kind == ListKind::kList) {
    return listed(name,
                  {"append", "clear", "extend", "insert", "pop", "remove", "reverse", "sort"});
  }
  return false;
}

}  // namespace

std::optional<Value> find_method(const Value& obj, std::string_view name) {
  const MethodTable* table = obj.is_string() ? &string_methods()
                             : obj.is_dict() ? &dict_methods()
                             : (obj.is_list() && obj.list().kind != ListKind::kIterator)
                                 ? &list_methods()
                                 : nullptr;
  if (table != nullptr) {
    const auto it = table->find(name);
    if (it != table->end()) {
      const Method method = it->second;
      return Value::function(std::string(name), [obj, method](Interpreter&, const CallArgs& args) {
        return method(obj, args);
      });
    }
  }
  if (mutating(obj, name)) {
    return Value::undefined("access to attribute '" + std::string(name) + "' of '" +
                            type_name(obj) + "' object is unsafe.");
  }
  if (unimplemented(obj, name))
    unsupported("the " + type_name(obj) + " method '" + std::string(name) + "'");
  return std::nullopt;
}

}  // namespace tandem::jinja
