// Expressions -> NFA, built back to front: build(e, k) returns the state that matches e
// and then continues in state k. Building with the continuation known lets a DAG node used
// twice with the same continuation become one piece of automaton (memoized on (e, k)):
// the JSON Schema compiler's optional properties share their tails this way, so an object
// with n optional properties costs O(n), not O(n^2) or O(2^n). States with a single byte
// edge are memoized on (range, target) too, which shares the common suffixes of literals
// and of UTF-8 sequences.

#include <unordered_map>

#include "runner/grammar/nfa.h"
#include "runner/grammar/utf8_sequences.h"

namespace tandem::grammar {

namespace {

constexpr int kMaxDepth = 2000;

class NfaBuilder {
 public:
  NfaBuilder(const GrammarBuilder& b, const InlinePlan& plan, const BuildLimits& limits)
      : b_(b), plan_(plan), limits_(limits) {}

  Nfa build() {
    for (RuleId rule : plan_.kept) {
      const int32_t final = new_state();
      nfa_.final.push_back(final);
      nfa_.entry.push_back(build(b_.body(rule), final, 0));
      nfa_.names.push_back(b_.rule_name(rule));
    }
    return std::move(nfa_);
  }

 private:
  int32_t new_state() {
    if (nfa_.states.size() >= limits_.max_nfa_states)
      throw GrammarError("grammar too large: more than " + std::to_string(limits_.max_nfa_states) +
                         " automaton states before determinization");
    nfa_.states.emplace_back();
    return static_cast<int32_t>(nfa_.states.size() - 1);
  }

  // The state whose only edge reads a byte in [lo, hi] and goes to `target`.
  int32_t edge(uint8_t lo, uint8_t hi, int32_t target) {
    const uint64_t key = (static_cast<uint64_t>(target) << 16) | (uint64_t{lo} << 8) | hi;
    if (const auto it = edges_.find(key); it != edges_.end()) return it->second;
    const int32_t s = new_state();
    nfa_.states[static_cast<size_t>(s)].bytes.push_back({lo, hi, target});
    edges_.emplace(key, s);
    return s;
  }

  int32_t codepoints(const std::vector<CodepointRange>& ranges, int32_t k) {
    const int32_t s = new_state();
    for (const Utf8Sequence& seq : utf8_sequences(ranges)) {
      int32_t cur = k;
      for (int i = seq.length - 1; i >= 1; --i) cur = edge(seq.bytes[i].lo, seq.bytes[i].hi, cur);
      nfa_.states[static_cast<size_t>(s)].bytes.push_back({seq.bytes[0].lo, seq.bytes[0].hi, cur});
    }
    return s;
  }

  int32_t repeat(const Expr& e, int32_t k, int depth) {
    const ExprId item = e.items[0];
    const uint64_t copies = e.max == GrammarBuilder::kUnbounded ? e.min : e.max;
    if (copies > limits_.max_nfa_states)
      throw GrammarError("repetition count " + std::to_string(copies) + " is too large");
    int32_t cur = k;
    if (e.max == GrammarBuilder::kUnbounded) {
      cur = new_state();
      const int32_t body = build(item, cur, depth + 1);
      nfa_.states[static_cast<size_t>(cur)].epsilon.push_back(body);
      nfa_.states[static_cast<size_t>(cur)].epsilon.push_back(k);
    } else {
      // (item (item (...)?)?)?: nested, so that each count has one way to match.
      for (uint32_t j = 0; j < e.max - e.min; ++j) {
        const int32_t s = new_state();
        const int32_t body = build(item, cur, depth + 1);
        nfa_.states[static_cast<size_t>(s)].epsilon.push_back(k);
        nfa_.states[static_cast<size_t>(s)].epsilon.push_back(body);
        cur = s;
      }
    }
    for (uint32_t i = 0; i < e.min; ++i) cur = build(item, cur, depth + 1);
    return cur;
  }

  int32_t build(ExprId id, int32_t k, int depth) {
    if (depth > kMaxDepth) throw GrammarError("grammar nested too deeply");
    const uint64_t key = (static_cast<uint64_t>(id) << 32) | static_cast<uint32_t>(k);
    if (const auto it = memo_.find(key); it != memo_.end()) return it->second;
    const Expr& e = b_.expr(id);
    int32_t s = k;
    switch (e.kind) {
      case ExprKind::kEmpty:
        break;
      case ExprKind::kNothing:
        s = new_state();
        break;
      case ExprKind::kLiteral:
        for (size_t i = e.text.size(); i-- > 0;) {
          const auto byte = static_cast<uint8_t>(e.text[i]);
          s = edge(byte, byte, s);
        }
        break;
      case ExprKind::kBytes:
        s = edge(e.lo, e.hi, k);
        break;
      case ExprKind::kCodepoints:
        s = codepoints(e.ranges, k);
        break;
      case ExprKind::kSequence:
        for (size_t i = e.items.size(); i-- > 0;) s = build(e.items[i], s, depth + 1);
        break;
      case ExprKind::kChoice:
        s = new_state();
        for (ExprId item : e.items) {
          const int32_t t = build(item, k, depth + 1);
          nfa_.states[static_cast<size_t>(s)].epsilon.push_back(t);
        }
        break;
      case ExprKind::kRepeat:
        s = repeat(e, k, depth);
        break;
      case ExprKind::kRule:
        if (const int32_t kept = plan_.index[static_cast<size_t>(e.rule)]; kept >= 0) {
          s = new_state();
          nfa_.states[static_cast<size_t>(s)].calls.push_back({kept, k});
        } else {
          s = build(b_.body(e.rule), k, depth + 1);
        }
        break;
    }
    memo_.emplace(key, s);
    return s;
  }

  const GrammarBuilder& b_;
  const InlinePlan& plan_;
  const BuildLimits& limits_;
  Nfa nfa_;
  std::unordered_map<uint64_t, int32_t> memo_;
  std::unordered_map<uint64_t, int32_t> edges_;
};

}  // namespace

Nfa build_nfa(const GrammarBuilder& builder, const InlinePlan& plan, const BuildLimits& limits) {
  return NfaBuilder(builder, plan, limits).build();
}

}  // namespace tandem::grammar
