#include "runner/grammar/utf8_sequences.h"

#include <string>

#include "protocol/utf8_encode.h"

namespace tandem::grammar {

namespace {

// Splits [lo, hi] until both ends encode to the same length and every continuation byte
// position spans a whole aligned block, so the range is a product of byte ranges.
void split(char32_t lo, char32_t hi, std::vector<Utf8Sequence>& out) {
  if (lo > hi) return;
  for (char32_t max : {char32_t{0x7F}, char32_t{0x7FF}, char32_t{0xFFFF}}) {
    if (lo <= max && max < hi) {
      split(lo, max, out);
      split(max + 1, hi, out);
      return;
    }
  }
  if (hi >= 0x80) {
    for (int i = 1; i < 4; ++i) {
      const char32_t mask = (char32_t{1} << (6 * i)) - 1;
      if ((lo & ~mask) == (hi & ~mask)) continue;
      if ((lo & mask) != 0) {
        split(lo, lo | mask, out);
        split((lo | mask) + 1, hi, out);
        return;
      }
      if ((hi & mask) != mask) {
        split(lo, (hi & ~mask) - 1, out);
        split(hi & ~mask, hi, out);
        return;
      }
    }
  }
  std::string a, b;  // equal lengths: the splits above keep both ends in one length class
  append_utf8(lo, a);
  append_utf8(hi, b);
  Utf8Sequence sequence{};
  sequence.length = static_cast<uint8_t>(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    sequence.bytes[i] = {static_cast<uint8_t>(a[i]), static_cast<uint8_t>(b[i])};
  }
  out.push_back(sequence);
}

}  // namespace

std::vector<Utf8Sequence> utf8_sequences(const std::vector<CodepointRange>& ranges) {
  std::vector<Utf8Sequence> out;
  for (const CodepointRange& r : ranges) split(r.first, r.last, out);
  return out;
}

}  // namespace tandem::grammar
