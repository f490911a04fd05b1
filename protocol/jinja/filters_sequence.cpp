// Filters on sequences and mappings: length, first, last, list, join, items, dictsort,
// sort, reverse, unique, min, max, sum, select, reject, selectattr, rejectattr, map, attr.
#include <algorithm>

#include <array>
#include "protocol/jinja/access.h"

#include "protocol/jinja/builtin_tables.h"
#include "protocol/jinja/error.h"
#include "protocol/jinja/interpreter.h"
#include "protocol/jinja/operators.h"
#include "protocol/jinja/string_ops.h"

namespace tandem::jinja {
namespace {

Value generator(std::vector<Value> items, std::string type = "generator") {
  return Value::list(std::move(items), ListKind::kIterator, std::move(type));
}

// Jinja2's make_attrgetter: "a.b.0" looks up a, then b, then item 0.
Value lookup_path(const Value& item, const Value& attribute) {
  if (attribute.is_none() || attribute.is_undefined()) return item;
  if (!attribute.is_string()) return get_item(item, attribute);
  Value current = item;
  for (const Text& part : split(attribute.text(), ".", -1)) {
    const std::string& p = part.str();
    const bool digits =
        !p.empty() && std::all_of(p.begin(), p.end(), [](char c) { return c >= '0' && c <= '9'; });
    current = digits ? get_item(current, Value(static_cast<int64_t>(std::stoll(p))))
                     : get_item(current, Value(part));
  }
  return current;
}

Value ignore_case(const Value& value) {
  return value.is_string() ? Value(map_case(value.text(), CaseMap::kLower)) : value;
}

// The sort key of an item: the attribute (if any), lower-cased unless case_sensitive.
Value sort_key(const Value& item, const Value& attribute, bool case_sensitive) {
  const Value key = lookup_path(item, attribute);
  return case_sensitive ? key : ignore_case(key);
}

Value length(Interpreter&, const Value& input, const CallArgs&) { return jinja::length(input); }

Value first(Interpreter&, const Value& input, const CallArgs&) {
  const std::vector<Value> items = iterate(input);
  if (items.empty()) return Value::undefined("No first item, sequence was empty.");
  return items.front();
}

Value last(Interpreter&, const Value& input, const CallArgs&) {
  if (input.is_list() && input.list().kind == ListKind::kIterator) {
    fail("'" + input.list().type_name + "' object is not reversible");
  }
  const std::vector<Value> items = iterate(input);
  if (items.empty()) return Value::undefined("No last item, sequence was empty.");
  return items.back();
}

Value list(Interpreter&, const Value& input, const CallArgs&) {
  return Value::list(iterate(input));
}

Value join_filter(Interpreter&, const Value& input, const CallArgs& args) {
  const BoundArgs a("join", args, {"d", "attribute"});
  std::vector<Text> parts;
  for (const Value& item : iterate(input))
    parts.push_back(to_text(lookup_path(item, a.get(1, Value::none()))));
  return join(parts, to_text(a.get(0, Value::string(""))));
}

Value items(Interpreter&, const Value& input, const CallArgs&) {
  if (input.is_undefined()) return generator({});
  if (!input.is_dict()) fail("Can only get item pairs from a mapping.");
  std::vector<Value> pairs;
  for (const auto& [key, value] : input.dict().entries) {
    pairs.push_back(Value::list({key, value}, ListKind::kTuple));
  }
  return generator(std::move(pairs));
}

std::vector<Value> sorted(std::vector<Value> values, bool reverse,
                          const std::function<Value(const Value&)>& key) {
  std::vector<std::pair<Value, Value>> keyed;
  for (Value& v : values) keyed.emplace_back(key(v), std::move(v));
  std::stable_sort(keyed.begin(), keyed.end(), [reverse](const auto& x, const auto& y) {
    return reverse ? less(y.first, x.first) : less(x.first, y.first);
  });
  std::vector<Value> out;
  for (auto& kv : keyed) out.push_back(std::move(kv.second));
  return out;
}

Value dictsort(Interpreter&, const Value& input, const CallArgs& args) {
  const BoundArgs a("dictsort", args, {"case_sensitive", "by", "reverse"});
  if (!input.is_dict())
    fail("dictsort: '" + type_name(input) + "' object has no attribute 'items'");
  const std::string by = a.has(1) ? to_text(a[1]).str() : "key";
  if (by != "key" && by != "value") fail("You can only sort by either \"key\" or \"value\"");
  const size_t pos = by == "key" ? 0 : 1;
  const bool case_sensitive = truthy(a.get(0, false));
  std::vector<Value> pairs;
  for (const auto& [key, value] : input.dict().entries)
    pairs.push_back(Value::list({key, value}, ListKind::kTuple));
  return Value::list(sorted(std::move(pairs), truthy(a.get(2, false)), [&](const Value& pair) {
    const Value& v = pair.list().items[pos];
    return case_sensitive ? v : ignore_case(v);
  }));
}

Value sort(Interpreter&, const Value& input, const CallArgs& args) {
  const BoundArgs a("sort", args, {"reverse", "case_sensitive", "attribute"});
  const Value attribute = a.get(2, Value::none());
  const bool case_sensitive = truthy(a.get(1, false));
  if (attribute.is_string() && attribute.text().str().find(',') != std::string::npos) {
    unsupported("sort by several attributes");
  }
  // Jinja2's key is a list of one (make_multi_attrgetter), and lists compare their items
  // for equality before order: items that all lack the attribute are equal, not an error.
  return Value::list(sorted(iterate(input), truthy(a.get(0, false)), [&](const Value& item) {
    return Value::list({sort_key(item, attribute, case_sensitive)});
  }));
}

Value reverse(Interpreter&, const Value& input, const CallArgs&) {
  if (input.is_string()) {
    return get_slice(input, Value::none(), Value::none(), Value(-1));
  }
  const bool iterator = input.is_list() && input.list().kind == ListKind::kIterator;
  std::vector<Value> values = iterate(input);
  std::reverse(values.begin(), values.end());
  if (iterator) return Value::list(std::move(values));
  if (!input.is_list() && !input.is_dict() && !input.is_undefined())
    fail("argument must be iterable");
  return generator(std::move(values),
                   input.is_dict() ? "dict_reversekeyiterator" : "list_reverseiterator");
}

Value unique(Interpreter&, const Value& input, const CallArgs& args) {
  const BoundArgs a("unique", args, {"case_sensitive", "attribute"});
  std::vector<Value> seen;
  std::vector<Value> out;
  for (const Value& item : iterate(input)) {
    Value key = sort_key(item, a.get(1, Value::none()), truthy(a.get(0, false)));
    require_hashable(key);  // Jinja2 keeps the keys seen in a set
    if (std::none_of(seen.begin(), seen.end(), [&](const Value& s) { return equals(s, key); })) {
      seen.push_back(std::move(key));
      out.push_back(item);
    }
  }
  return generator(std::move(out));
}

template <bool kMax>
Value min_or_max(Interpreter&, const Value& input, const CallArgs& args) {
  const BoundArgs a(kMax ? "max" : "min", args, {"case_sensitive", "attribute"});
  const std::vector<Value> values = iterate(input);
  if (values.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  size_t best = 0;
  Value best_key = sort_key(values[0], a.get(1, Value::none()), truthy(a.get(0, false)));
  for (size_t i = 1; i < values.size(); ++i) {
    Value key = sort_key(values[i], a.get(1, Value::none()), truthy(a.get(0, false)));
    if (kMax ? less(best_key, key) : less(key, best_key)) {
      best = i;
      best_key = std::move(key);
    }
  }
  return values[best];
}

Value sum(Interpreter&, const Value& input, const CallArgs& args) {
  const BoundArgs a("sum", args, {"attribute", "start"});
  Value total = a.get(1, Value(0));
  for (const Value& item : iterate(input)) {
    total = binary(BinaryOp::kAdd, total, lookup_path(item, a.get(0, Value::none())));
  }
  return total;
}

// select, reject, selectattr, rejectattr: keep the items whose test (or truth) is kKeep.
template <bool kKeep, bool kAttr>
Value select(Interpreter& interp, const Value& input, const CallArgs& args) {
  if (kAttr && args.positional.empty()) fail("Missing parameter for attribute name");
  const Value attribute = kAttr ? args.positional[0] : Value::none();
  const size_t off = kAttr ? 1 : 0;
  const bool has_test = args.positional.size() > off;
  const std::string test = has_test ? to_text(args.positional[off]).str() : "";
  const CallArgs test_args = rest_of(args, off + 1);
  std::vector<Value> out;
  // Jinja2 walks the input only `if value:`, so None, 0 or false select nothing (a
  // template's `tools|selectattr(...)` where no tools were given).
  if (!truthy(input)) return generator(std::move(out));
  for (const Value& item : iterate(input)) {
    const Value subject = kAttr ? lookup_path(item, attribute) : item;
    const bool passed = has_test ? interp.apply_test(test, subject, test_args) : truthy(subject);
    if (passed == kKeep) out.push_back(item);
  }
  return generator(std::move(out));
}

Value map(Interpreter& interp, const Value& input, const CallArgs& args) {
  std::vector<Value> out;
  if (!truthy(input)) return generator(std::move(out));  // as select: Jinja2's `if value:`
  if (args.positional.empty()) {
    const BoundArgs a("map", args, {"attribute", "default"}, 1);
    for (const Value& item : iterate(input)) {
      Value v = lookup_path(item, a[0]);
      if (v.is_undefined() && a.has(1) && !a[1].is_none()) v = a[1];
      out.push_back(std::move(v));
    }
    return generator(std::move(out));
  }
  const std::string filter = to_text(args.positional[0]).str();
  const CallArgs filter_args = rest_of(args, 1);
  for (const Value& item : iterate(input))
    out.push_back(interp.apply_filter(filter, item, filter_args));
  return generator(std::move(out));
}

Value attr(Interpreter&, const Value& input, const CallArgs& args) {
  // Python's getattr only: unlike obj.name in a template, never an item of a dict.
  const BoundArgs a("attr", args, {"name"}, 1);
  const std::string name = to_text(a[0]).str();
  require_defined(input);
  if (input.is_object() && input.object().find(name)) return *input.object().find(name);
  if (auto method = find_method(input, name)) return *method;
  return Value::undefined("'" + type_name(input) + " object' has no attribute '" + name + "'");
}

}  // namespace

void add_sequence_filters(FilterTable& table) {
  // Names and their functions, pairwise (an alias repeats its function).
  static constexpr std::array<std::string_view, 20> kNames = {
      "length",   "count",  "first",      "last",       "list", "join", "items",
      "dictsort", "sort",   "reverse",    "unique",     "min",  "max",  "sum",
      "select",   "reject", "selectattr", "rejectattr", "map",  "attr"};
  static const std::array<FilterFn, 20> kFunctions = {length,
                                                      length,
                                                      first,
                                                      last,
                                                      list,
                                                      join_filter,
                                                      items,
                                                      dictsort,
                                                      sort,
                                                      reverse,
                                                      unique,
                                                      min_or_max<false>,
                                                      min_or_max<true>,
                                                      sum,
                                                      select<true, false>,
                                                      select<false, false>,
                                                      select<true, true>,
                                                      select<false, true>,
                                                      map,
                                                      attr};
  for (size_t i = 0; i < kNames.size(); ++i) table[kNames[i]] = kFunctions[i];
}

}  // namespace tandem::jinja
