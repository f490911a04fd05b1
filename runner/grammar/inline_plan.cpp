// Choosing the rules to keep. A kept rule costs the matcher a stack frame, and tokens that
// cross its end cannot be decided from the mask cache alone (token_walk.h), so as few rules
// as possible are kept: those that break every cycle of references, and rules so large and
// so shared that copying them into each caller would bloat the automaton.

#include <algorithm>
#include <unordered_map>

#include "runner/grammar/nfa.h"

namespace tandem::grammar {

namespace {

// A rule referenced from at least two places and estimated above this many automaton
// states stays a rule rather than being copied into each caller.
constexpr double kInlineLimit = 20000;

// The rules an expression references, once per reference node.
void collect_refs(const GrammarBuilder& b, ExprId root, std::vector<RuleId>& out) {
  std::vector<ExprId> work{root};
  std::vector<char> seen(b.num_exprs(), 0);
  while (!work.empty()) {
    const ExprId id = work.back();
    work.pop_back();
    if (seen[static_cast<size_t>(id)]) continue;
    seen[static_cast<size_t>(id)] = 1;
    const Expr& e = b.expr(id);
    if (e.kind == ExprKind::kRule) out.push_back(e.rule);
    for (ExprId item : e.items) work.push_back(item);
  }
}

// A rough count of the automaton states an expression becomes, with kept rules as calls.
class SizeEstimate {
 public:
  SizeEstimate(const GrammarBuilder& b, const std::vector<double>& rule_size)
      : b_(b), rule_size_(rule_size) {}

  double of(ExprId id) {
    if (const auto it = memo_.find(id); it != memo_.end()) return it->second;
    const Expr& e = b_.expr(id);
    double size = 1;
    switch (e.kind) {
      case ExprKind::kLiteral:
        size = static_cast<double>(e.text.size());
        break;
      case ExprKind::kCodepoints:
        size = 4.0 * static_cast<double>(e.ranges.size());
        break;
      case ExprKind::kSequence:
      case ExprKind::kChoice:
        for (ExprId item : e.items) size += of(item);
        break;
      case ExprKind::kRepeat: {
        const double copies = e.max == GrammarBuilder::kUnbounded ? e.min + 1.0 : e.max;
        size += copies * of(e.items[0]);
        break;
      }
      case ExprKind::kRule:
        size = rule_size_[static_cast<size_t>(e.rule)];
        break;
      default:
        break;
    }
    size = std::min(size, 1e15);
    memo_.emplace(id, size);
    return size;
  }

 private:
  const GrammarBuilder& b_;
  const std::vector<double>& rule_size_;
  std::unordered_map<ExprId, double> memo_;
};

struct Graph {
  std::vector<std::vector<RuleId>> refs;  // per rule, with repeats
  std::vector<int32_t> ref_count;
};

Graph reference_graph(const GrammarBuilder& b, RuleId root) {
  Graph g{std::vector<std::vector<RuleId>>(b.num_rules()), std::vector<int32_t>(b.num_rules(), 0)};
  std::vector<char> reached(b.num_rules(), 0);
  std::vector<RuleId> work{root};
  reached[static_cast<size_t>(root)] = 1;
  while (!work.empty()) {
    const RuleId r = work.back();
    work.pop_back();
    if (!b.defined(r)) throw GrammarError("undefined rule '" + b.rule_name(r) + "'");
    collect_refs(b, b.body(r), g.refs[static_cast<size_t>(r)]);
    for (RuleId callee : g.refs[static_cast<size_t>(r)]) {
      ++g.ref_count[static_cast<size_t>(callee)];
      if (!reached[static_cast<size_t>(callee)]) {
        reached[static_cast<size_t>(callee)] = 1;
        work.push_back(callee);
      }
    }
  }
  return g;
}

// Depth-first search from the root; the target of every back edge is kept, which leaves
// the references into non-kept rules acyclic. Returns the rules in post-order (callees
// before callers).
std::vector<RuleId> break_cycles(const Graph& g, RuleId root, std::vector<char>& kept) {
  enum : char { kNew, kOnStack, kDone };
  std::vector<char> color(g.refs.size(), kNew);
  std::vector<RuleId> post;
  std::vector<std::pair<RuleId, size_t>> stack{{root, 0}};
  color[static_cast<size_t>(root)] = kOnStack;
  while (!stack.empty()) {
    auto& [rule, next] = stack.back();
    const auto& refs = g.refs[static_cast<size_t>(rule)];
    if (next == refs.size()) {
      color[static_cast<size_t>(rule)] = kDone;
      post.push_back(rule);
      stack.pop_back();
      continue;
    }
    const RuleId callee = refs[next++];
    if (color[static_cast<size_t>(callee)] == kOnStack) {
      kept[static_cast<size_t>(callee)] = 1;
    } else if (color[static_cast<size_t>(callee)] == kNew) {
      color[static_cast<size_t>(callee)] = kOnStack;
      stack.emplace_back(callee, 0);
    }
  }
  return post;
}

}  // namespace

InlinePlan plan_inlining(const GrammarBuilder& b, RuleId root) {
  const Graph g = reference_graph(b, root);
  std::vector<char> kept(b.num_rules(), 0);
  kept[static_cast<size_t>(root)] = 1;
  const std::vector<RuleId> post = break_cycles(g, root, kept);

  std::vector<double> rule_size(b.num_rules(), 1);
  SizeEstimate estimate(b, rule_size);
  for (RuleId r : post) {
    const auto i = static_cast<size_t>(r);
    if (kept[i]) continue;
    rule_size[i] = estimate.of(b.body(r));
    if (g.ref_count[i] >= 2 && rule_size[i] > kInlineLimit) {
      kept[i] = 1;
      rule_size[i] = 1;
    }
  }

  InlinePlan plan{{root}, std::vector<int32_t>(b.num_rules(), -1)};
  plan.index[static_cast<size_t>(root)] = 0;
  for (RuleId r : post) {
    if (kept[static_cast<size_t>(r)] && r != root) {
      plan.index[static_cast<size_t>(r)] = static_cast<int32_t>(plan.kept.size());
      plan.kept.push_back(r);
    }
  }
  return plan;
}

}  // namespace tandem::grammar
