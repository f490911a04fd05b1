// The parser: tokens to a syntax tree, following Jinja2's grammar and precedence
// (parser.py): or < and < not < comparisons < + - < ~ < * / // % < ** < unary - <
// postfix (. [] ()) < filters and tests. Statements: if/elif/else, for (with an if
// filter and else), set (plain, namespace attribute, block), macro, filter blocks,
// break/continue (loopcontrols), generation (transformers' AssistantTracker), with,
// print, raw and comments. Anything else is a syntax error naming the tag and line.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/jinja/ast.h"
#include "protocol/jinja/lexer.h"

namespace tandem::jinja {

// Throws Error (kSyntax) with the line and column of the first problem.
Body parse(std::vector<Token> tokens);

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}
  Body parse_template();

 private:
  // --- the token stream
  const Token& peek(size_t ahead = 0) const;
  Token next();
  bool at_op(std::string_view op, size_t ahead = 0) const;
  bool at_name(std::string_view name, size_t ahead = 0) const;
  bool skip_op(std::string_view op);
  bool skip_name(std::string_view name);
  void expect_op(std::string_view op);
  std::string expect_name();
  void expect_block_end();
  [[noreturn]] void fail_at(const Token& token, const std::string& message) const;
  static std::string unexpected(const Token& token);
  template <class Node>
  ExprPtr make(Node node, const Token& at) const;

  // --- statements (parser_stmt.cpp)
  // The body up to a block tag named in end_tags; the stream stops on that name.
  Body parse_body(std::initializer_list<std::string_view> end_tags, std::string_view opener);
  // After "{%": one statement, its block end consumed. Null when it is a tag that only
  // ends something (handled by the caller).
  std::unique_ptr<Stmt> parse_statement();
  Stmt parse_if();
  Stmt parse_for();
  Stmt parse_set();
  Stmt parse_macro();
  Stmt parse_filter_block();
  Stmt parse_scoped(std::string_view tag);
  Target parse_target(bool with_namespace, std::string_view end_name);

  // --- expressions (parser_expr.cpp)
  ExprPtr parse_expression(bool with_condexpr = true);
  ExprPtr parse_tuple(bool with_condexpr, std::string_view end_name = "",
                      bool explicit_parens = false);
  ExprPtr parse_logical(bool is_and);
  ExprPtr parse_not();
  ExprPtr parse_compare();
  ExprPtr parse_binary_level(int level);
  ExprPtr parse_unary(bool with_filter);
  ExprPtr parse_primary();
  ExprPtr parse_collection(std::string_view close);
  ExprPtr parse_trailers(ExprPtr node, bool with_filters);
  ExprPtr parse_subscript(ExprPtr node);
  ExprPtr parse_slice_part();
  ExprPtr parse_test(ExprPtr node);
  ArgExprs parse_call_args();
  FilterCall parse_filter_call();
  void check_callable_name(bool filter, const std::string& name, const Token& at);
  void note_name(const std::string& name);

  std::vector<Token> tokens_;
  size_t pos_ = 0;
  std::vector<node::Macro*> open_macros_;
  std::vector<node::For*> open_loops_;
  // Unknown filters and tests: Jinja2 refuses them at compile time unless they sit in an
  // if statement or a conditional expression (where they fail only when evaluated).
  struct UnknownName {
    std::string message;
    int line;
    int column;
    bool in_condition;
  };
  std::vector<UnknownName> unknown_names_;
  int condition_depth_ = 0;
  int loop_depth_ = 0;  // break and continue are syntax errors outside a loop
  int nesting_ = 0;     // how deep the tree under construction is, at most
  // Bounds the depth of the syntax tree (blocks in blocks, operands of operands), so that
  // parsing, rendering and destroying it recurse at most that deep.
  class NestingGuard {
   public:
    static constexpr int kMaxNesting = 200;
    explicit NestingGuard(Parser& parser) : parser_(parser) {}
    ~NestingGuard() { parser_.nesting_ -= levels_; }
    NestingGuard(const NestingGuard&) = delete;
    NestingGuard& operator=(const NestingGuard&) = delete;
    // One more level: a node wrapped around the one built so far.
    void deeper(const Token& at) {
      ++levels_;
      if (++parser_.nesting_ > kMaxNesting) parser_.fail_at(at, "the template nests too deeply");
    }

   private:
    Parser& parser_;
    int levels_ = 0;
  };
  // Enters a body that Jinja2 compiles in a frame of its own (loop, macro, block set...):
  // it is no longer inside a condition; a macro body is not inside a loop either.
  Body parse_inner_body(std::initializer_list<std::string_view> end_tags, std::string_view opener,
                        bool in_loop, bool in_macro = false);
};

template <class Node>
ExprPtr Parser::make(Node node, const Token& at) const {
  auto expr = std::make_unique<Expr>();
  expr->node = std::move(node);
  expr->line = at.line;
  expr->column = at.column;
  return expr;
}

}  // namespace tandem::jinja
