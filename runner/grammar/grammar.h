// The grammar engine's front door: an immutable compiled Grammar, from GBNF text, from a
// JSON Schema, or from a GrammarBuilder (builder.h); then, per vocabulary, a Matcher
// (matcher.h) that yields the allowed next tokens as a bitmask.
//
//   auto grammar = grammar::compile_json_schema(schema_text);     // or parse_gbnf(text)
//   auto vocab = grammar::Vocabulary::from_tokenizer(tokenizer);   // once per model
//   grammar::Matcher matcher(std::make_shared<grammar::CompiledGrammar>(grammar, vocab));
//   matcher.fill_mask(mask);  ... sample a token allowed by mask ...  matcher.advance(token);
//
// A Grammar is immutable and safe to share between threads. Every error is a GrammarError
// (builder.h) with a one-line message.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "runner/grammar/automaton.h"
#include "runner/grammar/builder.h"
#include "runner/grammar/json_schema.h"  // compile_json_schema, json_object_grammar

namespace tandem::grammar {

class Grammar {
 public:
  explicit Grammar(Automaton automaton) : automaton_(std::move(automaton)) {}

  const Automaton& automaton() const { return automaton_; }
  int32_t num_states() const { return automaton_.num_states(); }
  int32_t num_rules() const { return static_cast<int32_t>(automaton_.rule_start.size()); }
  // "N states, R rules (names), C byte classes": for logs and debugging.
  std::string summary() const;

 private:
  Automaton automaton_;
};

// llama.cpp's GBNF, as llama-server's `grammar` field takes it: `name ::= alternatives`
// rules (names of letters, digits, '-' and '_'), "literals" and [classes] with llama.cpp's
// escapes (\n \r \t \\ \" \[ \] \- \xHH \uHHHH \UHHHHHHHH), `.`, ( groups ), `|`, the
// postfix operators * + ? {m} {m,} {m,n}, and # comments. A newline ends a rule except
// inside a group or after `|`. The rule `root` is the start. Token references (<...>) are
// not supported. Unlike llama.cpp, defining a rule twice is an error. Errors name the line
// and column: "gbnf: line 3, column 9: expected '::='".
std::shared_ptr<const Grammar> parse_gbnf(std::string_view text, const BuildLimits& limits = {});

}  // namespace tandem::grammar
