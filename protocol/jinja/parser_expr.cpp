// Expressions: Jinja2's parser.py, parse_tuple down to parse_primary.
#include <array>

#include "protocol/jinja/builtins.h"
#include "protocol/jinja/error.h"
#include "protocol/jinja/parser.h"

namespace tandem::jinja {

ExprPtr Parser::parse_expression(bool with_condexpr) {
  const Token start = peek();
  NestingGuard guard(*this);
  guard.deeper(start);
  if (!with_condexpr) return parse_logical(false);
  const size_t unknown_mark = unknown_names_.size();
  ExprPtr expr = parse_logical(false);
  while (at_name("if")) {
    guard.deeper(next());
    for (size_t i = unknown_mark; i < unknown_names_.size(); ++i) {
      unknown_names_[i].in_condition = true;
    }
    ++condition_depth_;
    node::Conditional cond;
    cond.then = std::move(expr);
    cond.test = parse_logical(false);
    if (skip_name("else")) cond.otherwise = parse_expression(true);
    --condition_depth_;
    expr = make(std::move(cond), start);
  }
  return expr;
}

ExprPtr Parser::parse_tuple(bool with_condexpr, std::string_view end_name, bool explicit_parens) {
  const Token start = peek();
  std::vector<ExprPtr> items;
  bool is_tuple = false;
  while (true) {
    if (!items.empty()) expect_op(",");
    const Token& t = peek();
    const bool at_end = t.type == TokenType::kVariableEnd || t.type == TokenType::kBlockEnd ||
                        at_op(")") || (!end_name.empty() && at_name(end_name));
    if (at_end) break;
    items.push_back(parse_expression(with_condexpr));
    if (!at_op(",")) break;
    is_tuple = true;
  }
  if (!is_tuple) {
    if (!items.empty()) return std::move(items.front());
    if (!explicit_parens) fail_at(peek(), "expected an expression");
  }
  return make(node::ListLiteral{std::move(items), true}, start);
}

// or (is_and false) over and (is_and true) over not.
ExprPtr Parser::parse_logical(bool is_and) {
  NestingGuard guard(*this);
  const auto operand = [&] { return is_and ? parse_not() : parse_logical(true); };
  ExprPtr left = operand();
  while (at_name(is_and ? "and" : "or")) {
    const Token op = next();
    guard.deeper(op);
    left = make(node::Logical{is_and, std::move(left), operand()}, op);
  }
  return left;
}

ExprPtr Parser::parse_not() {
  NestingGuard guard(*this);
  if (at_name("not")) {
    const Token op = next();
    guard.deeper(op);
    return make(node::Not{parse_not()}, op);
  }
  return parse_compare();
}

ExprPtr Parser::parse_compare() {
  const Token start = peek();
  ExprPtr first = parse_binary_level(0);
  node::Compare cmp;
  while (true) {
    static constexpr std::array<std::string_view, 6> kOps = {"==", "!=", "<", "<=", ">", ">="};
    std::string op;
    for (std::string_view candidate : kOps) {
      if (at_op(candidate)) op = candidate;
    }
    if (!op.empty()) {
      next();
    } else if (at_name("in")) {
      next();
      op = "in";
    } else if (at_name("not") && at_name("in", 1)) {
      next();
      next();
      op = "not in";
    } else {
      break;
    }
    cmp.rest.emplace_back(op, parse_binary_level(0));
  }
  if (cmp.rest.empty()) return first;
  cmp.first = std::move(first);
  return make(std::move(cmp), start);
}

// Level 0: + -, 1: ~, 2: * / // %, 3: ** (left-associative, as Jinja2 parses it).
ExprPtr Parser::parse_binary_level(int level) {
  if (level == 4) return parse_unary(true);
  const Token start = peek();
  NestingGuard guard(*this);
  ExprPtr left = parse_binary_level(level + 1);
  while (true) {
    static constexpr std::array<std::pair<std::string_view, BinaryOp>, 7> kOps = {{
        {"+", BinaryOp::kAdd},
        {"-", BinaryOp::kSub},
        {"*", BinaryOp::kMul},
        {"/", BinaryOp::kDiv},
        {"//", BinaryOp::kFloorDiv},
        {"%", BinaryOp::kMod},
        {"**", BinaryOp::kPow},
    }};
    static constexpr std::array<size_t, 4> kLevelStart = {0, 2, 2, 6};
    static constexpr std::array<size_t, 4> kLevelEnd = {2, 2, 6, 7};
    if (level == 1 && at_op("~")) {
      guard.deeper(next());
      left = make(node::Concat{std::move(left), parse_binary_level(level + 1)}, start);
      continue;
    }
    bool matched = false;
    for (size_t i = kLevelStart[level]; i < kLevelEnd[level] && !matched; ++i) {
      if (!at_op(kOps[i].first)) continue;
      guard.deeper(next());
      left = make(node::Arithmetic{kOps[i].second, std::move(left), parse_binary_level(level + 1)},
                  start);
      matched = true;
    }
    if (!matched) return left;
  }
}

ExprPtr Parser::parse_unary(bool with_filter) {
  const Token start = peek();
  NestingGuard guard(*this);
  ExprPtr node;
  if (at_op("-")) {
    guard.deeper(next());
    node = make(node::Negate{parse_unary(false)}, start);
  } else if (at_op("+")) {
    guard.deeper(next());
    node = make(node::Positive{parse_unary(false)}, start);
  } else {
    node = parse_primary();
  }
  return parse_trailers(std::move(node), with_filter);
}

ExprPtr Parser::parse_primary() {
  const Token token = next();
  switch (token.type) {
    case TokenType::kName:
      if (token.value == "true" || token.value == "True") return make(node::Literal{true}, token);
      if (token.value == "false" || token.value == "False") {
        return make(node::Literal{false}, token);
      }
      if (token.value == "none" || token.value == "None") {
        return make(node::Literal{Value::none()}, token);
      }
      note_name(token.value);
      return make(node::Name{token.value}, token);
    case TokenType::kString: {
      std::string text = token.value;
      while (peek().type == TokenType::kString) text += next().value;
      return make(node::Literal{Value::string(text)}, token);
    }
    case TokenType::kInteger:
      return make(node::Literal{Value(token.integer)}, token);
    case TokenType::kFloat:
      return make(node::Literal{Value(token.number)}, token);
    case TokenType::kOperator:
      if (token.value == "(") {
        ExprPtr inner = parse_tuple(true, "", true);
        expect_op(")");
        return inner;
      }
      if (token.value == "[") return parse_collection("]");
      if (token.value == "{") return parse_collection("}");
      break;
    default:
      break;
  }
  fail_at(token, unexpected(token));
}

// After "[" or "{": a list or a dict literal; a trailing comma is allowed.
ExprPtr Parser::parse_collection(std::string_view close) {
  const Token start = tokens_[pos_ - 1];
  node::ListLiteral list;
  node::DictLiteral dict;
  while (!at_op(close)) {
    if (!list.items.empty() || !dict.items.empty()) {
      expect_op(",");
      if (at_op(close)) break;
    }
    ExprPtr item = parse_expression();
    if (close == "}") {
      expect_op(":");
      dict.items.emplace_back(std::move(item), parse_expression());
    } else {
      list.items.push_back(std::move(item));
    }
  }
  expect_op(close);
  if (close == "}") return make(std::move(dict), start);
  return make(std::move(list), start);
}

// Postfix access and calls (. [] ()); with filters, then filters, tests and calls
// (| is ()), as Jinja2's parse_postfix followed by parse_filter_expr.
ExprPtr Parser::parse_trailers(ExprPtr node, bool with_filters) {
  NestingGuard guard(*this);
  bool filtered = false;  // after a filter or test, . and [] end the expression
  while (true) {
    const Token start = peek();
    if (!filtered && (at_op(".") || at_op("["))) {
      guard.deeper(start);
      node = parse_subscript(std::move(node));
    } else if (at_op("(")) {
      guard.deeper(start);
      node = make(node::Call{std::move(node), parse_call_args()}, start);
    } else if (with_filters && at_op("|")) {
      guard.deeper(next());
      node = make(node::Filter{std::move(node), parse_filter_call()}, start);
      filtered = true;
    } else if (with_filters && at_name("is")) {
      guard.deeper(start);
      node = parse_test(std::move(node));
      filtered = true;
    } else {
      return node;
    }
  }
}

ExprPtr Parser::parse_subscript(ExprPtr node) {
  const Token token = next();
  if (token.value == ".") {
    const Token attr = next();
    if (attr.type == TokenType::kName)
      return make(node::GetAttr{std::move(node), attr.value}, token);
    if (attr.type != TokenType::kInteger) fail_at(attr, "expected name or number");
    return make(node::GetItem{std::move(node), make(node::Literal{Value(attr.integer)}, attr)},
                token);
  }
  std::vector<ExprPtr> keys;
  while (!at_op("]")) {
    if (!keys.empty()) expect_op(",");
    keys.push_back(parse_slice_part());
  }
  expect_op("]");
  if (keys.empty()) fail_at(token, "expected a subscript");
  ExprPtr key = keys.size() == 1 ? std::move(keys.front())
                                 : make(node::ListLiteral{std::move(keys), true}, token);
  return make(node::GetItem{std::move(node), std::move(key)}, token);
}

// One subscript: an expression or a slice start:stop:step with any part left out.
ExprPtr Parser::parse_slice_part() {
  const Token start = peek();
  ExprPtr first;
  if (!at_op(":")) {
    first = parse_expression();
    if (!at_op(":")) return first;
  }
  next();
  node::Slice slice;
  slice.start = std::move(first);
  if (!at_op(":") && !at_op("]") && !at_op(",")) slice.stop = parse_expression();
  if (skip_op(":") && !at_op("]") && !at_op(",")) slice.step = parse_expression();
  return make(std::move(slice), start);
}

ExprPtr Parser::parse_test(ExprPtr node) {
  const Token start = next();  // is
  node::Test test;
  test.negated = skip_name("not");
  const Token name_token = peek();
  test.name = expect_name();
  if (at_op(".")) fail_at(peek(), "dotted test names are not supported");
  check_callable_name(false, test.name, name_token);
  const Token& t = peek();
  const bool starts_arg = t.type == TokenType::kName || t.type == TokenType::kString ||
                          t.type == TokenType::kInteger || t.type == TokenType::kFloat ||
                          at_op("[") || at_op("{");
  if (at_op("(")) {
    test.args = parse_call_args();
  } else if (starts_arg && !at_name("else") && !at_name("or") && !at_name("and")) {
    if (at_name("is")) fail_at(t, "You cannot chain multiple tests with is");
    test.args.positional.push_back(parse_trailers(parse_primary(), false));
  }
  test.operand = std::move(node);
  return make(std::move(test), start);
}

ArgExprs Parser::parse_call_args() {
  expect_op("(");
  ArgExprs args;
  bool first = true;
  while (!at_op(")")) {
    if (!first) {
      expect_op(",");
      if (at_op(")")) break;
    }
    first = false;
    if (at_op("*") || at_op("**")) fail_at(peek(), "unsupported: *args and **kwargs in calls");
    if (peek().type == TokenType::kName && at_op("=", 1)) {
      const Token& name = peek();
      for (const auto& [given, value] : args.named)
        if (given == name.value) fail_at(name, "keyword argument repeated: " + name.value);
      std::string key = next().value;
      next();
      args.named.emplace_back(std::move(key), parse_expression());
    } else {
      if (!args.named.empty()) fail_at(peek(), "invalid syntax for function call expression");
      args.positional.push_back(parse_expression());
    }
  }
  expect_op(")");
  return args;
}

// After "|": name(args).
FilterCall Parser::parse_filter_call() {
  FilterCall call;
  const Token name_token = peek();
  call.name = expect_name();
  call.line = name_token.line;
  call.column = name_token.column;
  if (at_op(".")) fail_at(peek(), "dotted filter names are not supported");
  check_callable_name(true, call.name, name_token);
  if (at_op("(")) call.args = parse_call_args();
  return call;
}

void Parser::check_callable_name(bool filter, const std::string& name, const Token& at) {
  const bool known = filter ? find_filter(name) != nullptr : find_test(name) != nullptr;
  // A Jinja2 filter tandem lacks fails the template at load, naming it, rather than on
  // the first request that reaches it.
  if (known && filter && !filter_supported(name)) {
    fail_at(at, "unsupported by tandem's Jinja interpreter: the '" + name + "' filter");
  }
  if (known) return;
  unknown_names_.push_back(
      {std::string("No ") + (filter ? "filter" : "test") + " named '" + name + "'.", at.line,
       at.column, condition_depth_ > 0});
}

void Parser::note_name(const std::string& name) {
  if (name == "loop") {
    for (node::For* loop : open_loops_) loop->uses_loop = true;
  }
  if (open_macros_.empty()) return;
  if (name == "varargs") open_macros_.back()->uses_varargs = true;
  if (name == "kwargs") open_macros_.back()->uses_kwargs = true;
}

}  // namespace tandem::jinja
