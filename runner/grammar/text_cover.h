// How much plain text (plain_text.h) an automaton state can read without leaving its rule.
//   cover: the largest n such that every plain text of at most n characters (the last one
//          possibly cut short) can be read. A JSON string's free content state reads any
//          amount (plain_text::kUnlimited); with maxLength 24, the state after 20
//          characters reads 4.
//   exact: moreover no longer plain text can be read, and reading plain text never passes
//          a state where the rule may end or call another: the state's behaviour on plain
//          text is "at most `cover` characters", nothing else. The mask-cache walk then
//          decides every plain token at once (token_walk.cpp).
#pragma once

#include <cstdint>

#include "runner/grammar/automaton.h"

namespace tandem::grammar {

struct TextReach {
  uint8_t cover;
  bool exact;
};

// `cap` bounds the search: a cover of `cap` means "at least cap" (the walk never needs more
// than the longest token's character count). Cost: a breadth-first search over (decoder
// state, automaton state) pairs up to `cap` characters deep.
TextReach text_reach(const Automaton& automaton, int32_t state, uint8_t cap);

}  // namespace tandem::grammar
