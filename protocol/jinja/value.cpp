#include "protocol/jinja/value.h"

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
  Value v;
  v.v_ = Undefined{std::make_shared<const std::string>(std::move(hint))};
  return v;
}

Value Value::none() {
  Value v;
  v.v_ = None{};
  return v;
}

Value::Value(Text text) : v_(std::make_shared<const Text>(std::move(text))) {}

Value Value::string(std::string_view bytes, bool from_input) {
  return Value(Text(std::string(bytes), from_input));
}

Value Value::list(std::vector<Value> items, ListKind kind, std::string type_name) {
  if (type_name.empty()) type_name = kind == ListKind::kTuple ? "tuple" : "list";
  Value v;
  v.v_ = std::make_shared<ListData>(ListData{std::move(items), kind, std::move(type_name)});
  return v;
}

Value Value::dict(DictData dict) {
  Value v;
  v.v_ = std::make_shared<const DictData>(std::move(dict));
  return v;
}

Value Value::object(ObjectData object) {
  Value v;
  v.v_ = std::make_shared<ObjectData>(std::move(object));
  return v;
}

Value Value::function(std::string name, std::function<Value(Interpreter&, const CallArgs&)> call) {
  Value v;
  v.v_ = std::make_shared<const FunctionData>(FunctionData{std::move(name), std::move(call)});
  return v;
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
  switch (value.kind()) {
    case Value::Kind::kUndefined:
      return "Undefined";
    case Value::Kind::kNone:
      return "NoneType";
    case Value::Kind::kBool:
      return "bool";
    case Value::Kind::kInt:
      return "int";
    case Value::Kind::kFloat:
      return "float";
    case Value::Kind::kString:
      return "str";
    case Value::Kind::kList:
      return value.list().type_name;
    case Value::Kind::kDict:
      return "dict";
    case Value::Kind::kObject:
      return value.object().type_name;
    case Value::Kind::kFunction:
      return "function";
  }
  return "object";
}

}  // namespace tandem::jinja
