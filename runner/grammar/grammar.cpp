#include "runner/grammar/grammar.h"

#include "runner/grammar/determinize.h"
#include "runner/grammar/nfa.h"

namespace tandem::grammar {

std::shared_ptr<const Grammar> GrammarBuilder::build(RuleId root, const BuildLimits& limits) const {
  const InlinePlan plan = plan_inlining(*this, root);
  const Nfa nfa = build_nfa(*this, plan, limits);
  Automaton automaton = determinize(nfa, limits);
  automaton.root = 0;  // the plan keeps the root first
  automaton = trim(automaton);
  check_left_recursion(automaton);
  return std::make_shared<const Grammar>(std::move(automaton));
}

std::string Grammar::summary() const {
  std::string names;
  for (const std::string& name : automaton_.rule_names) names += (names.empty() ? "" : ", ") + name;
  return std::to_string(num_states()) + " states, " + std::to_string(num_rules()) + " rules (" +
         names + "), " + std::to_string(automaton_.num_classes) + " byte classes";
}

}  // namespace tandem::grammar
