// The last steps of build(): NFA -> per-rule DFAs (determinize.cpp), then trimming states
// that cannot lead to acceptance and checking for left recursion (trim.cpp). Internal to
// runner/grammar/.
#pragma once

#include "runner/grammar/automaton.h"
#include "runner/grammar/nfa.h"

namespace tandem::grammar {

Automaton determinize(const Nfa& nfa, const BuildLimits& limits);

// Drops every state from which no accepting end is reachable (and the edges into them),
// and every state the root cannot reach, renumbering what is left. Throws GrammarError
// when the root matches no string at all.
Automaton trim(const Automaton& a);

// Throws GrammarError naming a rule that can call itself before reading a byte.
void check_left_recursion(const Automaton& a);

}  // namespace tandem::grammar
