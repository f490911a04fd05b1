// The pushdown machinery shared by the Recognizer, the Matcher and the mask-cache walks.
//
// A configuration of the automaton is a set of stacks. A stack's top is a Head (the state
// that reads the next byte); the frames below it (the states to return to) live in a
// FrameArena, hash-consed, so equal stacks are equal ids and the set of heads stays a set.
// Only pushes (calls) create frames; reading a byte changes the head alone.
//
// Heads are kept closed: every head's state reads bytes. Closing a head follows its calls
// (pushing the return state, unless that state could only return: a tail call) and, when
// its rule may end, returns into the frame below. Returning from the bottom frame (below ==
// kBase) is reported to the caller: for the matcher it means the whole grammar may end, for
// a mask-cache walk that the walked rule ended (token_walk.h).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "runner/grammar/automaton.h"

namespace tandem::grammar {

inline constexpr int32_t kBase = -1;

struct Head {
  int32_t state;
  int32_t below;  // the frame under this one: a FrameArena id, or kBase
  bool operator==(const Head&) const = default;
};

class FrameArena {
 public:
  // The id of the frame (state, below), creating it when new.
  int32_t intern(int32_t state, int32_t below);
  Head frame(int32_t id) const { return frames_[static_cast<size_t>(id)]; }
  size_t size() const { return frames_.size(); }
  void clear();

 private:
  void grow();

  std::vector<Head> frames_;
  std::vector<int32_t> table_;  // open addressing over frames_; -1: empty
};

// A set of heads, cleared in time proportional to what it holds.
class HeadSet {
 public:
  bool insert(Head head);  // false when already present
  void clear();

 private:
  std::vector<uint64_t> slots_ = std::vector<uint64_t>(64, 0);  // key + 1; 0: empty
  std::vector<uint32_t> used_;
};

class Pda {
 public:
  explicit Pda(const Automaton& automaton) : a_(&automaton) {}

  // Appends the closure of `head` to `out`. Returns whether the bottom frame returned.
  bool close(Head head, FrameArena& arena, std::vector<Head>& out);
  // Reads `byte` from every head and appends the closure of the result to `out`. Returns
  // whether the bottom frame returned after the byte.
  bool step(std::span<const Head> heads, uint8_t byte, FrameArena& arena, std::vector<Head>& out);

  const Automaton& automaton() const { return *a_; }

 private:
  bool drain(FrameArena& arena, std::vector<Head>& out);

  const Automaton* a_;
  HeadSet visited_;
  std::vector<Head> work_;
};

}  // namespace tandem::grammar
