#include "runner/grammar/token_walk.h"

#include "runner/grammar/compiled_grammar.h"
#include "runner/grammar/plain_text.h"

#include <algorithm>
#include <bit>
#include <stdexcept>

namespace tandem::grammar {

size_t MaskEntry::memory_bytes() const {
  return sizeof(*this) + accepted_bits.capacity() * sizeof(uint32_t) +
         accepted_ids.capacity() * sizeof(int32_t) + uncertain_ids.capacity() * sizeof(int32_t) +
         offset_begin.capacity() * sizeof(uint32_t) + offsets.capacity() * sizeof(uint16_t);
}

void MaskEntry::set_accepted(std::span<uint32_t> mask) const {
  if (!accepted_bits.empty()) {
    for (size_t w = 0; w < accepted_bits.size(); ++w) mask[w] |= accepted_bits[w];
    return;
  }
  for (int32_t id : accepted_ids)
    mask[static_cast<size_t>(id) >> 5] |= uint32_t{1} << (static_cast<uint32_t>(id) & 31);
}

void TokenWalker::start(const CompiledGrammar& compiled, int32_t state) {
  const Vocabulary& vocabulary = compiled.vocabulary();
  vocabulary_ = &vocabulary;
  arena_.clear();
  heads_.clear();
  escapes_.clear();
  uncertain_.clear();
  uncertain_begin_.assign(1, 0);
  uncertain_offsets_.clear();
  const size_t depths = vocabulary.max_token_length() + 2;
  simple_.assign(depths, -1);
  simple_[0] = state;
  depth_begin_.assign(depths, 0);
  escape_count_.assign(depths, 0);
  path_text_.assign(depths, plain_text::kBoundary);
  path_chars_.assign(depths, 0);
  const TextReach reach = compiled.text_reach(state);
  start_cover_ = reach.cover;
  start_exact_ = reach.exact && reach.cover > 0;
  // A state of a root nobody calls always sits on the base: ending its rule part-way
  // through a token ends the text, so no token is uncertain there.
  const Automaton& a = compiled.grammar()->automaton();
  record_uncertain_ = a.root_is_called || a.state_rule[static_cast<size_t>(state)] != a.root;
  const auto plain = vocabulary.plain_tokens(start_cover_);
  if (start_cover_ > 0 && !plain.empty())
    accepted_.assign(plain.begin(), plain.end());
  else
    accepted_.assign(vocabulary.mask_words(), 0);
}

// Depth-first over the trie in pre-order; a rejected node's subtree is skipped in one jump.
MaskEntry TokenWalker::walk(const CompiledGrammar& compiled, int32_t state) {
  const Automaton& automaton = compiled.grammar()->automaton();
  const Vocabulary& vocabulary = compiled.vocabulary();
  Pda pda(automaton);
  start(compiled, state);
  const size_t n = vocabulary.trie_size();
  for (size_t node = 1; node < n;) {
    const uint32_t d = vocabulary.trie_depth(node);
    const uint32_t end = vocabulary.trie_subtree_end(node);
    heads_.resize(depth_begin_[d]);
    escapes_.resize(escape_count_[d - 1]);
    const uint8_t byte = vocabulary.trie_byte(node);
    const int text = path_text_[d - 1] < 0 ? -1 : plain_text::next(path_text_[d - 1], byte);
    path_text_[d] = static_cast<int8_t>(text);
    path_chars_[d] = static_cast<uint8_t>(
        std::min(254, path_chars_[d - 1] + (path_text_[d - 1] == plain_text::kBoundary)));
    if (start_exact_ && text == plain_text::kBoundary &&
        vocabulary.trie_text_chars(node) != plain_text::kUnlimited) {
      node = end;  // plain tokens: decided by the plain-token index in start()
      continue;
    }
    const Step s = step(pda, automaton, d, byte);
    if (s.live && covered(compiled, node, d)) {
      if (!already_accepted(node, d))
        record_tokens(vocabulary.first_token(node), vocabulary.first_token(end), true);
      node = end;
      continue;
    }
    const uint32_t own_end = vocabulary.first_token(node + 1);
    record_tokens(vocabulary.first_token(node), own_end, s.live || s.returned);
    if (s.returned) escapes_.push_back(static_cast<uint16_t>(d));
    if (!s.live) {
      record_tokens(own_end, vocabulary.first_token(end), false);
      node = end;
      continue;
    }
    depth_begin_[d + 1] = static_cast<uint32_t>(heads_.size());
    escape_count_[d] = static_cast<uint32_t>(escapes_.size());
    ++node;
  }
  MaskEntry entry;
  finish(entry, vocabulary);
  return entry;
}

// Whether the tokens below `node` are plain text short enough to be in the plain tokens
// the walk started from.
bool TokenWalker::already_accepted(size_t node, uint32_t d) const {
  if (start_cover_ == 0 || path_text_[d] != plain_text::kBoundary) return false;
  const int chars = path_chars_[d] + vocabulary_->trie_text_chars(node);
  return chars <= std::min(start_cover_, vocabulary_->max_token_chars());
}

TokenWalker::Step TokenWalker::step(Pda& pda, const Automaton& automaton, uint32_t d,
                                    uint8_t byte) {
  next_.clear();
  bool returned;
  if (const int32_t from = simple_[d - 1]; from >= 0) {
    const int32_t to = automaton.step(from, byte);
    if (to < 0) return {false, false};
    if (automaton.flags[static_cast<size_t>(to)] == Automaton::kReadsBytes) {
      simple_[d] = to;
      return {true, false};
    }
    returned = pda.close({to, kBase}, arena_, next_);
  } else {
    const std::span<const Head> parent(heads_.data() + depth_begin_[d - 1],
                                       depth_begin_[d] - depth_begin_[d - 1]);
    returned = pda.step(parent, byte, arena_, next_);
  }
  if (next_.size() == 1 && next_[0].below == kBase) {
    simple_[d] = next_[0].state;
  } else {
    simple_[d] = -1;
    heads_.insert(heads_.end(), next_.begin(), next_.end());
  }
  return {!next_.empty(), returned};
}

// Whether some head at depth d reads all the plain text the node's subtree spells.
bool TokenWalker::covered(const CompiledGrammar& compiled, size_t node, uint32_t d) const {
  const uint8_t chars = vocabulary_->trie_text_chars(node);
  if (chars == 0 || chars == plain_text::kUnlimited) return false;
  if (simple_[d] >= 0) return compiled.text_reach(simple_[d]).cover >= chars;
  for (uint32_t i = depth_begin_[d]; i < heads_.size(); ++i)
    if (compiled.text_reach(heads_[i].state).cover >= chars) return true;
  return false;
}

// Tokens token_order()[from, to): accepted when `live`, else uncertain if the bottom frame
// returned somewhere along the path (escapes_), else rejected.
void TokenWalker::record_tokens(size_t from, size_t to, bool live) {
  const auto order = vocabulary_->token_order();
  if (live) {
    for (size_t i = from; i < to; ++i)
      accepted_[static_cast<uint32_t>(order[i]) >> 5] |= uint32_t{1} << (order[i] & 31);
    return;
  }
  if (escapes_.empty() || !record_uncertain_) return;
  for (size_t i = from; i < to; ++i) {
    uncertain_.push_back(order[i]);
    uncertain_offsets_.insert(uncertain_offsets_.end(), escapes_.begin(), escapes_.end());
    uncertain_begin_.push_back(static_cast<uint32_t>(uncertain_offsets_.size()));
  }
}

void TokenWalker::finish(MaskEntry& entry, const Vocabulary& vocabulary) const {
  size_t count = 0;
  for (uint32_t word : accepted_) count += static_cast<size_t>(std::popcount(word));
  // A list costs 32 bits a token, the mask one bit a vocabulary entry.
  if (count * 32 > static_cast<size_t>(vocabulary.size())) {
    entry.accepted_bits = accepted_;
  } else {
    entry.accepted_ids.reserve(count);
    for (size_t w = 0; w < accepted_.size(); ++w)
      for (uint32_t word = accepted_[w]; word != 0; word &= word - 1)
        entry.accepted_ids.push_back(
            static_cast<int32_t>(w * 32 + static_cast<size_t>(std::countr_zero(word))));
  }
  entry.uncertain_ids = uncertain_;
  entry.offset_begin = uncertain_begin_;
  entry.offsets = uncertain_offsets_;
}

}  // namespace tandem::grammar
