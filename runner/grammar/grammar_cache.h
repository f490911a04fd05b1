// Compiled grammars for one vocabulary, cached by their source text, so that requests
// with the same schema share one compilation and one mask cache (compiling a schema and
// warming its masks cost far more than a lookup). Bounded twice: at most `capacity`
// entries, and at most `budget_bytes` held in all (keys, automata and the masks cached so
// far, measured at each insertion), since one large grammar's transition table and masks
// may reach 150 MB and 64 such would exhaust a machine. Least recently used entries go
// first; the entry just made always stays (its request uses it). The masks the grammars it
// made keep, in use or not, stay within a budget of their own (mask_budget.h): the grammars
// running requests hold are not the cache's to drop, so past three quarters of it a lookup
// frees the masks of idle grammars (least recently used first, down to half of it), keeping
// their automata. Thread-safe; one compile per
// text at a time (a second request for it waits), and none on a thread that defers compiles
// (compile_gate.h). Errors are cached too
// (the same text fails the same way for one vocabulary): a refused schema that took a second to
// refuse ("grammar too large") costs a lookup the next time, not another second of a preparation
// thread.
#pragma once

#include <future>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "runner/grammar/compiled_grammar.h"

namespace tandem::grammar {

class GrammarCache {
 public:
  static constexpr size_t kDefaultBudgetBytes = size_t{256} << 20;
  // The masks' budget is budget_bytes, but never below kMinMaskBytes (a budget of 0, "keep
  // only the latest grammar", would otherwise walk every mask at every step), unless
  // mask_budget_bytes (> 0) sets it (tests).
  static constexpr size_t kMinMaskBytes = size_t{32} << 20;
  GrammarCache(std::shared_ptr<const Vocabulary> vocabulary, size_t capacity = 64,
               size_t budget_bytes = kDefaultBudgetBytes, size_t mask_budget_bytes = 0);

  std::shared_ptr<const CompiledGrammar> json_schema(std::string_view schema_text);
  std::shared_ptr<const CompiledGrammar> gbnf(std::string_view text);
  // A whole output that fully matches the regex (compile_regex).
  std::shared_ptr<const CompiledGrammar> regex(std::string_view text);
  std::shared_ptr<const CompiledGrammar> json_object();
  // Tool calls' grammars (json_schema.h's FramedJson), keyed by framed_json_key.
  std::shared_ptr<const CompiledGrammar> framed_json(const FramedJson& framed);

  size_t size() const;
  // Compiles started since construction (each text once while it stays cached).
  size_t compiles() const;
  // What the entries hold now (the masks grow as matchers meet states).
  size_t memory_bytes() const;
  // The masks kept now by every grammar it made, cached or only in use; their budget; and
  // the masks computed for one use because it was full.
  size_t mask_bytes() const { return masks_->used(); }
  size_t mask_budget() const { return masks_->limit(); }
  uint64_t masks_not_kept() const { return masks_->not_kept(); }
  const std::shared_ptr<const Vocabulary>& vocabulary() const { return vocabulary_; }

 private:
  struct Entry {
    std::string key;
    std::shared_ptr<const CompiledGrammar> compiled;  // null: the compile failed
    std::string error;                                // its GrammarError's message
  };
  template <typename Compile>
  std::shared_ptr<const CompiledGrammar> get(std::string key, Compile compile);

  static size_t bytes_of(const Entry& entry);
  size_t held_bytes_locked() const;  // every entry's bytes_of, measured now
  void evict_locked();
  void evict_idle_masks_locked();

  std::shared_ptr<const Vocabulary> vocabulary_;
  size_t capacity_;
  size_t budget_bytes_;
  std::shared_ptr<MaskBudget> masks_;  // what the grammars it made keep of masks
  mutable std::mutex mutex_;
  std::list<Entry> entries_;  // most recently used first
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
  // The texts being compiled now, each with the future its compile completes.
  std::unordered_map<std::string, std::shared_future<void>> compiling_;
  size_t compiles_ = 0;
};

}  // namespace tandem::grammar
