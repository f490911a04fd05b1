// The interpreter: walks a parsed template with one render's variables and writes Text.
// One Interpreter per render, on one thread; the syntax tree it walks is shared and never
// changed. Scoping follows Jinja2's: a for loop's body gets a fresh scope every iteration,
// a macro call and a block set get one each, if blocks share their parent's.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "protocol/jinja/ast.h"
#include "protocol/jinja/text.h"
#include "protocol/jinja/value.h"

namespace tandem::jinja {

// A wall-clock reading for strftime_now, in the server's local time (as Python's
// datetime.now() is).
struct DateTime {
  int year = 1970;
  int month = 1;  // 1-12
  int day = 1;    // 1-31
  int hour = 0;
  int minute = 0;
  int second = 0;
};

struct Scope {
  std::vector<std::pair<std::string, Value>> vars;
  Scope* parent = nullptr;
  bool captured = false;  // a macro defined here refers to it: it must outlive its block
  Value* find(std::string_view name);
  void set(const std::string& name, Value value);
};

class Interpreter {
 public:
  // variables: what the template sees at the top level. now: strftime_now's clock.
  Interpreter(std::vector<std::pair<std::string, Value>> variables, std::function<DateTime()> now);
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;

  // Renders the template. Throws Error.
  Text render(const Body& body);

  // --- for filters, globals and macros
  Value call(const Value& callee, const CallArgs& args);
  Value apply_filter(const std::string& name, const Value& input, const CallArgs& args);
  bool apply_test(const std::string& name, const Value& input, const CallArgs& args);
  DateTime now() const { return now_(); }
  // Counts work (loop iterations, macro calls, items through filters) against the render's
  // budget; fails when it is spent.
  void spend(int64_t steps);
  Value call_macro(const node::Macro& macro, Scope* closure, const CallArgs& args);

 private:
  enum class Flow { kNormal, kBreak, kContinue };

  // --- statements (exec_stmt.cpp)
  Flow exec_body(const Body& body, Text& out);
  Flow exec(const Stmt& stmt, Text& out);
  Flow exec_node(const node::Text& text, Text& out);
  Flow exec_node(const node::Print& print, Text& out);
  Flow exec_node(const node::If& branch, Text& out);
  Flow exec_node(const node::For& loop, Text& out);
  Flow exec_node(const node::Set& set, Text& out);
  Flow exec_node(const node::SetBlock& set, Text& out);
  Flow exec_node(const node::Macro& macro, Text& out);
  Flow exec_node(const node::FilterBlock& block, Text& out);
  Flow exec_node(const node::Scoped& scoped, Text& out);
  Flow exec_node(const node::Break&, Text&) { return Flow::kBreak; }
  Flow exec_node(const node::Continue&, Text&) { return Flow::kContinue; }
  std::vector<Value> loop_items(const node::For& loop);
  Text render_inner(const Body& body);
  Value apply_filters(const std::vector<FilterCall>& filters, Value value);
  void assign(const Target& target, const Value& value);
  Scope& push_scope();
  void pop_scope(Scope& scope);

  // --- expressions (eval_expr.cpp)
  Value eval(const Expr& expr);
  Value eval_node(const node::Literal& n, const Expr& e);
  Value eval_node(const node::Name& n, const Expr& e);
  Value eval_node(const node::ListLiteral& n, const Expr& e);
  Value eval_node(const node::DictLiteral& n, const Expr& e);
  Value eval_node(const node::GetAttr& n, const Expr& e);
  Value eval_node(const node::GetItem& n, const Expr& e);
  Value eval_node(const node::Slice& n, const Expr& e);
  Value eval_node(const node::Negate& n, const Expr& e);
  Value eval_node(const node::Positive& n, const Expr& e);
  Value eval_node(const node::Not& n, const Expr& e);
  Value eval_node(const node::Arithmetic& n, const Expr& e);
  Value eval_node(const node::Concat& n, const Expr& e);
  Value eval_node(const node::Logical& n, const Expr& e);
  Value eval_node(const node::Compare& n, const Expr& e);
  Value eval_node(const node::Conditional& n, const Expr& e);
  Value eval_node(const node::Call& n, const Expr& e);
  Value eval_node(const node::Filter& n, const Expr& e);
  Value eval_node(const node::Test& n, const Expr& e);
  CallArgs eval_args(const ArgExprs& args);
  Value lookup(const std::string& name);

  std::function<DateTime()> now_;
  std::deque<Scope> scopes_;  // every scope of this render; a Scope* stays valid to the end
  std::vector<Scope*> free_scopes_;
  Scope* scope_ = nullptr;
  int call_depth_ = 0;
  int64_t steps_ = 0;
};

}  // namespace tandem::jinja
