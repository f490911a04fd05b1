// The one UTF-8 encoder every layer uses (jinja's str methods, the tokenizer, the grammar
// engine's byte ranges, make-model's vocabularies). Header-only: it is four branches.
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

}  // namespace tandem
