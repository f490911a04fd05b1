// A byte-level recognizer: feeds bytes through a Grammar's automaton and says whether what
// was fed can still be completed (a viable prefix) and whether it is complete. The Matcher
// runs one; tests copy one to check a token by brute force. Copyable (a copy is independent
// and costs the size of its stack arena); not thread-safe.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "runner/grammar/grammar.h"
#include "runner/grammar/pda.h"

namespace tandem::grammar {

class Recognizer {
 public:
  explicit Recognizer(std::shared_ptr<const Grammar> grammar);

  // Reads all of `bytes`, or nothing: returns false (and leaves the state as it was) when
  // they cannot continue a string of the grammar.
  bool feed(std::string_view bytes);
  // The text fed so far is a whole string of the grammar.
  bool accepts() const { return accepts_; }
  // Some byte can still be read (false once the grammar can only end).
  bool can_continue() const { return !heads_.empty(); }

  // A position to come back to (restore() is cheap: frames are never freed).
  struct Position {
    std::vector<Head> heads;
    bool accepts;
  };
  Position position() const { return {heads_, accepts_}; }
  void restore(Position position);

  const Grammar& grammar() const { return *grammar_; }
  std::span<const Head> heads() const { return heads_; }
  FrameArena& arena() { return arena_; }
  Pda& pda() { return pda_; }

 private:
  std::shared_ptr<const Grammar> grammar_;
  FrameArena arena_;
  Pda pda_;
  std::vector<Head> heads_;
  std::vector<Head> next_;
  bool accepts_ = false;
};

}  // namespace tandem::grammar
