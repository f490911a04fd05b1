#include "runner/grammar/utf8_sequences.h"

namespace tandem::grammar {

namespace {

int encode(char32_t cp, uint8_t* out) {
  if (cp < 0x80) {
    out[0] = static_cast<uint8_t>(cp);
    return 1;
  }
  if (cp < 0x800) {
    out[0] = static_cast<uint8_t>(0xC0 | (cp >> 6));
    out[1] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    out[0] = static_cast<uint8_t>(0xE0 | (cp >> 12));
    out[1] = static_cast<uint8_t>(0x80 | ((cp >> 6) & 0x3F));
    out[2] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
    return 3;
  }
  out[0] = static_cast<uint8_t>(0xF0 | (cp >> 18));
  out[1] = static_cast<uint8_t>(0x80 | ((cp >> 12) & 0x3F));
  out[2] = static_cast<uint8_t>(0x80 | ((cp >> 6) & 0x3F));
  out[3] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
  return 4;
}

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
  uint8_t a[4], b[4];
  const int n = encode(lo, a);
  encode(hi, b);
  Utf8Sequence sequence{};
  sequence.length = static_cast<uint8_t>(n);
  for (int i = 0; i < n; ++i) sequence.bytes[i] = {a[i], b[i]};
  out.push_back(sequence);
}

}  // namespace

std::vector<Utf8Sequence> utf8_sequences(const std::vector<CodepointRange>& ranges) {
  std::vector<Utf8Sequence> out;
  for (const CodepointRange& r : ranges) split(r.first, r.last, out);
  return out;
}

}  // namespace tandem::grammar
