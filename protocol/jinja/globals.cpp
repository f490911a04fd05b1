// The global functions: range, namespace, dict, raise_exception, strftime_now (and the
// Jinja2 globals this interpreter lacks: cycler, joiner, lipsum).
#include <array>
#include <cstdio>
#include <unordered_map>

#include "protocol/jinja/builtins.h"
#include "protocol/jinja/error.h"
#include "protocol/jinja/interpreter.h"
#include "protocol/jinja/operators.h"

namespace tandem::jinja {

std::string strftime(const DateTime& time, const std::string& format);  // strftime.cpp

namespace {

constexpr int64_t kMaxRange = 100000;  // Jinja2's sandbox refuses larger ranges

Value range(Interpreter&, const CallArgs& args) {
  if (!args.named.empty()) fail("range() takes no keyword arguments");
  const size_t n = args.positional.size();
  if (n < 1 || n > 3) fail("range expected at most 3 arguments, got " + std::to_string(n));
  for (const Value& v : args.positional) {
    if (!v.is_int() && !v.is_bool())
      fail("'" + type_name(v) + "' object cannot be interpreted as an integer");
  }
  const int64_t start = n == 1 ? 0 : args.positional[0].to_int();
  const int64_t stop = n == 1 ? args.positional[0].to_int() : args.positional[1].to_int();
  const int64_t step = n == 3 ? args.positional[2].to_int() : 1;
  if (step == 0) fail("range() arg 3 must not be zero");
  std::vector<Value> items;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    if (static_cast<int64_t>(items.size()) >= kMaxRange) {
      fail("Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
    }
    items.emplace_back(i);
  }
  return Value::list(std::move(items), ListKind::kView, "range");
}

// dict(mapping or pairs, **kwargs) and namespace(...) take the same arguments.
std::vector<std::pair<Value, Value>> mapping_arguments(const CallArgs& args, const char* fn) {
  std::vector<std::pair<Value, Value>> entries;
  if (args.positional.size() > 1) fail(std::string(fn) + " expected at most 1 argument");
  if (!args.positional.empty()) {
    const Value& source = args.positional[0];
    if (source.is_dict()) {
      entries = source.dict().entries;
    } else {
      for (const Value& pair : iterate(source)) {
        const std::vector<Value> kv = iterate(pair);
        if (kv.size() != 2) fail("dictionary update sequence element has wrong length");
        entries.emplace_back(kv[0], kv[1]);
      }
    }
  }
  for (const auto& [name, value] : args.named) entries.emplace_back(Value::string(name), value);
  return entries;
}

Value dict(Interpreter&, const CallArgs& args) {
  DictData out;
  for (auto& [key, value] : mapping_arguments(args, "dict")) out.set(key, value);
  return Value::dict(std::move(out));
}

Value namespace_object(Interpreter&, const CallArgs& args) {
  ObjectData ns{"Namespace", true, {}};
  for (auto& [key, value] : mapping_arguments(args, "namespace")) {
    if (!key.is_string()) fail("keywords must be strings");
    ns.set(key.text().str(), value);
  }
  return Value::object(std::move(ns));
}

Value raise_exception(Interpreter&, const CallArgs& args) {
  const std::string message = args.positional.empty() ? "" : to_text(args.positional[0]).str();
  throw Error(ErrorKind::kRaised, message);
}

Value strftime_now(Interpreter& interp, const CallArgs& args) {
  const BoundArgs a("strftime_now", args, {"format"}, 1);
  return Value::string(strftime(interp.now(), to_text(a[0]).str()));
}

Value missing_global(Interpreter&, const CallArgs&) {
  unsupported("the globals cycler, joiner and lipsum");
}

}  // namespace

std::optional<Value> find_global(std::string_view name) {
  using Fn = Value (*)(Interpreter&, const CallArgs&);
  static const std::unordered_map<std::string_view, Fn> table = {
      {"range", range},
      {"dict", dict},
      {"namespace", namespace_object},
      {"raise_exception", raise_exception},
      {"strftime_now", strftime_now},
      {"cycler", missing_global},
      {"joiner", missing_global},
      {"lipsum", missing_global},
  };
  const auto it = table.find(name);
  if (it == table.end()) return std::nullopt;
  return Value::function(std::string(name), it->second);
}

}  // namespace tandem::jinja
