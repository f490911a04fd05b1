// Statements and the token stream: Jinja2's parser.py, subparse and the parse_<tag>s.
#include "protocol/jinja/error.h"
#include "protocol/jinja/parser.h"

namespace tandem::jinja {

Body parse(std::vector<Token> tokens) { return Parser(std::move(tokens)).parse_template(); }

namespace {

// Jinja2's names for the tokens that end a tag.
std::string describe(const Token& token) {
  if (token.type == TokenType::kVariableEnd) return "end of print statement";
  if (token.type == TokenType::kBlockEnd) return "end of statement block";
  return token.type == TokenType::kEnd ? "end of template" : token.value;
}

}  // namespace

std::string Parser::unexpected(const Token& token) {
  return "unexpected '" + describe(token) + "'";
}

const Token& Parser::peek(size_t ahead) const {
  return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)];
}

Token Parser::next() {
  Token token = peek();
  if (pos_ + 1 < tokens_.size()) ++pos_;
  return token;
}

bool Parser::at_op(std::string_view op, size_t ahead) const {
  const Token& t = peek(ahead);
  return t.type == TokenType::kOperator && t.value == op;
}

bool Parser::at_name(std::string_view name, size_t ahead) const {
  const Token& t = peek(ahead);
  return t.type == TokenType::kName && t.value == name;
}

bool Parser::skip_op(std::string_view op) {
  if (!at_op(op)) return false;
  next();
  return true;
}

bool Parser::skip_name(std::string_view name) {
  if (!at_name(name)) return false;
  next();
  return true;
}

void Parser::expect_op(std::string_view op) {
  if (!skip_op(op)) fail_at(peek(), "expected '" + std::string(op) + "'");
}

std::string Parser::expect_name() {
  if (peek().type != TokenType::kName) fail_at(peek(), "expected a name");
  return next().value;
}

void Parser::expect_block_end() {
  if (peek().type != TokenType::kBlockEnd) fail_at(peek(), "expected the end of the tag, '%}'");
  next();
}

void Parser::fail_at(const Token& token, const std::string& message) const {
  throw Error(ErrorKind::kSyntax, message, token.line, token.column);
}

Body Parser::parse_template() {
  Body body = parse_body({}, "");
  for (const UnknownName& unknown : unknown_names_) {
    if (!unknown.in_condition) {
      throw Error(ErrorKind::kSyntax, unknown.message, unknown.line, unknown.column);
    }
  }
  return body;
}

Body Parser::parse_body(std::initializer_list<std::string_view> end_tags, std::string_view opener) {
  Body body;
  while (true) {
    const Token token = next();
    if (token.type == TokenType::kEnd) {
      if (end_tags.size() == 0) return body;
      std::string wanted;
      for (std::string_view tag : end_tags)
        wanted += (wanted.empty() ? "'" : " or '") + std::string(tag) + "'";
      fail_at(token, "unexpected end of template: the '" + std::string(opener) + "' block needs " +
                         wanted);
    }
    if (token.type == TokenType::kData) {
      auto stmt = std::make_unique<Stmt>(Stmt{node::Text{token.value}, token.line, token.column});
      body.push_back(std::move(stmt));
    } else if (token.type == TokenType::kVariableBegin) {
      ExprPtr expr = parse_tuple(true);
      if (peek().type != TokenType::kVariableEnd) fail_at(peek(), "expected the end of '}}'");
      next();
      body.push_back(
          std::make_unique<Stmt>(Stmt{node::Print{std::move(expr)}, token.line, token.column}));
    } else if (token.type == TokenType::kBlockBegin) {
      for (std::string_view tag : end_tags) {
        if (at_name(tag)) return body;
      }
      body.push_back(parse_statement());
    } else {
      fail_at(token, "unexpected token");
    }
  }
}

std::unique_ptr<Stmt> Parser::parse_statement() {
  const Token token = peek();
  NestingGuard guard(*this);
  guard.deeper(token);
  if (token.type != TokenType::kName) fail_at(token, "expected a tag name");
  const std::string& tag = token.value;
  Stmt stmt;
  if (tag == "if") {
    stmt = parse_if();
  } else if (tag == "for") {
    stmt = parse_for();
  } else if (tag == "set") {
    stmt = parse_set();
  } else if (tag == "macro") {
    stmt = parse_macro();
  } else if (tag == "filter") {
    stmt = parse_filter_block();
  } else if (tag == "generation" || tag == "with") {
    stmt = parse_scoped(tag);
  } else if (tag == "break" || tag == "continue") {
    if (loop_depth_ == 0) fail_at(token, "'" + tag + "' outside loop");
    next();
    if (tag == "break") stmt.node = node::Break{};
    if (tag == "continue") stmt.node = node::Continue{};
  } else if (tag == "print") {
    next();
    stmt.node = node::Print{parse_tuple(true)};
  } else {
    const bool jinja_tag = tag == "call" || tag == "block" || tag == "extends" ||
                           tag == "include" || tag == "import" || tag == "from" ||
                           tag == "autoescape";
    fail_at(token, jinja_tag ? "unsupported: the '" + tag + "' tag"
                             : "Encountered unknown tag '" + tag + "'.");
  }
  expect_block_end();
  stmt.line = token.line;
  stmt.column = token.column;
  return std::make_unique<Stmt>(std::move(stmt));
}

