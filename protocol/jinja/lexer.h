// The lexer: template source to tokens, with Jinja2's whitespace rules as transformers
// configures them: trim_blocks (the first newline after a block or comment tag is dropped),
// lstrip_blocks (spaces and tabs before a block or comment tag that starts its line are
// dropped), "-" on a tag strips all whitespace on that side, "+" on a block tag keeps it,
// line endings are read as "\n" and one trailing newline of the source is dropped.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tandem::jinja {

enum class TokenType {
  kData,           // template text, already whitespace-controlled
  kVariableBegin,  // {{
  kVariableEnd,    // }}
  kBlockBegin,     // {%
  kBlockEnd,       // %}
  kName,
  kString,  // value: the unescaped bytes
  kInteger,
  kFloat,
  kOperator,  // value: the operator's spelling
  kEnd,       // end of the source
};

struct Token {
  TokenType type = TokenType::kEnd;
  std::string value;
  int line = 0;
  int column = 0;
  int64_t integer = 0;
  double number = 0.0;
};

// Throws Error (kSyntax) naming the line and column of what it cannot read.
std::vector<Token> tokenize(std::string_view source);

}  // namespace tandem::jinja
