// Statements: output, if, for (with loop.*), set, block set, macro definitions and calls,
// filter blocks, with/generation scopes, break and continue.
#include "protocol/jinja/builtins.h"
#include "protocol/jinja/error.h"
#include "protocol/jinja/interpreter.h"
#include "protocol/jinja/operators.h"

namespace tandem::jinja {
namespace {

// Bounds on one render, so that no template can hang a server thread: macro nesting, and
// loop iterations plus macro calls (real chat templates take a few per message; a filter
// that walks its input costs its items, length/count/first/last one). Text and lists bound
// sizes (kMaxTextBytes, kMaxItems). 16M steps take about 0.5 s: enough for Gemma 4's
// template, which scans back over the earlier messages for each one (quadratic in Jinja2
// too), at 5000 messages; 1M refused it at about 1400.
constexpr int kMaxCallDepth = 200;
constexpr int64_t kMaxSteps = 16'000'000;

Value loop_object(const std::vector<Value>& items, size_t i) {
  const auto n = static_cast<int64_t>(items.size());
  const auto index0 = static_cast<int64_t>(i);
  ObjectData loop{"LoopContext", false, {}};
  loop.attrs = {
      {"index", Value(index0 + 1)},
      {"index0", Value(index0)},
      {"revindex", Value(n - index0)},
      {"revindex0", Value(n - index0 - 1)},
      {"first", Value(i == 0)},
      {"last", Value(index0 == n - 1)},
      {"length", Value(n)},
      {"depth", Value(1)},
      {"depth0", Value(0)},
  };
  loop.attrs.emplace_back("previtem",
                          i > 0 ? items[i - 1] : Value::undefined("there is no previous item"));
  loop.attrs.emplace_back(
      "nextitem", index0 + 1 < n ? items[i + 1] : Value::undefined("there is no next item"));
  loop.attrs.emplace_back("cycle", Value::function("cycle", [i](Interpreter&, const CallArgs& a) {
                            if (a.positional.empty()) fail("no items for cycling given");
                            return a.positional[i % a.positional.size()];
                          }));
  loop.attrs.emplace_back("changed",
                          Value::function("changed", [](Interpreter&, const CallArgs&) -> Value {
                            unsupported("loop.changed()");
                          }));
  return Value::object(std::move(loop));
}

}  // namespace

Value* Scope::find(std::string_view name) {
  for (auto& [key, value] : vars) {
    if (key == name) return &value;
  }
  return nullptr;
}

void Scope::set(const std::string& name, Value value) {
  if (Value* slot = find(name)) {
    *slot = std::move(value);
  } else {
    vars.emplace_back(name, std::move(value));
  }
}

Interpreter::Interpreter(std::vector<std::pair<std::string, Value>> variables,
                         std::function<DateTime()> now)
    : now_(std::move(now)) {
  scopes_.emplace_back();
  scope_ = &scopes_.back();
  for (auto& [name, value] : variables) scope_->set(name, std::move(value));
}

Text Interpreter::render(const Body& body) {
  Text out;
  exec_body(body, out);
  return out;
}

void Interpreter::spend(int64_t steps) {
  steps_ += steps;
  if (steps_ > kMaxSteps) {
    unsupported("templates running over " + std::to_string(kMaxSteps) +
                " loop iterations and macro calls");
  }
}

Scope& Interpreter::push_scope() {
  Scope* scope = nullptr;
  if (!free_scopes_.empty()) {
    scope = free_scopes_.back();
    free_scopes_.pop_back();
  } else {
    scopes_.emplace_back();
    scope = &scopes_.back();
  }
  scope->parent = scope_;
  scope_ = scope;
  return *scope;
}

void Interpreter::pop_scope(Scope& scope) {
  scope_ = scope.parent;
  if (scope.captured) return;  // a macro defined in it may still be called
  scope.vars.clear();
  free_scopes_.push_back(&scope);
}

Interpreter::Flow Interpreter::exec_body(const Body& body, Text& out) {
  for (const auto& stmt : body) {
    const Flow flow = exec(*stmt, out);
    if (flow != Flow::kNormal) return flow;
  }
  return Flow::kNormal;
}

Interpreter::Flow Interpreter::exec(const Stmt& stmt, Text& out) {
  try {
    return std::visit([&](const auto& n) { return exec_node(n, out); }, stmt.node);
  } catch (Error& error) {
    error.locate(stmt.line, stmt.column);
    throw;
  }
}

Interpreter::Flow Interpreter::exec_node(const node::Text& text, Text& out) {
  out.append(text.text, false);
  return Flow::kNormal;
}

Interpreter::Flow Interpreter::exec_node(const node::Print& print, Text& out) {
  out.append(to_text(eval(*print.expr)));
  return Flow::kNormal;
}

Interpreter::Flow Interpreter::exec_node(const node::If& branch, Text& out) {
  for (const auto& [test, body] : branch.branches) {
    if (truthy(eval(*test))) return exec_body(body, out);
  }
  return exec_body(branch.otherwise, out);
}

// The items a loop runs over, after its `if` filter (which sees the target, not `loop`).
std::vector<Value> Interpreter::loop_items(const node::For& loop) {
  std::vector<Value> items = iterate(eval(*loop.iterable));
  if (!loop.condition) return items;
  std::vector<Value> kept;
  for (Value& item : items) {
    spend(1);
    Scope& scope = push_scope();
    assign(loop.target, item);
    const bool keep = truthy(eval(*loop.condition));
    pop_scope(scope);
    if (keep) kept.push_back(std::move(item));
  }
  return kept;
}

// The else branch runs unless some iteration ran its body to the end: Jinja2 clears its
// "no iteration" flag as a body's last step, so one cut short by break or continue leaves
// it set ({% for x in [1] %}{% break %}{% else %}E{% endfor %} renders E).
Interpreter::Flow Interpreter::exec_node(const node::For& loop, Text& out) {
  const std::vector<Value> items = loop_items(loop);
  bool completed = false;
  for (size_t i = 0; i < items.size(); ++i) {
    spend(1);
    Scope& scope = push_scope();
    assign(loop.target, items[i]);
    if (loop.uses_loop) scope.set("loop", loop_object(items, i));
    const Flow flow = exec_body(loop.body, out);
    pop_scope(scope);
    completed = completed || flow == Flow::kNormal;
    if (flow == Flow::kBreak) break;
  }
  if (completed || loop.otherwise.empty()) return Flow::kNormal;
  Scope& scope = push_scope();
  const Flow flow = exec_body(loop.otherwise, out);
  pop_scope(scope);
  return flow;
}

void Interpreter::assign(const Target& target, const Value& value) {
  if (!target.attr.empty()) {
    const Value ns = lookup(target.names[0]);
    if (!ns.is_object() || !ns.object().assignable) {
      fail("cannot assign attribute on non-namespace object");
    }
    ns.object().set(target.attr, value);
    return;
  }
  if (!target.unpack) {
    scope_->set(target.names[0], value);
    return;
  }
  const std::vector<Value> parts = iterate(value);
  if (parts.size() != target.names.size()) {
    fail(parts.size() > target.names.size()
             ? "too many values to unpack (expected " + std::to_string(target.names.size()) + ")"
             : "not enough values to unpack (expected " + std::to_string(target.names.size()) +
                   ", got " + std::to_string(parts.size()) + ")");
  }
  for (size_t i = 0; i < parts.size(); ++i) scope_->set(target.names[i], parts[i]);
}

Interpreter::Flow Interpreter::exec_node(const node::Set& set, Text&) {
  assign(set.target, eval(*set.value));
  return Flow::kNormal;
}

Text Interpreter::render_inner(const Body& body) {
  Text inner;
  Scope& scope = push_scope();
  const Flow flow = exec_body(body, inner);
  pop_scope(scope);
  if (flow != Flow::kNormal) unsupported("break or continue inside a block set or filter block");
  return inner;
}

Value Interpreter::apply_filters(const std::vector<FilterCall>& filters, Value value) {
  for (const FilterCall& filter : filters) {
    value = apply_filter(filter.name, value, eval_args(filter.args));
  }
  return value;
}

Interpreter::Flow Interpreter::exec_node(const node::SetBlock& set, Text&) {
  assign(set.target, apply_filters(set.filters, Value(render_inner(set.body))));
  return Flow::kNormal;
}

Interpreter::Flow Interpreter::exec_node(const node::FilterBlock& block, Text& out) {
  out.append(to_text(apply_filters(block.filters, Value(render_inner(block.body)))));
  return Flow::kNormal;
}

Interpreter::Flow Interpreter::exec_node(const node::Scoped& scoped, Text& out) {
  std::vector<Value> values;
  for (const auto& assignment : scoped.assignments) values.push_back(eval(*assignment.second));
  Scope& scope = push_scope();
  for (size_t i = 0; i < values.size(); ++i) scope.set(scoped.assignments[i].first, values[i]);
  const Flow flow = exec_body(scoped.body, out);
  pop_scope(scope);
  return flow;
}

Interpreter::Flow Interpreter::exec_node(const node::Macro& macro, Text&) {
  Scope* closure = scope_;
  for (Scope* s = closure; s != nullptr; s = s->parent) s->captured = true;
  scope_->set(macro.name, Value::function(macro.name, [&macro, closure](Interpreter& interp,
                                                                        const CallArgs& args) {
                return interp.call_macro(macro, closure, args);
              }));
  return Flow::kNormal;
}

Value Interpreter::call_macro(const node::Macro& macro, Scope* closure, const CallArgs& args) {
  if (call_depth_ >= kMaxCallDepth) fail("maximum recursion depth exceeded in macro calls");
  spend(1);
  const size_t n = macro.params.size();
  if (args.positional.size() > n && !macro.uses_varargs) {
    fail("macro '" + macro.name + "' takes not more than " + std::to_string(n) + " argument(s)");
  }
  Scope* saved = scope_;
  scope_ = closure;
  Scope& frame = push_scope();
  std::vector<bool> given(n, false);
  for (size_t i = 0; i < n && i < args.positional.size(); ++i) {
    frame.set(macro.params[i].first, args.positional[i]);
    given[i] = true;
  }
  DictData extra_named;
  for (const auto& [key, value] : args.named) {
    size_t i = 0;
    while (i < n && macro.params[i].first != key) ++i;
    // Jinja2 fills only the parameters past the positional ones from the keywords, so a
    // keyword naming one given positionally is left over: kwargs takes it, or it is refused.
    if (i < n && given[i]) i = n;
    if (i == n && !macro.uses_kwargs) {
      fail("macro '" + macro.name + "' takes no keyword argument '" + key + "'");
    }
    if (i == n) {
      extra_named.set(Value::string(key), value);
      continue;
    }
    frame.set(key, value);
    given[i] = true;
  }
  for (size_t i = 0; i < n; ++i) {
    if (given[i]) continue;
    const auto& [name, default_value] = macro.params[i];
    frame.set(name, default_value ? eval(*default_value)
                                  : Value::undefined("parameter '" + name + "' was not provided"));
  }
  if (macro.uses_varargs) {
    std::vector<Value> rest;
    for (size_t i = n; i < args.positional.size(); ++i) rest.push_back(args.positional[i]);
    frame.set("varargs", Value::list(std::move(rest), ListKind::kTuple));
  }
  if (macro.uses_kwargs) frame.set("kwargs", Value::dict(std::move(extra_named)));
  Text out;
  // An error ends the whole render, so nothing here needs restoring when one is thrown.
  ++call_depth_;
  exec_body(macro.body, out);
  --call_depth_;
  pop_scope(frame);
  scope_ = saved;
  return Value(std::move(out));
}

}  // namespace tandem::jinja
