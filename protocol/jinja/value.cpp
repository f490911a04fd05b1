#include "protocol/jinja/value.h"

#include <array>

#include "protocol/jinja/operators.h"

namespace tandem::jinja {

const Value* DictData::find(const Value& key) const {
  for (const auto& [k, v] : entries) {
    if (equals(k, key)) return &v;
  }
  return nullptr;
}

const Value* DictData::find(std::string_view key) const {
  for (const auto& [k, v] : entries) {
    if (k.is_string() && k.text().str() == key) return &v;
  }
  return nullptr;
}

void DictData::set(Value key, Value value) {
  for (auto& [k, v] : entries) {
    if (equals(k, key)) {
      v = std::move(value);
      return;
    }
  }
  entries.emplace_back(std::move(key), std::move(value));
}

const Value* ObjectData::find(std::string_view name) const {
  for (const auto& [k, v] : attrs) {
    if (k == name) return &v;
  }
  return nullptr;
}

void ObjectData::set(const std::string& name, Value value) {
  for (auto& [k, v] : attrs) {
    if (k == name) {
      v = std::move(value);
      return;
    }
  }
  attrs.emplace_back(name, std::move(value));
}

Value Value::undefined(std::string hint) {
  return Value(std::in_place, Undefined{std::make_shared<const std::string>(std::move(hint))});
}

Value Value::none() { return Value(std::in_place, None{}); }

Value::Value(Text text) : v_(std::make_shared<const Text>(std::move(text))) {}

Value Value::string(std::string_view bytes, bool from_input) {
  return Value(Text(std::string(bytes), from_input));
}

Value Value::list(std::vector<Value> items, ListKind kind, std::string type_name) {
  if (type_name.empty()) type_name = kind == ListKind::kTuple ? "tuple" : "list";
  return Value(std::in_place,
               std::make_shared<ListData>(ListData{std::move(items), kind, std::move(type_name)}));
}

Value Value::dict(DictData dict) {
  return Value(std::in_place, std::make_shared<const DictData>(std::move(dict)));
}

Value Value::object(ObjectData object) {
  return Value(std::in_place, std::make_shared<ObjectData>(std::move(object)));
}

Value Value::function(std::string name, std::function<Value(Interpreter&, const CallArgs&)> call) {
  return Value(std::in_place, std::make_shared<const FunctionData>(
                                  FunctionData{std::move(name), std::move(call)}));
}

double Value::to_double() const {
  if (is_float()) return as_float();
  return static_cast<double>(to_int());
}

const std::string& Value::undefined_hint() const {
  static const std::string kNoHint = "value is undefined";
  const auto& hint = std::get<Undefined>(v_).hint;
  return hint ? *hint : kNoHint;
}

bool Value::same_object(const Value& other) const {
  if (v_.index() != other.v_.index()) return false;
  return std::visit(
      [&](const auto& mine) -> bool {
        using T = std::decay_t<decltype(mine)>;
        if constexpr (std::is_same_v<T, std::shared_ptr<ListData>> ||
                      std::is_same_v<T, std::shared_ptr<const DictData>> ||
                      std::is_same_v<T, std::shared_ptr<ObjectData>> ||
                      std::is_same_v<T, std::shared_ptr<const FunctionData>> ||
                      std::is_same_v<T, std::shared_ptr<const Text>>) {
          return mine == std::get<T>(other.v_);
        } else {
          return false;
        }
      },
      v_);
}

std::string type_name(const Value& value) {
  if (value.is_list()) return value.list().type_name;
  if (value.is_object()) return value.object().type_name;
  static constexpr std::array<const char*, 10> kNames = {
      "Undefined", "NoneType", "bool", "int", "float", "str", "list", "dict", "object", "function"};
  return kNames[static_cast<size_t>(value.kind())];
}

}  // namespace tandem::jinja
