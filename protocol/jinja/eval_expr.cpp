// Expressions: names, literals, attribute and item access, operators, calls, filters
// and tests.
#include "protocol/jinja/access.h"
#include "protocol/jinja/builtins.h"
#include "protocol/jinja/error.h"
#include "protocol/jinja/interpreter.h"
#include "protocol/jinja/operators.h"

namespace tandem::jinja {

Value Interpreter::eval(const Expr& expr) {
  try {
    return std::visit([&](const auto& n) { return eval_node(n, expr); }, expr.node);
  } catch (Error& error) {
    error.locate(expr.line, expr.column);
    throw;
  }
}

CallArgs Interpreter::eval_args(const ArgExprs& args) {
  CallArgs out;
  for (const auto& arg : args.positional) out.positional.push_back(eval(*arg));
  for (const auto& [name, arg] : args.named) out.named.emplace_back(name, eval(*arg));
  return out;
}

Value Interpreter::lookup(const std::string& name) {
  for (Scope* scope = scope_; scope != nullptr; scope = scope->parent) {
    if (Value* value = scope->find(name)) return *value;
  }
  if (auto global = find_global(name)) return *global;
  return Value::undefined("'" + name + "' is undefined");
}

Value Interpreter::call(const Value& callee, const CallArgs& args) {
  if (callee.is_function()) return callee.function().call(*this, args);
  require_defined(callee);
  fail("'" + type_name(callee) + "' object is not callable");
}

Value Interpreter::apply_filter(const std::string& name, const Value& input, const CallArgs& args) {
  const FilterFn filter = find_filter(name);
  if (filter == nullptr) fail("No filter named '" + name + "' found.");
  if (!filter_supported(name)) unsupported("the '" + name + "' filter");
  // A filter that walks its input pays for each item; one that only reads the size or an end
  // pays one step. Qwen3's template reads messages|length in its loop over the messages, so
  // charging that by size made the budget quadratic: 999 one-line messages ran out of it.
  if (filter_reads_an_end(name)) {
    spend(1);
  } else if (input.is_list()) {
    spend(static_cast<int64_t>(input.list().items.size()));
  } else if (input.is_dict()) {
    spend(static_cast<int64_t>(input.dict().entries.size()));
  }
  return filter(*this, input, args);
}

bool Interpreter::apply_test(const std::string& name, const Value& input, const CallArgs& args) {
  const TestFn test = find_test(name);
  if (test == nullptr) fail("No test named '" + name + "' found.");
  return test(*this, input, args);
}

Value Interpreter::eval_node(const node::Literal& n, const Expr&) { return n.value; }

Value Interpreter::eval_node(const node::Name& n, const Expr&) { return lookup(n.name); }

Value Interpreter::eval_node(const node::ListLiteral& n, const Expr&) {
  std::vector<Value> items;
  items.reserve(n.items.size());
  for (const auto& item : n.items) items.push_back(eval(*item));
  return Value::list(std::move(items), n.tuple ? ListKind::kTuple : ListKind::kList);
}

Value Interpreter::eval_node(const node::DictLiteral& n, const Expr&) {
  DictData dict;
  for (const auto& [key, value] : n.items) {
    Value k = eval(*key);
    require_hashable(k);
    dict.set(std::move(k), eval(*value));
  }
  return Value::dict(std::move(dict));
}

Value Interpreter::eval_node(const node::GetAttr& n, const Expr&) {
  return get_attr(eval(*n.object), n.name);
}

Value Interpreter::eval_node(const node::GetItem& n, const Expr&) {
  const Value object = eval(*n.object);
  if (const auto* slice = std::get_if<node::Slice>(&n.key->node)) {
    const auto part = [&](const ExprPtr& e) { return e ? eval(*e) : Value::none(); };
    return get_slice(object, part(slice->start), part(slice->stop), part(slice->step));
  }
  return get_item(object, eval(*n.key));
}

Value Interpreter::eval_node(const node::Slice&, const Expr&) {
  fail("a slice outside of a subscript");
}

Value Interpreter::eval_node(const node::Negate& n, const Expr&) {
  return negate(eval(*n.operand));
}

Value Interpreter::eval_node(const node::Positive& n, const Expr&) {
  const Value value = eval(*n.operand);
  require_defined(value);
  if (value.is_float()) return value.as_float();
  if (value.is_int() || value.is_bool()) return value.to_int();
  fail("bad operand type for unary +: '" + type_name(value) + "'");
}

Value Interpreter::eval_node(const node::Not& n, const Expr&) { return !truthy(eval(*n.operand)); }

Value Interpreter::eval_node(const node::Arithmetic& n, const Expr&) {
  const Value left = eval(*n.left);
  return binary(n.op, left, eval(*n.right));
}

Value Interpreter::eval_node(const node::Concat& n, const Expr&) {
  Text out = to_text(eval(*n.left));
  out.append(to_text(eval(*n.right)));
  return Value(std::move(out));
}

Value Interpreter::eval_node(const node::Logical& n, const Expr&) {
  Value left = eval(*n.left);
  if (truthy(left) != n.is_and) return left;
  return eval(*n.right);
}

namespace {

bool compare(const std::string& op, const Value& a, const Value& b) {
  if (op == "==") return equals(a, b);
  if (op == "!=") return !equals(a, b);
  if (op == "<") return less(a, b, op);
  if (op == ">") return less(b, a, op);
  if (op == "<=") return less(a, b, op) || equals(a, b);
  if (op == ">=") return less(b, a, op) || equals(a, b);
  if (op == "in") return contains(b, a);
  return !contains(b, a);  // not in
}

}  // namespace

Value Interpreter::eval_node(const node::Compare& n, const Expr&) {
  Value left = eval(*n.first);
  for (const auto& [op, expr] : n.rest) {
    Value right = eval(*expr);
    if (!compare(op, left, right)) return false;
    left = std::move(right);
  }
  return true;
}

Value Interpreter::eval_node(const node::Conditional& n, const Expr& e) {
  if (truthy(eval(*n.test))) return eval(*n.then);
  if (n.otherwise) return eval(*n.otherwise);
  return Value::undefined("the inline if-expression on line " + std::to_string(e.line) +
                          " evaluated to false and no else section was defined.");
}

Value Interpreter::eval_node(const node::Call& n, const Expr&) {
  const Value callee = eval(*n.callee);
  return call(callee, eval_args(n.args));
}

Value Interpreter::eval_node(const node::Filter& n, const Expr&) {
  const Value input = eval(*n.operand);
  return apply_filter(n.filter.name, input, eval_args(n.filter.args));
}

Value Interpreter::eval_node(const node::Test& n, const Expr&) {
  const Value input = eval(*n.operand);
  return apply_test(n.name, input, eval_args(n.args)) != n.negated;
}

}  // namespace tandem::jinja
