// The GBNF parser: llama.cpp's syntax, what each construct matches (checked through the
// byte-level Recognizer on whole strings and prefixes), and errors naming line and column.

#include <gtest/gtest.h>

#include "runner/grammar/grammar.h"
#include "runner/grammar/recognizer.h"

namespace tandem::grammar::TANDEM_UNITY_ID {
namespace {

bool matches(const std::shared_ptr<const Grammar>& g, std::string_view text) {
  Recognizer r(g);
  return r.feed(text) && r.accepts();
}

bool viable(const std::shared_ptr<const Grammar>& g, std::string_view text) {
  return Recognizer(g).feed(text);
}

std::string error_of(std::string_view text) {
  try {
    parse_gbnf(text);
  } catch (const GrammarError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Gbnf, LiteralsSequencesAndAlternatives) {
  const auto g = parse_gbnf(R"gbnf(root ::= "yes" | "no" | "ma" "ybe")gbnf");
  EXPECT_TRUE(matches(g, "yes"));
  EXPECT_TRUE(matches(g, "no"));
  EXPECT_TRUE(matches(g, "maybe"));
  EXPECT_FALSE(matches(g, "ye"));
  EXPECT_TRUE(viable(g, "ye"));
  EXPECT_FALSE(viable(g, "yess"));
  EXPECT_FALSE(matches(g, ""));
}

TEST(Gbnf, RepetitionOperatorsAndBounds) {
  const auto g = parse_gbnf("root ::= \"a\"* \"b\"+ \"c\"? \"d\"{2} \"e\"{1,3} \"f\"{2,}\n");
  EXPECT_TRUE(matches(g, "bddeff"));
  EXPECT_TRUE(matches(g, "aaabbcddeeefff"));
  EXPECT_FALSE(matches(g, "ddeff"));      // b+ needs one
  EXPECT_FALSE(matches(g, "bdeff"));      // d{2}
  EXPECT_FALSE(matches(g, "bddeeeeff"));  // e{1,3}
  EXPECT_FALSE(matches(g, "bddef"));      // f{2,}
  EXPECT_TRUE(matches(g, "bddeffffffff"));
}

TEST(Gbnf, CharacterClassesRangesNegationAndAny) {
  const auto g = parse_gbnf(R"gbnf(root ::= [a-cx] [^0-9] . [\-\]] )gbnf");
  EXPECT_TRUE(matches(g, "a!z-"));
  EXPECT_TRUE(matches(g, "x\xC3\xA9\xF0\x9F\xA6\x99]"));  // é and 🦙 are one character each
  EXPECT_FALSE(matches(g, "d!z-"));
  EXPECT_FALSE(matches(g, "a5z-"));
  EXPECT_FALSE(matches(g, "a!z+"));
  // Invalid UTF-8 never matches a class or `.`, not even as a prefix.
  EXPECT_FALSE(viable(g, "a\xC3\x28"));
  EXPECT_FALSE(viable(g, "a\xED\xA0\x80"));  // an encoded surrogate
  EXPECT_FALSE(viable(g, "a\xC0\xAF"));      // an overlong '/'
  EXPECT_TRUE(viable(g, "a\xE6\x97"));       // a partial character is a viable prefix
}

TEST(Gbnf, EscapesInLiteralsAndClasses) {
  const auto g = parse_gbnf(R"gbnf(root ::= "\x41\u00e9\U0001F999\n\t\"\\" [\x00-\x1f])gbnf");
  EXPECT_TRUE(matches(g, "A\xC3\xA9\xF0\x9F\xA6\x99\n\t\"\\\x01"));
}

TEST(Gbnf, RulesReferenceEachOtherAndRecurse) {
  const auto g = parse_gbnf(R"gbnf(
    # balanced parentheses around a number
    root  ::= paren
    paren ::= "(" paren ")" | num
    num   ::= [0-9]+
  )gbnf");
  EXPECT_TRUE(matches(g, "((42))"));
  EXPECT_TRUE(matches(g, "7"));
  EXPECT_FALSE(matches(g, "((42)"));
  EXPECT_TRUE(viable(g, "((((((((((1"));
  EXPECT_FALSE(viable(g, "(()"));
}

TEST(Gbnf, NewlinesEndRulesExceptInGroupsAndAfterBar) {
  const auto g = parse_gbnf("root ::= (\n  \"a\"\n  \"b\"\n) |\n  \"c\"\nother ::= \"x\"\n");
  EXPECT_TRUE(matches(g, "ab"));
  EXPECT_TRUE(matches(g, "c"));
  EXPECT_FALSE(matches(g, "x"));
}

TEST(Gbnf, NullableRepetitionsAndEmptyAlternativesTerminate) {
  const auto g = parse_gbnf("root ::= (\"a\"? | )* \"b\" (x)*\nx ::= \"c\"? \n");
  EXPECT_TRUE(matches(g, "b"));
  EXPECT_TRUE(matches(g, "aaab"));
  EXPECT_TRUE(matches(g, "bccc"));
}

TEST(Gbnf, JsonGrammarFromLlamaCpp) {
  const auto g = parse_gbnf(R"gbnf(
root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws
object ::= "{" ws ( string ":" ws value ("," ws string ":" ws value)* )? "}" ws
array  ::= "[" ws ( value ("," ws value)* )? "]" ws
string ::= "\"" ( [^"\\\x7F\x00-\x1F] | "\\" (["\\bfnrt] | "u" [0-9a-fA-F]{4}) )* "\"" ws
number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws
ws ::= | " " | "\n" [ \t]{0,20}
)gbnf");
  EXPECT_TRUE(matches(g, R"({"a": [1, 2.5, {"b": null}], "c": "d\n\u00e9"})"));
  EXPECT_FALSE(matches(g, R"({"a": [1, 2.5, {"b": null}], "c": "d\n\u00e9"})"
                          "}"));
  EXPECT_TRUE(viable(g, R"({"a": [[[[[[)"));
}

TEST(Gbnf, ErrorsNameLineAndColumn) {
  EXPECT_EQ(error_of("root ::= \"a\"\nfoo = \"b\"\n"), "gbnf: line 2, column 5: expected '::='");
  EXPECT_EQ(error_of("root ::= \"abc"), "gbnf: line 1, column 14: unterminated string literal");
  EXPECT_EQ(error_of("root ::= [a-"), "gbnf: line 1, column 13: unterminated character class");
  EXPECT_EQ(error_of("root ::= x\n"), "gbnf: line 1, column 10: undefined rule 'x'");
  EXPECT_EQ(error_of("a ::= \"x\"\n"), "gbnf: the grammar has no 'root' rule");
  EXPECT_EQ(error_of("root ::= * \"a\""), "gbnf: line 1, column 10: '*' must follow an item");
  EXPECT_EQ(error_of("root ::= \"a\"{3,2}"),
            "gbnf: line 1, column 17: repetition minimum above its maximum");
  EXPECT_EQ(error_of("root ::= \"\\q\""), "gbnf: line 1, column 11: unknown escape \\'q'");
  EXPECT_EQ(error_of("root ::= \"a\"\nroot ::= \"b\""),
            "gbnf: line 2, column 1: rule 'root' is defined twice");
  EXPECT_EQ(error_of("root ::= <think> \"a\""),
            "gbnf: line 1, column 10: token references (<...>, !<...>) are not supported");
  EXPECT_EQ(error_of("root ::= (\"a\""), "gbnf: line 1, column 14: expected ')'");
  EXPECT_EQ(error_of("root ::= \"a\" )"),
            "gbnf: line 1, column 14: expected a newline or the end, found ')'");
  EXPECT_EQ(error_of("root ::= \"a\"{99999}"),
            "gbnf: line 1, column 14: repetition count above 10000");
}

TEST(Gbnf, GrammarsThatCannotWorkAreRefused) {
  EXPECT_EQ(error_of("root ::= root \"a\" | \"b\""),
            "gbnf: left recursion: root -> root (a rule reaches itself before reading a "
            "character)");
  EXPECT_EQ(error_of("root ::= x\nx ::= \"a\" x\n"), "gbnf: the grammar matches no string");
  EXPECT_EQ(error_of("root ::= [^\\x00-\\U0010FFFF]"), "gbnf: the grammar matches no string");
  EXPECT_NE(error_of("root ::= a\na ::= b \"x\"\nb ::= \"\" | a\n").find("left recursion"),
            std::string::npos);
}

TEST(Gbnf, GrammarsBeyondTheBuildLimitsAreRefused) {
  // (a|b)* a (a|b){20}: a deterministic automaton must remember the last 21 characters.
  const char* exponential = "root ::= [ab]* \"a\" [ab]{20}";
  const auto error_with = [&](const char* text, BuildLimits limits) {
    try {
      parse_gbnf(text, limits);
    } catch (const GrammarError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_EQ(error_with(exponential, {.max_states = 1000}),
            "gbnf: grammar too large: more than 1000 automaton states");
  EXPECT_EQ(error_with(exponential, {.max_work = 5000}),
            "gbnf: grammar too complex: determinizing it exceeds the work limit");
  EXPECT_EQ(error_with("root ::= [a-z]{500} [0-9]{500}", {.max_nfa_states = 600}),
            "gbnf: grammar too large: more than 600 automaton states before determinization");
  EXPECT_EQ(error_with("root ::= [ab]* \"a\" [ab]{3}", {}), "(no error)");
}

TEST(Gbnf, UnproductiveAlternativesArePrunedNotFatal) {
  const auto g = parse_gbnf("root ::= \"a\" | x\nx ::= \"b\" x\n");
  EXPECT_TRUE(matches(g, "a"));
  EXPECT_FALSE(viable(g, "b"));  // "b..." can never be completed, so it is no prefix
}

}  // namespace
}  // namespace tandem::grammar::TANDEM_UNITY_ID
