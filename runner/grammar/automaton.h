// The compiled form of a grammar: one deterministic automaton per kept rule, over byte
// classes, whose edges either read a byte or call another rule (a pushdown automaton whose
// stack holds return states). Rules that are not recursive are inlined into their callers
// when the grammar is built, so a JSON Schema without recursion becomes a single rule: a
// plain DFA, and masks need no stack at all.
//
// Invariants build() establishes (the matcher relies on them):
//  - every state can reach an accepting state (so every prefix the automaton accepts can
//    be completed: a token is allowed exactly when its bytes can be read);
//  - no rule can call itself, directly or not, before reading a byte (no left recursion),
//    so closing over calls and returns always terminates.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace tandem::grammar {

struct CallEdge {
  int32_t rule;    // the rule called
  int32_t target;  // the state its caller resumes in once it returns
};

struct Automaton {
  enum Flags : uint8_t {
    kAccepting = 1,  // the state's rule may end here
    kReadsBytes = 2,
    kCalls = 4,
  };

  int32_t num_classes = 0;
  std::array<uint8_t, 256> byte_class{};  // bytes no edge tells apart share a class
  std::vector<int32_t> next;              // [state * num_classes + class]; -1: no edge
  std::vector<uint8_t> flags;             // per state
  std::vector<uint32_t> call_begin;       // per state + 1: its calls in `calls`
  std::vector<CallEdge> calls;
  std::vector<int32_t> rule_start;  // per rule
  std::vector<std::string> rule_names;
  std::vector<int32_t> state_rule;  // the rule each state belongs to
  int32_t root = 0;                 // the rule the whole text must match
  bool root_is_called = false;      // some rule calls the root (else its frame is the base)

  int32_t num_states() const { return static_cast<int32_t>(flags.size()); }
  // The heap its tables hold (the transition table dominates: states x classes x 4 bytes).
  size_t memory_bytes() const {
    size_t bytes = next.capacity() * sizeof(int32_t) + flags.capacity() +
                   call_begin.capacity() * sizeof(uint32_t) + calls.capacity() * sizeof(CallEdge) +
                   (rule_start.capacity() + state_rule.capacity()) * sizeof(int32_t);
    for (const std::string& name : rule_names) bytes += sizeof(std::string) + name.capacity();
    return bytes;
  }
  int32_t step(int32_t state, uint8_t byte) const {
    return next[static_cast<size_t>(state) * static_cast<size_t>(num_classes) + byte_class[byte]];
  }
  std::span<const CallEdge> calls_of(int32_t state) const {
    const auto s = static_cast<size_t>(state);
    return {calls.data() + call_begin[s], calls.data() + call_begin[s + 1]};
  }
  bool accepting(int32_t state) const { return flags[static_cast<size_t>(state)] & kAccepting; }
  // A state that only ends its rule: returning into it is the same as returning past it.
  bool only_returns(int32_t state) const { return flags[static_cast<size_t>(state)] == kAccepting; }
};

}  // namespace tandem::grammar
