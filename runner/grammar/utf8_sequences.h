// Code point ranges as UTF-8 byte-range sequences: [U+0080, U+07FF] becomes
// [C2-DF][80-BF], and so on (the construction RE2 and Rust's regex-syntax use). The
// sequences match exactly the well-formed encodings of the code points: no overlong forms,
// no surrogates.
#pragma once

#include <cstdint>
#include <vector>

#include "runner/grammar/builder.h"

namespace tandem::grammar {

struct ByteRange {
  uint8_t lo;
  uint8_t hi;
};

struct Utf8Sequence {
  ByteRange bytes[4];
  uint8_t length;
};

// `ranges` must be normalized (GrammarBuilder::normalize).
std::vector<Utf8Sequence> utf8_sequences(const std::vector<CodepointRange>& ranges);

}  // namespace tandem::grammar
