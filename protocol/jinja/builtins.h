// The names a template can call: filters (`x | name`), tests (`x is name`), global
// functions (range, namespace, dict, raise_exception, strftime_now) and the Python
// methods of strings, dicts and lists (`s.strip()`, `d.get(k)`). Each table is constant.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/jinja/value.h"

namespace tandem::jinja {

using FilterFn = Value (*)(Interpreter& interp, const Value& input, const CallArgs& args);
using TestFn = bool (*)(Interpreter& interp, const Value& input, const CallArgs& args);

// Null when Jinja2 (as transformers configures it) has no such filter or test.
FilterFn find_filter(std::string_view name);
TestFn find_test(std::string_view name);
// Whether this interpreter implements a filter Jinja2 has (find_filter is not null for the
// ones it lacks, so that templates naming them still compile as in Jinja2).
bool filter_supported(std::string_view name);
// Whether a filter reads only its input's size or an end (length, count, first, last), so a
// render's step budget charges it one step rather than its input's items.
bool filter_reads_an_end(std::string_view name);
// A global function, or nullopt.
std::optional<Value> find_global(std::string_view name);
// obj.name as Jinja2's sandboxed getattr sees it for a method: a bound method; for a
// method the immutable sandbox refuses (list.append, dict.pop ...) an undefined that raises
// Jinja2's SecurityError message when called; nullopt when obj has no such method.
std::optional<Value> find_method(const Value& obj, std::string_view name);

// Binds call arguments to parameter names as Python does.
class BoundArgs {
 public:
  // required: how many leading parameters must be given.
  BoundArgs(std::string_view function, const CallArgs& args,
            std::initializer_list<std::string_view> params, size_t required = 0);
  bool has(size_t i) const { return given_[i]; }
  const Value& operator[](size_t i) const { return values_[i]; }
  // The value, or fallback when not given.
  Value get(size_t i, Value fallback) const { return given_[i] ? values_[i] : fallback; }

 private:
  std::vector<Value> values_;
  std::vector<bool> given_;
};

// Arguments a filter or test passes on (select's test arguments, map's filter arguments).
CallArgs rest_of(const CallArgs& args, size_t skip);

}  // namespace tandem::jinja
