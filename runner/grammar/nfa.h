// The middle of build(): the rules a grammar keeps (inline_plan.cpp) and the
// nondeterministic automaton built from their expressions (nfa_builder.cpp), which
// determinize.cpp turns into the Automaton. Internal to runner/grammar/.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runner/grammar/builder.h"

namespace tandem::grammar {

// Rules that stay rules, called through the matcher's stack: the root, one rule on every
// cycle of references (recursion needs a stack), and large rules referenced from several
// places (inlining them would copy them). Every other rule is inlined into its callers.
struct InlinePlan {
  std::vector<RuleId> kept;    // the root first
  std::vector<int32_t> index;  // per builder rule: its position in `kept`, or -1 (inlined)
};

// Throws GrammarError when a rule reachable from `root` is undefined.
InlinePlan plan_inlining(const GrammarBuilder& builder, RuleId root);

struct NfaByteEdge {
  uint8_t lo;
  uint8_t hi;
  int32_t target;
};

struct NfaCall {
  int32_t rule;  // index into InlinePlan::kept
  int32_t target;
};

struct NfaState {
  std::vector<int32_t> epsilon;
  std::vector<NfaByteEdge> bytes;
  std::vector<NfaCall> calls;
};

struct Nfa {
  std::vector<NfaState> states;
  std::vector<int32_t> entry;  // per kept rule
  std::vector<int32_t> final;  // per kept rule: reaching it ends the rule
  std::vector<std::string> names;
};

Nfa build_nfa(const GrammarBuilder& builder, const InlinePlan& plan, const BuildLimits& limits);

}  // namespace tandem::grammar
