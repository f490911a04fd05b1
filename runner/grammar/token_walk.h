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

class CompiledGrammar;

// Scratch for computing entries; one per thread (each Matcher owns one).
//
// Three things keep a walk cheap. The heads after each prefix of the current path are kept
// per depth, and while they are one head at the bottom (the usual case in a grammar
// without recursion) they are one state and a step is one table lookup. When the head can
// read any plain text at least as long as everything below the current trie node spells
// (plain_text.h, text_cover.h), the whole subtree is accepted at once. And when the
// walk's own state reads exactly the plain texts of up to n characters (a JSON string's
// content, bounded or not), the plain tokens are decided from the vocabulary's index and
// only the others are walked: inside a string most of the vocabulary is skipped.
class TokenWalker {
 public:
  MaskEntry walk(const CompiledGrammar& compiled, int32_t state);
  // Keeps an entry no grammar keeps (past its MaskBudget) until the next one, or until
  // let_go() (a matcher's mask is filled: nothing is kept between steps outside the budget).
  const MaskEntry& hold(MaskEntry entry) {
    held_ = std::move(entry);
    return held_;
  }
  void let_go() { held_ = MaskEntry{}; }

 private:
  struct Step {
    bool live;      // some head survives the byte
    bool returned;  // the bottom frame's rule may end right after it
  };

  void start(const CompiledGrammar& compiled, int32_t state);
  Step step(Pda& pda, const Automaton& automaton, uint32_t depth, uint8_t byte);
  bool covered(const CompiledGrammar& compiled, size_t node, uint32_t depth) const;
  bool already_accepted(size_t node, uint32_t depth) const;
  void record_tokens(size_t from, size_t to, bool live);
  void finish(MaskEntry& entry, const Vocabulary& vocabulary) const;

  const Vocabulary* vocabulary_ = nullptr;
  FrameArena arena_;
  // The heads after reading the path's first d bytes: the state simple_[d] at the bottom
  // when that is all there is, else (simple_[d] < 0) heads_[depth_begin_[d] ..
  // depth_begin_[d + 1]).
  std::vector<int32_t> simple_;
  std::vector<Head> heads_;
  std::vector<uint32_t> depth_begin_;
  std::vector<uint32_t> escape_count_;
  std::vector<uint16_t> escapes_;  // the depths at which the bottom frame returned
  std::vector<Head> next_;
  // The path as plain text: the decoder state after its first d bytes (-1: not plain
  // text) and the characters it started. With the walk's state reading `start_cover_`
  // characters of any plain text, the plain tokens that short are accepted from the start.
  std::vector<int8_t> path_text_;
  std::vector<uint8_t> path_chars_;
  uint8_t start_cover_ = 0;
  bool start_exact_ = false;        // and no other plain token is: they need no walking
  bool record_uncertain_ = true;    // false for a root state: see start()
  std::vector<uint32_t> accepted_;  // a mask
  std::vector<int32_t> uncertain_;
  std::vector<uint32_t> uncertain_begin_;
  std::vector<uint16_t> uncertain_offsets_;
  MaskEntry held_;
};

}  // namespace tandem::grammar
