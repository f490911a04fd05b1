// A Grammar paired with a Vocabulary: what matchers for that grammar and model share.
// It owns the per-state mask cache (token_walk.h), filled lazily the first time a matcher
// meets a state, or all at once by precompute(), within a MaskBudget where one is given
// (past it a mask is computed for its use and not kept). Thread-safe: any number of
// matchers on any threads may share one (entries are published with atomics; two threads
// meeting a new state at once both compute it and one result is kept).
#pragma once

#include <atomic>
#include <memory>

#include "runner/grammar/grammar.h"
#include "runner/grammar/mask_budget.h"
#include "runner/grammar/text_cover.h"
#include "runner/grammar/token_walk.h"
#include "runner/grammar/vocabulary.h"

namespace tandem::grammar {

class CompiledGrammar {
 public:
  CompiledGrammar(std::shared_ptr<const Grammar> grammar,
                  std::shared_ptr<const Vocabulary> vocabulary,
                  std::shared_ptr<MaskBudget> budget = nullptr);
  ~CompiledGrammar();
  CompiledGrammar(const CompiledGrammar&) = delete;
  CompiledGrammar& operator=(const CompiledGrammar&) = delete;

  const std::shared_ptr<const Grammar>& grammar() const { return grammar_; }
  const Vocabulary& vocabulary() const { return *vocabulary_; }

  // The mask entry of `state` (a state that reads bytes), computed with `walker` on first use
  // (valid until the grammar goes, or, where the budget had no room to keep it, until the
  // walker's next entry).
  const MaskEntry& entry(int32_t state, TokenWalker& walker) const;
  // Computes every state's entry now, so that no mask pays for a walk later.
  void precompute() const;
  // Frees every kept mask (they are computed again on use). Only for a grammar no matcher
  // holds: an entry() reference would dangle (GrammarCache calls it on idle entries).
  void drop_masks() const;
  // text_reach() of `state` (text_cover.h), searched up to the vocabulary's longest token;
  // computed on first use.
  TextReach text_reach(int32_t state) const;

  size_t cached_states() const;
  size_t cache_bytes() const;
  // Everything it holds: the automaton's tables, the per-state slots and the masks cached
  // so far (which grow as matchers meet states).
  size_t memory_bytes() const;

 private:
  std::shared_ptr<const Grammar> grammar_;
  std::shared_ptr<const Vocabulary> vocabulary_;
  std::shared_ptr<MaskBudget> budget_;  // null: masks kept without bound
  std::unique_ptr<std::atomic<const MaskEntry*>[]> entries_;
  std::unique_ptr<std::atomic<uint16_t>[]> text_reach_;  // cover | exact << 8; or unknown
};

}  // namespace tandem::grammar
