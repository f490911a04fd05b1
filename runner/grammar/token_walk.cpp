#include "runner/grammar/token_walk.h"

#include <algorithm>
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

// Depth-first over the trie in pre-order. The heads after reading each prefix of the
// current path are kept per depth, so a node costs one step from its parent's heads.
MaskEntry TokenWalker::walk(const Automaton& automaton, const Vocabulary& vocabulary,
                            int32_t state) {
  vocabulary_ = &vocabulary;
  Pda pda(automaton);
  arena_.clear();
  heads_.assign(1, {state, kBase});
  escapes_.clear();
  accepted_.clear();
  uncertain_.clear();
  uncertain_begin_.assign(1, 0);
  uncertain_offsets_.clear();
  const size_t depths = vocabulary.max_token_length() + 2;
  depth_begin_.assign(depths, 0);
  escape_count_.assign(depths, 0);
  depth_begin_[1] = 1;

  const size_t n = vocabulary.trie_size();
  for (size_t node = 1; node < n;) {
    const uint32_t d = vocabulary.trie_depth(node);
    heads_.resize(depth_begin_[d]);
    escapes_.resize(escape_count_[d - 1]);
    next_.clear();
    const std::span<const Head> parent(heads_.data() + depth_begin_[d - 1],
                                       depth_begin_[d] - depth_begin_[d - 1]);
    const bool returned = pda.step(parent, vocabulary.trie_byte(node), arena_, next_);
    const bool live = !next_.empty();
    const uint32_t own_end = vocabulary.first_token(node + 1);
    record_tokens(vocabulary.first_token(node), own_end, live || returned);
    if (returned) escapes_.push_back(static_cast<uint16_t>(d));
    if (!live) {
      const uint32_t end = vocabulary.trie_subtree_end(node);
      record_tokens(own_end, vocabulary.first_token(end), false);
      node = end;
      continue;
    }
    heads_.insert(heads_.end(), next_.begin(), next_.end());
    depth_begin_[d + 1] = static_cast<uint32_t>(heads_.size());
    escape_count_[d] = static_cast<uint32_t>(escapes_.size());
    ++node;
  }
  MaskEntry entry;
  finish(entry, vocabulary);
  return entry;
}

// Tokens token_order()[from, to): accepted when `live`, else uncertain if the bottom frame
// returned somewhere along the path (escapes_), else rejected.
void TokenWalker::record_tokens(size_t from, size_t to, bool live) {
  const auto order = vocabulary_->token_order();
  if (live) {
    accepted_.insert(accepted_.end(), order.begin() + static_cast<ptrdiff_t>(from),
                     order.begin() + static_cast<ptrdiff_t>(to));
    return;
  }
  if (escapes_.empty()) return;
  for (size_t i = from; i < to; ++i) {
    uncertain_.push_back(order[i]);
    uncertain_offsets_.insert(uncertain_offsets_.end(), escapes_.begin(), escapes_.end());
    uncertain_begin_.push_back(static_cast<uint32_t>(uncertain_offsets_.size()));
  }
}

void TokenWalker::finish(MaskEntry& entry, const Vocabulary& vocabulary) const {
  // A list costs 32 bits a token, the bitset one bit a vocabulary entry.
  if (accepted_.size() * 32 > static_cast<size_t>(vocabulary.size())) {
    entry.accepted_bits.assign(vocabulary.mask_words(), 0);
    for (int32_t id : accepted_)
      entry.accepted_bits[static_cast<size_t>(id) >> 5] |= uint32_t{1}
                                                           << (static_cast<uint32_t>(id) & 31);
  } else {
    entry.accepted_ids = accepted_;
    std::sort(entry.accepted_ids.begin(), entry.accepted_ids.end());
  }
  entry.uncertain_ids = uncertain_;
  entry.offset_begin = uncertain_begin_;
  entry.offsets = uncertain_offsets_;
}

}  // namespace tandem::grammar
