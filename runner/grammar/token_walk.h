// The per-state mask cache (xgrammar's "adaptive token mask cache", in spirit).
//
// For an automaton state s that reads bytes, a walk over the vocabulary trie feeds each
// token's bytes to a stack whose bottom frame is s, and sorts the tokens in three:
//  - accepted: some path reads the whole token while s's rule is still running, or ends
//    s's rule exactly at the token's last byte. Allowed whatever lies below s.
//  - uncertain: s's rule can end after k bytes (0 < k < length) with bytes left over: the
//    token is allowed exactly when its rest, bytes [k, length), can continue the frame
//    below s. The matcher checks those few tokens against its real stack.
//  - rejected: everything else, whatever lies below s.
// So the entry depends on s alone and is computed once per (grammar, vocabulary) state.
// Ending at offset 0 needs no entry: the matcher's heads already include what s's
// return leads to. A rule that is the whole grammar (a JSON Schema without recursion)
// leaves nothing uncertain: returning from the root with bytes left is a rejection.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "runner/grammar/pda.h"
#include "runner/grammar/vocabulary.h"

namespace tandem::grammar {

struct MaskEntry {
  // Accepted tokens: a bitset (mask_words() words) when there are many, else a list.
  std::vector<uint32_t> accepted_bits;
  std::vector<int32_t> accepted_ids;
  // Uncertain tokens: token uncertain_ids[i] may continue below after any of the offsets
  // offsets[offset_begin[i] .. offset_begin[i + 1]).
  std::vector<int32_t> uncertain_ids;
  std::vector<uint32_t> offset_begin;  // uncertain_ids.size() + 1 entries
  std::vector<uint16_t> offsets;

  size_t memory_bytes() const;
  void set_accepted(std::span<uint32_t> mask) const;
};

// Scratch for computing entries; one per thread (each Matcher owns one).
class TokenWalker {
 public:
  MaskEntry walk(const Automaton& automaton, const Vocabulary& vocabulary, int32_t state);

 private:
  void record_tokens(size_t from, size_t to, bool live);
  void finish(MaskEntry& entry, const Vocabulary& vocabulary) const;

  const Vocabulary* vocabulary_ = nullptr;
  FrameArena arena_;
  std::vector<Head> heads_;            // heads of every depth on the current path
  std::vector<uint32_t> depth_begin_;  // heads of depth d: [depth_begin_[d], depth_begin_[d+1])
  std::vector<uint32_t> escape_count_;
  std::vector<uint16_t> escapes_;  // the depths at which the bottom frame returned
  std::vector<Head> next_;
  std::vector<int32_t> accepted_;
  std::vector<int32_t> uncertain_;
  std::vector<uint32_t> uncertain_begin_;
  std::vector<uint16_t> uncertain_offsets_;
};

}  // namespace tandem::grammar
