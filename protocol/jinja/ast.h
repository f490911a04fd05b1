// The syntax tree the parser builds and the interpreter walks. Immutable once parsed: a
// compiled template is shared by every thread that renders it.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "protocol/jinja/operators.h"
#include "protocol/jinja/value.h"

namespace tandem::jinja {

struct Expr;
struct Stmt;
using ExprPtr = std::unique_ptr<Expr>;
using Body = std::vector<std::unique_ptr<Stmt>>;

struct ArgExprs {
  std::vector<ExprPtr> positional;
  std::vector<std::pair<std::string, ExprPtr>> named;
};

// One filter application: `| name(args)`.
struct FilterCall {
  std::string name;
  ArgExprs args;
  int line = 0;
  int column = 0;
};

namespace node {

struct Literal {
  Value value;  // none, bool, int, float or string: never a container (those are per render)
};
struct Name {
  std::string name;
};
struct ListLiteral {
  std::vector<ExprPtr> items;
  bool tuple = false;
};
struct DictLiteral {
  std::vector<std::pair<ExprPtr, ExprPtr>> items;
};
struct GetAttr {  // object.name
  ExprPtr object;
  std::string name;
};
struct GetItem {  // object[key]
  ExprPtr object;
  ExprPtr key;
};
struct Slice {  // start:stop:step inside [], each part optional
  ExprPtr start;
  ExprPtr stop;
  ExprPtr step;
};
struct Negate {
  ExprPtr operand;
};
struct Positive {  // unary +: Python's, a number's value (True is 1), else a TypeError
  ExprPtr operand;
};
struct Not {
  ExprPtr operand;
};
struct Arithmetic {
  BinaryOp op;
  ExprPtr left;
  ExprPtr right;
};
struct Concat {  // ~
  ExprPtr left;
  ExprPtr right;
};
struct Logical {  // and, or: short-circuit, yield an operand as Python does
  bool is_and = false;
  ExprPtr left;
  ExprPtr right;
};
struct Compare {  // a < b <= c: chained as in Python
  ExprPtr first;
  std::vector<std::pair<std::string, ExprPtr>> rest;  // "==" "!=" "<" "<=" ">" ">=" "in" "not in"
};
struct Conditional {  // then if test else otherwise (otherwise may be absent: undefined)
  ExprPtr test;
  ExprPtr then;
  ExprPtr otherwise;
};
struct Call {
  ExprPtr callee;
  ArgExprs args;
};
struct Filter {
  ExprPtr operand;
  FilterCall filter;
};
struct Test {  // operand is [not] name(args)
  ExprPtr operand;
  std::string name;
  ArgExprs args;
  bool negated = false;
};

}  // namespace node

struct Expr {
  std::variant<node::Literal, node::Name, node::ListLiteral, node::DictLiteral, node::GetAttr,
               node::GetItem, node::Slice, node::Negate, node::Positive, node::Not,
               node::Arithmetic, node::Concat, node::Logical, node::Compare, node::Conditional,
               node::Call, node::Filter, node::Test>
      node;
  int line = 0;
  int column = 0;
};

// Where an assignment or a loop stores: one name, names to unpack, or namespace.attr.
struct Target {
  std::vector<std::string> names;
  bool unpack = false;  // a, b = ...
  std::string attr;     // non-empty: names[0].attr = ...
};

namespace node {

struct Text {
  std::string text;
};
struct Print {
  ExprPtr expr;
};
struct If {
  std::vector<std::pair<ExprPtr, Body>> branches;  // if, then each elif
  Body otherwise;
};
struct For {
  Target target;
  ExprPtr iterable;
  ExprPtr condition;  // for x in xs if condition; may be absent
  Body body;
  Body otherwise;          // when nothing was iterated
  bool uses_loop = false;  // the body names `loop` (else no loop object is made)
};
struct Set {
  Target target;
  ExprPtr value;
};
struct SetBlock {  // {% set name | filters %}body{% endset %}
  Target target;
  std::vector<FilterCall> filters;
  Body body;
};
struct Macro {
  std::string name;
  std::vector<std::pair<std::string, ExprPtr>> params;  // default may be absent
  Body body;
  bool uses_varargs = false;
  bool uses_kwargs = false;
};
struct FilterBlock {
  std::vector<FilterCall> filters;
  Body body;
};
struct Scoped {  // {% generation %}, {% with %}: a body in a scope of its own
  std::vector<std::pair<std::string, ExprPtr>> assignments;
  Body body;
};
struct Break {};
struct Continue {};

}  // namespace node

struct Stmt {
  std::variant<node::Text, node::Print, node::If, node::For, node::Set, node::SetBlock, node::Macro,
               node::FilterBlock, node::Scoped, node::Break, node::Continue>
      node;
  int line = 0;
  int column = 0;
};

}  // namespace tandem::jinja
