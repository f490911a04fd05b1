#include "runner/grammar/compiled_grammar.h"

namespace tandem::grammar {

CompiledGrammar::CompiledGrammar(std::shared_ptr<const Grammar> grammar,
                                 std::shared_ptr<const Vocabulary> vocabulary)
    : grammar_(std::move(grammar)),
      vocabulary_(std::move(vocabulary)),
      entries_(new std::atomic<const MaskEntry*>[static_cast<size_t>(grammar_->num_states())]) {
  for (int32_t s = 0; s < grammar_->num_states(); ++s)
    entries_[static_cast<size_t>(s)].store(nullptr, std::memory_order_relaxed);
}

CompiledGrammar::~CompiledGrammar() {
  for (int32_t s = 0; s < grammar_->num_states(); ++s)
    delete entries_[static_cast<size_t>(s)].load(std::memory_order_relaxed);
}

const MaskEntry& CompiledGrammar::entry(int32_t state, TokenWalker& walker) const {
  std::atomic<const MaskEntry*>& slot = entries_[static_cast<size_t>(state)];
  if (const MaskEntry* cached = slot.load(std::memory_order_acquire)) return *cached;
  auto computed =
      std::make_unique<const MaskEntry>(walker.walk(grammar_->automaton(), *vocabulary_, state));
  const MaskEntry* expected = nullptr;
  if (slot.compare_exchange_strong(expected, computed.get(), std::memory_order_acq_rel))
    return *computed.release();
  return *expected;  // another thread got there first
}

void CompiledGrammar::precompute() const {
  TokenWalker walker;
  const Automaton& a = grammar_->automaton();
  for (int32_t s = 0; s < a.num_states(); ++s)
    if (a.flags[static_cast<size_t>(s)] & Automaton::kReadsBytes) entry(s, walker);
}

size_t CompiledGrammar::cached_states() const {
  size_t n = 0;
  for (int32_t s = 0; s < grammar_->num_states(); ++s)
    n += entries_[static_cast<size_t>(s)].load(std::memory_order_acquire) != nullptr;
  return n;
}

size_t CompiledGrammar::cache_bytes() const {
  size_t bytes = 0;
  for (int32_t s = 0; s < grammar_->num_states(); ++s)
    if (const MaskEntry* e = entries_[static_cast<size_t>(s)].load(std::memory_order_acquire))
      bytes += e->memory_bytes();
  return bytes;
}

}  // namespace tandem::grammar
