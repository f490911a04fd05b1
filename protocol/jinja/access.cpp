#include "protocol/jinja/access.h"

#include "protocol/jinja/builtins.h"
#include "protocol/jinja/error.h"
#include "protocol/jinja/operators.h"
#include "protocol/jinja/unicode.h"

namespace tandem::jinja {
namespace {

// Jinja2's object_type_repr: "None", or "dict object", "list object" ...
std::string object_type_repr(const Value& object) {
  if (object.is_none()) return "None";
  return type_name(object) + " object";
}

Value missing_attribute(const Value& object, const std::string& name) {
  return Value::undefined("'" + object_type_repr(object) + "' has no attribute '" + name + "'");
}

Value missing_element(const Value& object, const Value& key) {
  Text repr;
  append_repr(repr, key);
  return Value::undefined(object_type_repr(object) + " has no element " + repr.str());
}

// The item, or nullopt where Python's obj[key] raises TypeError or LookupError.
std::optional<Value> python_item(const Value& object, const Value& key) {
  if (object.is_dict()) {
    const Value* found = object.dict().find(key);
    return found ? std::optional<Value>(*found) : std::nullopt;
  }
  const bool indexable = (object.is_list() && (object.list().kind == ListKind::kList ||
                                               object.list().kind == ListKind::kTuple ||
                                               object.list().type_name == "range")) ||
                         object.is_string();
  if (!indexable || !(key.is_int() || key.is_bool())) return std::nullopt;
  int64_t i = key.to_int();
  if (object.is_list()) {
    const auto n = static_cast<int64_t>(object.list().items.size());
    if (i < 0) i += n;
    if (i < 0 || i >= n) return std::nullopt;
    return object.list().items[static_cast<size_t>(i)];
  }
  const Text& text = object.text();
  const auto offsets = code_point_offsets(text.str());
  const auto n = static_cast<int64_t>(offsets.size()) - 1;
  if (i < 0) i += n;
  if (i < 0 || i >= n) return std::nullopt;
  const size_t begin = offsets[static_cast<size_t>(i)];
  return Value(text.substr(begin, offsets[static_cast<size_t>(i) + 1] - begin));
}

// Python's slice.indices(): the positions a slice visits in a sequence of n.
std::vector<int64_t> slice_positions(int64_t n, const Value& start, const Value& stop,
                                     const Value& step) {
  const auto as_index = [](const Value& v) -> std::optional<int64_t> {
    if (v.is_none()) return std::nullopt;
    if (!v.is_int() && !v.is_bool()) {
      fail("slice indices must be integers or None or have an __index__ method");
    }
    return v.to_int();
  };
  const int64_t stride = as_index(step).value_or(1);
  if (stride == 0) fail("slice step cannot be zero");
  const auto clamp = [&](std::optional<int64_t> v, int64_t fallback) {
    if (!v) return fallback;
    int64_t i = *v < 0 ? *v + n : *v;
    if (stride > 0) return std::clamp<int64_t>(i, 0, n);
    return std::clamp<int64_t>(i, -1, n - 1);
  };
  const int64_t first = clamp(as_index(start), stride > 0 ? 0 : n - 1);
  const int64_t last = clamp(as_index(stop), stride > 0 ? n : -1);
  std::vector<int64_t> positions;
  for (int64_t i = first; stride > 0 ? i < last : i > last; i += stride) positions.push_back(i);
  return positions;
}

}  // namespace

Value get_attr(const Value& object, const std::string& name) {
  require_defined(object);
  if (object.is_object()) {
    const Value* found = object.object().find(name);
    return found ? *found : missing_attribute(object, name);
  }
  if (auto method = find_method(object, name)) return *method;
  if (auto item = python_item(object, Value::string(name))) return *item;
  return missing_attribute(object, name);
}

Value get_item(const Value& object, const Value& key) {
  require_defined(object);
  if (object.is_object() && key.is_string()) return get_attr(object, key.text().str());
  if (auto item = python_item(object, key)) return *item;
  if (key.is_string()) {
    if (auto method = find_method(object, key.text().str())) return *method;
    return missing_attribute(object, key.text().str());
  }
  return missing_element(object, key);
}

Value get_slice(const Value& object, const Value& start, const Value& stop, const Value& step) {
  require_defined(object);
  if (object.is_string()) {
    const Text& text = object.text();
    const auto offsets = code_point_offsets(text.str());
    Text out;
    for (int64_t i : slice_positions(static_cast<int64_t>(offsets.size()) - 1, start, stop, step)) {
      const auto u = static_cast<size_t>(i);
      out.append(text, offsets[u], offsets[u + 1] - offsets[u]);
    }
    return Value(std::move(out));
  }
  if (object.is_list() && object.list().kind != ListKind::kIterator) {
    const auto& items = object.list().items;
    std::vector<Value> out;
    for (int64_t i : slice_positions(static_cast<int64_t>(items.size()), start, stop, step)) {
      out.push_back(items[static_cast<size_t>(i)]);
    }
    const ListKind kind =
        object.list().kind == ListKind::kTuple ? ListKind::kTuple : ListKind::kList;
    return Value::list(std::move(out), kind);
  }
  return Value::undefined("'" + type_name(object) + "' object is not subscriptable");
}

}  // namespace tandem::jinja
