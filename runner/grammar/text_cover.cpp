#include "runner/grammar/text_cover.h"

#include <algorithm>
#include <array>
#include <deque>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "runner/grammar/plain_text.h"

namespace tandem::grammar {

namespace {

struct Pair {
  int text;  // plain_text decoder state
  int32_t state;
};

uint64_t pair_key(Pair p) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(p.state)) << 3) |
         static_cast<uint64_t>(p.text);
}

class Search {
 public:
  Search(const Automaton& a, uint8_t cap) : a_(a), cap_(cap) {
    for (int b = 0; b < 256; ++b)
      class_last_[a.byte_class[static_cast<size_t>(b)]] = static_cast<uint8_t>(b);
  }

  // A 0-1 breadth-first search: the first byte of a character costs 1, the others 0, so
  // pairs come out in order of characters started.
  TextReach run(int32_t state) {
    push({plain_text::kBoundary, state}, 0, false);
    while (!queue_.empty()) {
      const auto [pair, started] = queue_.front();
      queue_.pop_front();
      if (seen_[pair_key(pair)] < started) continue;  // reached more cheaply already
      const bool first = pair.state == state && pair.text == plain_text::kBoundary && started == 0;
      if (!first &&
          (a_.flags[static_cast<size_t>(pair.state)] & (Automaton::kAccepting | Automaton::kCalls)))
        exact_ = false;
      expand(pair, started);
    }
    // Reading past the shortest failure is checked apart: the search meets each pair once,
    // at its fewest characters, yet a pair may read on at more ([a-z]+ . "\x01" after two
    // letters reads letters back into its own state, and fails on the second character
    // after a non-letter).
    if (exact_ && cover_ >= 0 && reads_past(state, cover_)) exact_ = false;
    if (cover_ < 0) return {static_cast<uint8_t>(cut_ ? cap_ : plain_text::kUnlimited), exact_};
    return {static_cast<uint8_t>(std::min<int>(cap_, cover_)), exact_};
  }

 private:
  // Whether some plain text of more than n characters (the last possibly cut short) can be
  // read from `state`: layer k holds the pairs reached after starting k characters.
  bool reads_past(int32_t state, int n) const {
    std::vector<Pair> layer = {{plain_text::kBoundary, state}};
    for (int k = 0; k <= n && !layer.empty(); ++k) {
      std::unordered_set<uint64_t> in_layer, in_next;
      for (const Pair& p : layer) in_layer.insert(pair_key(p));
      std::vector<Pair> next;
      for (size_t i = 0; i < layer.size(); ++i) {  // grows with the characters' later bytes
        const Pair pair = layer[i];
        const bool starts = plain_text::starts_character(pair.text);
        for (const plain_text::Range& range : plain_text::ranges(pair.text)) {
          for (int byte = range.lo; byte <= range.hi;) {
            const int32_t to = a_.step(pair.state, static_cast<uint8_t>(byte));
            byte = class_last_[a_.byte_class[static_cast<size_t>(byte)]] + 1;
            if (to < 0) continue;
            if (starts && k == n) return true;
            const Pair q{range.next, to};
            if (!(starts ? in_next : in_layer).insert(pair_key(q)).second) continue;
            (starts ? next : layer).push_back(q);
          }
        }
      }
      layer = std::move(next);
    }
    return false;
  }

  void expand(Pair pair, int started) {
    const bool starts = plain_text::starts_character(pair.text);
    const int cost = started + (starts ? 1 : 0);
    int readable = 0, failing = 0;
    for (const plain_text::Range& range : plain_text::ranges(pair.text)) {
      for (int byte = range.lo; byte <= range.hi;) {
        const int32_t next = a_.step(pair.state, static_cast<uint8_t>(byte));
        byte = class_last_[a_.byte_class[static_cast<size_t>(byte)]] + 1;
        if (next < 0) {
          ++failing;
        } else {
          ++readable;
          push({range.next, next}, cost, starts);
        }
      }
    }
    if (failing == 0) return;
    // Texts cut short inside character `started` (or `started + 1`, when this byte would
    // begin one) cannot be read; all shorter ones can.
    const int fails_at = starts ? started : started - 1;
    cover_ = cover_ < 0 ? fails_at : std::min(cover_, fails_at);
    if (readable > 0 || !starts) exact_ = false;
  }

  void push(Pair to, int cost, bool back) {
    if (cost > cap_) {
      cut_ = true;
      return;
    }
    const auto [it, added] = seen_.try_emplace(pair_key(to), cost);
    if (!added && it->second <= cost) return;
    it->second = cost;
    if (back)
      queue_.push_back({to, cost});
    else
      queue_.push_front({to, cost});
  }

  const Automaton& a_;
  const int cap_;
  std::array<uint8_t, 256> class_last_{};
  std::deque<std::pair<Pair, int>> queue_;
  std::unordered_map<uint64_t, int> seen_;
  int cover_ = -1;  // the fewest characters after which some plain text fails
  bool exact_ = true;
  bool cut_ = false;  // some texts longer than the cap were not followed
};

}  // namespace

TextReach text_reach(const Automaton& a, int32_t state, uint8_t cap) {
  return Search(a, cap).run(state);
}

}  // namespace tandem::grammar
