#include "runner/grammar/compiled_grammar.h"

namespace tandem::grammar {

namespace {

constexpr uint16_t kUnknownReach = 0xFFFF;

}  // namespace

CompiledGrammar::CompiledGrammar(std::shared_ptr<const Grammar> grammar,
                                 std::shared_ptr<const Vocabulary> vocabulary,
                                 std::shared_ptr<MaskBudget> budget)
    : grammar_(std::move(grammar)),
      vocabulary_(std::move(vocabulary)),
      budget_(std::move(budget)),
      entries_(new std::atomic<const MaskEntry*>[static_cast<size_t>(grammar_->num_states())]),
      text_reach_(new std::atomic<uint16_t>[static_cast<size_t>(grammar_->num_states())]) {
  for (int32_t s = 0; s < grammar_->num_states(); ++s) {
    entries_[static_cast<size_t>(s)].store(nullptr, std::memory_order_relaxed);
    text_reach_[static_cast<size_t>(s)].store(kUnknownReach, std::memory_order_relaxed);
  }
}

TextReach CompiledGrammar::text_reach(int32_t state) const {
  std::atomic<uint16_t>& slot = text_reach_[static_cast<size_t>(state)];
  uint16_t packed = slot.load(std::memory_order_relaxed);
  if (packed == kUnknownReach) {  // two threads may both compute it: the same value
    const TextReach reach =
        grammar::text_reach(grammar_->automaton(), state, vocabulary_->max_token_chars());
    packed = static_cast<uint16_t>(reach.cover | (reach.exact ? 0x100 : 0));
    slot.store(packed, std::memory_order_relaxed);
  }
  return {static_cast<uint8_t>(packed & 0xFF), (packed & 0x100) != 0};
}

CompiledGrammar::~CompiledGrammar() { drop_masks(); }

const MaskEntry& CompiledGrammar::entry(int32_t state, TokenWalker& walker) const {
  std::atomic<const MaskEntry*>& slot = entries_[static_cast<size_t>(state)];
  if (const MaskEntry* cached = slot.load(std::memory_order_acquire)) return *cached;
  MaskEntry walked = walker.walk(*this, state);
  const size_t bytes = walked.memory_bytes();
  if (budget_ && !budget_->take(bytes)) {
    budget_->count_not_kept();
    return walker.hold(std::move(walked));
  }
  auto computed = std::make_unique<const MaskEntry>(std::move(walked));
  const MaskEntry* expected = nullptr;
  if (slot.compare_exchange_strong(expected, computed.get(), std::memory_order_acq_rel))
    return *computed.release();
  if (budget_) budget_->give_back(bytes);  // another thread got there first: its copy stays
  return *expected;
}

void CompiledGrammar::drop_masks() const {
  for (int32_t s = 0; s < grammar_->num_states(); ++s) {
    const MaskEntry* entry =
        entries_[static_cast<size_t>(s)].exchange(nullptr, std::memory_order_acq_rel);
    if (entry && budget_) budget_->give_back(entry->memory_bytes());
    delete entry;
  }
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

size_t CompiledGrammar::memory_bytes() const {
  const auto states = static_cast<size_t>(grammar_->num_states());
  return grammar_->automaton().memory_bytes() +
         states * (sizeof(std::atomic<const MaskEntry*>) + sizeof(std::atomic<uint16_t>)) +
         cache_bytes();
}

}  // namespace tandem::grammar
