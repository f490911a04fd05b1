// A Matcher follows one generation through a grammar, one token at a time, and says which
// tokens may come next as a bitmask over the vocabulary. Per request; not thread-safe;
// matchers of one CompiledGrammar share its mask cache. Copyable: a copy goes on
// independently (it costs the stack arena and the history, small for JSON schemas).
//
//   Matcher m(compiled);
//   while (true) {
//     m.fill_mask(mask);              // bit (id % 32) of mask[id / 32]: token id allowed
//     int32_t token = sample(logits, mask);
//     if (!m.advance(token)) ...;     // false only for a token the mask did not allow
//     if (m.is_terminated()) break;   // an end-of-generation token was taken
//   }
//
// The mask is exact: a token is allowed exactly when its bytes continue a string of the
// grammar (every such prefix can be completed). Control tokens (no bytes) are never
// allowed. The vocabulary's end-of-generation ids are allowed exactly when accepts(), so a
// sampler that applies the mask to every id needs nothing else; a caller that decides EOG
// itself can build the Vocabulary without them and use accepts().
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "runner/grammar/compiled_grammar.h"
#include "runner/grammar/recognizer.h"

namespace tandem::grammar {

class Matcher {
 public:
  explicit Matcher(std::shared_ptr<const CompiledGrammar> compiled);
  // A CompiledGrammar of its own (its mask cache is not shared).
  Matcher(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const Vocabulary> vocabulary);

  // Writes the allowed next tokens into mask[0, mask_words()); throws std::invalid_argument
  // when the span is shorter. Non-const: it may grow the matcher's stack arena and fill the
  // shared cache. Nothing is allowed once terminated.
  void fill_mask(std::span<uint32_t> mask);
  // Takes a token: true when allowed (the state moves on), false otherwise (it does not).
  bool advance(int32_t token);
  // Feeds bytes that are not one token (a forced prefix, say); counts as one step for
  // rollback. False, and no change, when they cannot continue the grammar.
  bool advance_bytes(std::string_view bytes);
  // Undoes the last `steps` advances (all of them when there are fewer).
  void rollback(size_t steps);
  void reset() { rollback(history_.size()); }

  // What was taken so far is a complete string of the grammar (end-of-generation allowed).
  bool accepts() const { return !terminated_ && recognizer_.accepts(); }
  // An end-of-generation token was taken.
  bool is_terminated() const { return terminated_; }
  // Some token other than end-of-generation can come next.
  bool can_continue() const { return !terminated_ && recognizer_.can_continue(); }
  size_t steps() const { return history_.size(); }

  size_t mask_words() const { return compiled_->vocabulary().mask_words(); }
  const CompiledGrammar& compiled() const { return *compiled_; }
  // The byte-level state (tests copy it to check tokens one by one).
  const Recognizer& recognizer() const { return recognizer_; }

 private:
  struct Step {
    Recognizer::Position position;
    bool terminated;
  };

  bool is_end_of_generation(int32_t token) const;
  void add_uncertain(const MaskEntry& entry, int32_t below, std::span<uint32_t> mask);
  bool rest_continues(int32_t below, std::string_view rest);

  std::shared_ptr<const CompiledGrammar> compiled_;
  Recognizer recognizer_;
  std::vector<Step> history_;
  bool terminated_ = false;
  TokenWalker walker_;
  std::vector<Head> current_, next_;
};

}  // namespace tandem::grammar
