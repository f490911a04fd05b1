// The interpreter's values, with Python's data model as Jinja2 sees it: undefined, none,
// bool, int, float, string (a Text: it remembers which bytes came from input), list (with
// tuples, single-pass iterators and views such as range() and dict.items() as flavours),
// dict (insertion-ordered, like Python's), object (a namespace() or a for loop's `loop`)
// and function (a macro, a global, a bound method).
//
// Lists and dicts are immutable once built (the sandbox transformers uses forbids
// list.append and friends), so values share them freely; only a namespace changes, through
// `{% set ns.attr = ... %}`, and it is shared by reference as in Python.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "protocol/jinja/text.h"

namespace tandem::jinja {

class Value;
class Interpreter;

// Arguments of a call: positional, then keyword in the order written.
struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> named;
};

enum class ListKind {
  kList,
  kTuple,
  kIterator,  // a generator (select, map, |items, |reverse ...): one pass, no len(), truthy
  kView,      // range(), dict.items()/keys()/values(): re-iterable, len(), not printable here
};

struct ListData {
  std::vector<Value> items;
  ListKind kind = ListKind::kList;
  std::string type_name = "list";  // Python's: "list", "tuple", "generator", "range" ...
  bool exhausted = false;          // an iterator that has been iterated
};

struct DictData {
  std::vector<std::pair<Value, Value>> entries;  // in insertion order, keys unique
  const Value* find(const Value& key) const;
  const Value* find(std::string_view key) const;
  // Adds or replaces, keeping the first insertion's position (as Python does).
  void set(Value key, Value value);
};

struct ObjectData {
  std::string type_name;    // "Namespace", "LoopContext"
  bool assignable = false;  // only a namespace takes {% set obj.attr = ... %}
  std::vector<std::pair<std::string, Value>> attrs;
  const Value* find(std::string_view name) const;
  void set(const std::string& name, Value value);
};

struct FunctionData {
  std::string name;
  std::function<Value(Interpreter&, const CallArgs&)> call;
};

class Value {
 public:
  enum class Kind {
    kUndefined,
    kNone,
    kBool,
    kInt,
    kFloat,
    kString,
    kList,
    kDict,
    kObject,
    kFunction
  };

  // Undefined. hint is Jinja2's message when the value is used where that is an error,
  // e.g. "'tools' is undefined" or "'dict object' has no attribute 'x'".
  Value() = default;
  static Value undefined(std::string hint);
  static Value none();
  // Implicit on purpose: Value(true), Value(int64_t{3}), Value(text) read as the literal.
  Value(bool b) : v_(b) {}
  Value(int64_t i) : v_(i) {}
  Value(int i) : v_(static_cast<int64_t>(i)) {}
  Value(double d) : v_(d) {}
  Value(Text text);
  Value(const char*) = delete;  // would become a bool: use Value::string
  static Value string(std::string_view bytes, bool from_input = false);
  static Value list(std::vector<Value> items, ListKind kind = ListKind::kList,
                    std::string type_name = "");
  static Value dict(DictData dict);
  static Value object(ObjectData object);
  static Value function(std::string name, std::function<Value(Interpreter&, const CallArgs&)> call);

  Kind kind() const { return static_cast<Kind>(v_.index()); }
  bool is_undefined() const { return kind() == Kind::kUndefined; }
  bool is_none() const { return kind() == Kind::kNone; }
  bool is_bool() const { return kind() == Kind::kBool; }
  bool is_int() const { return kind() == Kind::kInt; }
  bool is_float() const { return kind() == Kind::kFloat; }
  // int, float or bool (a Python bool is an int)
  bool is_number() const { return is_int() || is_float() || is_bool(); }
  bool is_string() const { return kind() == Kind::kString; }
  bool is_list() const { return kind() == Kind::kList; }
  bool is_dict() const { return kind() == Kind::kDict; }
  bool is_object() const { return kind() == Kind::kObject; }
  bool is_function() const { return kind() == Kind::kFunction; }

  bool as_bool() const { return std::get<bool>(v_); }
  int64_t as_int() const { return std::get<int64_t>(v_); }
  double as_float() const { return std::get<double>(v_); }
  // An int or bool as an integer.
  int64_t to_int() const { return is_bool() ? as_bool() : as_int(); }
  // Any number as a double.
  double to_double() const;
  const Text& text() const { return *std::get<std::shared_ptr<const Text>>(v_); }
  const ListData& list() const { return *std::get<std::shared_ptr<ListData>>(v_); }
  ListData& mutable_list() const { return *std::get<std::shared_ptr<ListData>>(v_); }
  const DictData& dict() const { return *std::get<std::shared_ptr<const DictData>>(v_); }
  ObjectData& object() const { return *std::get<std::shared_ptr<ObjectData>>(v_); }
  const FunctionData& function() const {
    return *std::get<std::shared_ptr<const FunctionData>>(v_);
  }
  // The message to raise when this undefined value is used.
  const std::string& undefined_hint() const;
  // Whether two values are the same object (lists, dicts, objects, functions).
  bool same_object(const Value& other) const;

 private:
  struct Undefined {
    std::shared_ptr<const std::string> hint;
  };
  struct None {};
  template <class T>
  Value(std::in_place_t, T alternative) : v_(std::move(alternative)) {}

  std::variant<Undefined, None, bool, int64_t, double, std::shared_ptr<const Text>,
               std::shared_ptr<ListData>, std::shared_ptr<const DictData>,
               std::shared_ptr<ObjectData>, std::shared_ptr<const FunctionData>>
      v_;
};

// Python's type(x).__name__: "str", "int", "dict", "NoneType", "list", "generator" ...
std::string type_name(const Value& value);

}  // namespace tandem::jinja
