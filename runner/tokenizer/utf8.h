// UTF-8 well-formedness as Unicode defines it (Table 3-7): the checks behind
// append_sanitized_utf8, the Detokenizer's hold-back of incomplete sequences, and the
// tests' validator. Pure functions; safe from any thread.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace tandem::utf8 {

enum class Sequence {
  kValid,       // a whole well-formed sequence
  kInvalid,     // a maximal subpart of an ill-formed sequence (one U+FFFD)
  kIncomplete,  // a well-formed prefix cut short by the end of the input
};

struct SequenceScan {
  Sequence kind;
  size_t length;  // bytes taken by the sequence, subpart or prefix (at least 1)
};

// Classifies the sequence that starts at bytes[0]; `bytes` must not be empty.
SequenceScan scan_sequence(std::string_view bytes);

// Bytes in the character that starts `text` (not empty): its length, or 1 for an invalid
// byte, which is a character of its own (it cannot swallow part of a following valid one).
inline size_t character_length(std::string_view text) {
  const SequenceScan scan = scan_sequence(text);
  return scan.kind == Sequence::kValid ? scan.length : 1;
}

// Appends `bytes` to `out`, each maximal invalid subpart replaced by U+FFFD. With
// `final` false it stops before an incomplete trailing sequence and returns how many
// bytes it consumed, so the caller can keep the rest until more bytes arrive.
size_t append_sanitized(std::string& out, std::string_view bytes, bool final);

bool is_valid(std::string_view bytes);

// The UTF-8 encoding of code point `cp` (which must be a Unicode scalar value).
std::string encode(char32_t cp);

}  // namespace tandem::utf8

namespace tandem {

// Appends `bytes` to `out` as valid UTF-8, replacing each maximal invalid subpart
// with U+FFFD (the WHATWG / Unicode "substitution of maximal subparts" rule).
void append_sanitized_utf8(std::string& out, std::string_view bytes);

}  // namespace tandem
