// "Plain text": well-formed UTF-8 of code points from U+0020 up, except '"', '\' and DEL,
// possibly cut short inside its last character. It is what most tokens spell and what a
// JSON string (or a GBNF [^"\\]*) takes unescaped, so it drives the mask-cache walk's
// shortcut (token_walk.cpp): the vocabulary knows, per trie node, how many characters of
// plain text its subtree spells below it (vocabulary.h); the grammar knows, per state, how
// many characters of any plain text it can read (text_cover.cpp); when the first is within
// the second, every token below the node is allowed and the walk skips the whole subtree.
#pragma once

#include <cstdint>
#include <vector>

namespace tandem::grammar::plain_text {

// The decoder's states: 0 between characters, others inside one (which bytes may follow
// depends on the lead byte, as Unicode's Table 3-7 has it).
inline constexpr int kBoundary = 0;
inline constexpr int kStates = 8;

// The state after `byte`, or -1 when plain text cannot continue with it.
inline int next(int state, uint8_t byte) {
  const auto in = [&](int lo, int hi) { return byte >= lo && byte <= hi; };
  switch (state) {
    case 0:
      if (in(0x20, 0x7E)) return byte == '"' || byte == '\\' ? -1 : 0;
      if (in(0xC2, 0xDF)) return 1;
      if (byte == 0xE0) return 3;
      if (in(0xE1, 0xEC) || in(0xEE, 0xEF)) return 2;
      if (byte == 0xED) return 4;
      if (byte == 0xF0) return 6;
      if (in(0xF1, 0xF3)) return 5;
      if (byte == 0xF4) return 7;
      return -1;
    case 1:
      return in(0x80, 0xBF) ? 0 : -1;  // one continuation byte left
    case 2:
      return in(0x80, 0xBF) ? 1 : -1;
    case 3:
      return in(0xA0, 0xBF) ? 1 : -1;  // after E0: no overlong forms
    case 4:
      return in(0x80, 0x9F) ? 1 : -1;  // after ED: no surrogates
    case 5:
      return in(0x80, 0xBF) ? 2 : -1;
    case 6:
      return in(0x90, 0xBF) ? 2 : -1;  // after F0: no overlong forms
    case 7:
      return in(0x80, 0x8F) ? 2 : -1;  // after F4: nothing above U+10FFFF
    default:
      return -1;
  }
}

// The same transitions as byte ranges, for searches that go range by range.
struct Range {
  uint8_t lo, hi;
  int8_t next;
};
inline const std::vector<Range>& ranges(int state) {
  static const std::vector<Range> table[kStates] = {{{0x20, 0x21, 0},
                                                     {0x23, 0x5B, 0},
                                                     {0x5D, 0x7E, 0},
                                                     {0xC2, 0xDF, 1},
                                                     {0xE0, 0xE0, 3},
                                                     {0xE1, 0xEC, 2},
                                                     {0xED, 0xED, 4},
                                                     {0xEE, 0xEF, 2},
                                                     {0xF0, 0xF0, 6},
                                                     {0xF1, 0xF3, 5},
                                                     {0xF4, 0xF4, 7}},
                                                    {{0x80, 0xBF, 0}},
                                                    {{0x80, 0xBF, 1}},
                                                    {{0xA0, 0xBF, 1}},
                                                    {{0x80, 0x9F, 1}},
                                                    {{0x80, 0xBF, 2}},
                                                    {{0x90, 0xBF, 2}},
                                                    {{0x80, 0x8F, 2}}};
  return table[state];
}

// Counts: a character counts once its first byte is read (a cut-short one included).
inline bool starts_character(int state) { return state == kBoundary; }

// 255 in a count means "unlimited" (a grammar state) or "not plain text" (a trie node).
inline constexpr uint8_t kUnlimited = 255;

}  // namespace tandem::grammar::plain_text
