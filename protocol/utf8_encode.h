// The one UTF-8 encoder every layer uses (jinja's str methods, the tokenizer, the grammar
// engine's byte ranges, make-model's vocabularies), and the one rule for a sequence's lead
// byte. Header-only: each is a few branches.
#pragma once

#include <string>

namespace tandem {

// Appends the UTF-8 encoding of code point `cp` (at most U+10FFFF; surrogates are encoded
// like any other value, as the callers that decode lone bytes expect) to `out`.
inline void append_utf8(char32_t cp, std::string& out) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// Unicode's Table 3-7 for the byte that begins a sequence: the sequence's length and the
// range its second byte must be in (later continuation bytes are always 80..BF); length 0
// for a byte that never begins one (80..C1: continuations and overlong leads; F5..FF). The
// one copy of the rule: the detokenizer's sanitizer and logprobs' text offsets both read
// it, so a replacement character in the text is one in the offsets too.
struct Utf8Lead {
  int length;
  unsigned char second_lo, second_hi;
};
constexpr Utf8Lead utf8_lead(unsigned char b) {
  if (b < 0x80) return {1, 0, 0};
  if (b >= 0xC2 && b <= 0xDF) return {2, 0x80, 0xBF};
  if (b == 0xE0) return {3, 0xA0, 0xBF};
  if (b == 0xED) return {3, 0x80, 0x9F};  // excludes the surrogates D800..DFFF
  if (b >= 0xE1 && b <= 0xEF) return {3, 0x80, 0xBF};
  if (b == 0xF0) return {4, 0x90, 0xBF};
  if (b >= 0xF1 && b <= 0xF3) return {4, 0x80, 0xBF};
  if (b == 0xF4) return {4, 0x80, 0x8F};  // nothing above U+10FFFF
  return {0, 0, 0};
}

}  // namespace tandem
