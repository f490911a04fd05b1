// The grammar representation: a context-free grammar over bytes, one expression per rule.
// Expressions are sequences, choices, bounded or open repetitions, byte ranges, literals,
// sets of Unicode code points (matched as their UTF-8 encodings; surrogates and overlong
// forms never match) and references to rules. Everything that makes a grammar (the GBNF
// parser, the JSON Schema compiler, and later the tool-calling formats) builds one of these,
// then calls build() for the immutable automaton the matcher runs on (grammar.h).
//
// Expressions form a DAG: an ExprId may be used in several places. That is how the JSON
// Schema compiler keeps optional object properties linear in size (see nfa_builder.cpp).
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace tandem::grammar {

// Every error of the grammar engine: a GBNF syntax error (with its line and column), an
// unsupported JSON Schema keyword (named), a grammar too large or left-recursive. The
// message is one line, fit for an API error: control characters that came from the input
// (a key with a newline in it) are written as escapes.
class GrammarError : public std::runtime_error {
 public:
  explicit GrammarError(const std::string& message) : std::runtime_error(one_line(message)) {}

 private:
  static std::string one_line(const std::string& message) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    for (const char c : message) {
      const auto byte = static_cast<unsigned char>(c);
      if (byte >= 0x20 && byte != 0x7f) {
        out += c;
      } else {
        out += "\\x";
        out += kHex[byte >> 4];
        out += kHex[byte & 15];
      }
    }
    return out;
  }
};

class Grammar;

using ExprId = int32_t;
using RuleId = int32_t;

struct CodepointRange {
  char32_t first;
  char32_t last;  // inclusive
};

enum class ExprKind : uint8_t {
  kEmpty,       // the empty string
  kNothing,     // matches no string at all (an unsatisfiable schema, an empty class)
  kLiteral,     // exactly `text`'s bytes
  kBytes,       // one byte in [lo, hi]
  kCodepoints,  // one code point in `ranges`, UTF-8 encoded
  kSequence,    // `items` one after the other
  kChoice,      // any one of `items`
  kRepeat,      // items[0], between min and max times (max == kUnbounded: no limit)
  kRule,        // the rule `rule`
};

struct Expr {
  ExprKind kind = ExprKind::kEmpty;
  uint8_t lo = 0, hi = 0;
  uint32_t min = 0, max = 0;
  RuleId rule = -1;
  std::string text{};
  std::vector<ExprId> items{};
  std::vector<CodepointRange> ranges{};  // sorted, disjoint, non-adjacent, no surrogates
};

// Limits that keep a hostile grammar from exhausting memory; build() throws GrammarError
// naming the one exceeded.
struct BuildLimits {
  size_t max_nfa_states = 1'000'000;
  size_t max_states = 250'000;  // automaton (DFA) states over all rules
  // Steps of the subset construction (NFA states visited): seconds of work, not minutes (a
  // 70-byte regex that reaches it took 2.8 s to refuse on a 2-vCPU Zen 4; compiles run on
  // their own threads, so requests that compile nothing never wait on one). A grammar whose
  // determinization blows up is refused rather than compiled for minutes.
  size_t max_work = 200'000'000;
};

class GrammarBuilder {
 public:
  static constexpr uint32_t kUnbounded = std::numeric_limits<uint32_t>::max();

  // Declares a rule (or finds the one with that name) so that it can be referenced before
  // it is defined; define() gives it its body.
  RuleId rule(std::string_view name);
  std::optional<RuleId> find_rule(std::string_view name) const;
  void define(RuleId rule, ExprId body);
  bool defined(RuleId rule) const;
  const std::string& rule_name(RuleId rule) const;
  size_t num_rules() const { return rules_.size(); }
  ExprId body(RuleId rule) const;

  ExprId empty();
  ExprId nothing();
  ExprId literal(std::string_view bytes);
  ExprId byte_range(uint8_t lo, uint8_t hi);
  // One code point in `ranges` (any order, may overlap; surrogates are dropped).
  ExprId codepoints(std::vector<CodepointRange> ranges);
  ExprId any_codepoint();
  ExprId sequence(std::vector<ExprId> items);
  ExprId choice(std::vector<ExprId> items);
  ExprId repeat(ExprId item, uint32_t min, uint32_t max);
  ExprId optional(ExprId item) { return repeat(item, 0, 1); }
  ExprId star(ExprId item) { return repeat(item, 0, kUnbounded); }
  ExprId plus(ExprId item) { return repeat(item, 1, kUnbounded); }
  ExprId ref(RuleId rule);

  const Expr& expr(ExprId id) const { return exprs_[static_cast<size_t>(id)]; }
  size_t num_exprs() const { return exprs_.size(); }

  // Compiles the rules reachable from `root` into an automaton. Throws GrammarError when a
  // reachable rule is undefined, the grammar matches no string, a rule is left-recursive
  // (it can reach itself without consuming a byte), or a limit is exceeded.
  std::shared_ptr<const Grammar> build(RuleId root, const BuildLimits& limits = {}) const;

  // Normalizes code point ranges: sorted, merged, surrogates (U+D800..U+DFFF) removed,
  // clipped to U+10FFFF.
  static std::vector<CodepointRange> normalize(std::vector<CodepointRange> ranges);
  // Every Unicode scalar value not in `ranges` (which must be normalized).
  static std::vector<CodepointRange> complement(const std::vector<CodepointRange>& ranges);

 private:
  ExprId add(Expr expr);

  std::vector<Expr> exprs_;
  std::vector<std::string> rule_names_;
  std::vector<ExprId> rules_;  // body per rule; -1 while undefined
  std::unordered_map<std::string, RuleId> rule_ids_;
};

}  // namespace tandem::grammar