Body Parser::parse_inner_body(std::initializer_list<std::string_view> end_tags,
                              std::string_view opener, bool in_loop, bool in_macro) {
  const int saved_condition = condition_depth_;
  const int saved_loop = loop_depth_;
  condition_depth_ = 0;
  loop_depth_ = in_loop ? loop_depth_ + 1 : (in_macro ? 0 : loop_depth_);
  Body body = parse_body(end_tags, opener);
  condition_depth_ = saved_condition;
  loop_depth_ = saved_loop;
  return body;
}

Stmt Parser::parse_if() {
  const Token start = next();  // if
  ++condition_depth_;
  node::If result;
  while (true) {
    ExprPtr test = parse_tuple(false);
    expect_block_end();
    Body body = parse_body({"elif", "else", "endif"}, "if");
    result.branches.emplace_back(std::move(test), std::move(body));
    const Token tag = next();
    if (tag.value == "elif") continue;
    if (tag.value == "else") {
      expect_block_end();
      result.otherwise = parse_body({"endif"}, "if");
      next();
    }
    break;
  }
  --condition_depth_;
  return Stmt{std::move(result), start.line, start.column};
}

Stmt Parser::parse_for() {
  const Token start = next();  // for
  node::For loop;
  loop.target = parse_target(false, "in");
  if (!skip_name("in")) fail_at(peek(), "expected 'in'");
  loop.iterable = parse_tuple(false, "recursive");
  open_loops_.push_back(&loop);  // moved into the statement only once parsed
  const int saved_depth = condition_depth_;
  condition_depth_ = 0;
  if (skip_name("if")) loop.condition = parse_expression();
  condition_depth_ = saved_depth;
  if (at_name("recursive")) fail_at(peek(), "unsupported: recursive loops");
  expect_block_end();
  loop.body = parse_inner_body({"endfor", "else"}, "for", true);
  if (next().value == "else") {
    expect_block_end();
    loop.otherwise = parse_inner_body({"endfor"}, "for", false);
    next();
  }
  open_loops_.pop_back();
  return Stmt{std::move(loop), start.line, start.column};
}

// A name, names to unpack ("a, b" or "(a, b)"), or with_namespace "ns.attr".
Target Parser::parse_target(bool with_namespace, std::string_view end_name) {
  Target target;
  if (with_namespace && peek().type == TokenType::kName && at_op(".", 1)) {
    target.names.push_back(next().value);
    next();
    target.attr = expect_name();
    return target;
  }
  const bool parens = skip_op("(");
  while (true) {
    const Token& t = peek();
    if (t.type != TokenType::kName) fail_at(t, "expected a name to assign to");
    if (t.value == "true" || t.value == "false" || t.value == "none" || t.value == "True" ||
        t.value == "False" || t.value == "None") {
      fail_at(t, "cannot assign to '" + t.value + "'");
    }
    target.names.push_back(next().value);
    if (!at_op(",")) break;
    next();
    target.unpack = true;
    if (at_op(")") || (!end_name.empty() && at_name(end_name)) || at_op("=")) break;
  }
  if (parens) {
    expect_op(")");
    target.unpack = true;
  }
  return target;
}

Stmt Parser::parse_set() {
  const Token start = next();  // set
  Target target = parse_target(true, "");
  if (skip_op("=")) {
    return Stmt{node::Set{std::move(target), parse_tuple(true)}, start.line, start.column};
  }
  node::SetBlock block;
  block.target = std::move(target);
  while (skip_op("|")) block.filters.push_back(parse_filter_call());
  expect_block_end();
  block.body = parse_inner_body({"endset"}, "set", loop_depth_ > 0);
  next();
  return Stmt{std::move(block), start.line, start.column};
}

Stmt Parser::parse_macro() {
  const Token start = next();  // macro
  node::Macro macro;
  macro.name = expect_name();
  expect_op("(");
  while (!at_op(")")) {
    if (!macro.params.empty()) expect_op(",");
    if (at_op(")")) break;
    std::string param = expect_name();
    ExprPtr default_value;
    if (skip_op("=")) {
      default_value = parse_expression();
    } else if (!macro.params.empty() && macro.params.back().second) {
      fail_at(peek(), "non-default argument follows default argument");
    }
    macro.params.emplace_back(std::move(param), std::move(default_value));
  }
  expect_op(")");
  expect_block_end();
  open_macros_.push_back(&macro);
  macro.body = parse_inner_body({"endmacro"}, "macro", false, true);
  open_macros_.pop_back();
  next();
  return Stmt{std::move(macro), start.line, start.column};
}

Stmt Parser::parse_filter_block() {
  const Token start = next();  // filter
  node::FilterBlock block;
  do {
    block.filters.push_back(parse_filter_call());
  } while (skip_op("|"));
  expect_block_end();
  block.body = parse_inner_body({"endfilter"}, "filter", loop_depth_ > 0);
  next();
  return Stmt{std::move(block), start.line, start.column};
}

// {% generation %} (transformers' AssistantTracker: renders its body) and
// {% with a = 1, b = 2 %}: a body in a scope of its own.
Stmt Parser::parse_scoped(std::string_view tag) {
  const Token start = next();
  node::Scoped scoped;
  while (tag == "with" && peek().type != TokenType::kBlockEnd) {
    if (!scoped.assignments.empty()) expect_op(",");
    std::string name = expect_name();
    expect_op("=");
    scoped.assignments.emplace_back(std::move(name), parse_expression());
  }
  expect_block_end();
  const std::string end_tag = "end" + std::string(tag);
  scoped.body = parse_inner_body({end_tag}, tag, loop_depth_ > 0);
  next();
  return Stmt{std::move(scoped), start.line, start.column};
}

}  // namespace tandem::jinja
