#include "runner/tokenizer/utf8.h"

#include "protocol/utf8_encode.h"

namespace tandem::utf8 {

namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Allowed range of the second byte after each lead byte (Table 3-7); later
// continuation bytes are always 80..BF.
struct LeadRule {
  int length;
  unsigned char second_lo, second_hi;
};

LeadRule lead_rule(unsigned char b) {
  if (b < 0x80) return {1, 0, 0};
  if (b >= 0xC2 && b <= 0xDF) return {2, 0x80, 0xBF};
  if (b == 0xE0) return {3, 0xA0, 0xBF};
  if (b == 0xED) return {3, 0x80, 0x9F};  // excludes the surrogates D800..DFFF
  if (b >= 0xE1 && b <= 0xEF) return {3, 0x80, 0xBF};
  if (b == 0xF0) return {4, 0x90, 0xBF};
  if (b >= 0xF1 && b <= 0xF3) return {4, 0x80, 0xBF};
  if (b == 0xF4) return {4, 0x80, 0x8F};  // nothing above U+10FFFF
  return {0, 0, 0};  // 80..C1 (continuations, overlong leads) and F5..FF never start one
}

}  // namespace

SequenceScan scan_sequence(std::string_view bytes) {
  const auto lead = static_cast<unsigned char>(bytes[0]);
  const LeadRule rule = lead_rule(lead);
  if (rule.length == 0) return {Sequence::kInvalid, 1};
  if (rule.length == 1) return {Sequence::kValid, 1};
  for (int i = 1; i < rule.length; ++i) {
    if (static_cast<size_t>(i) >= bytes.size()) return {Sequence::kIncomplete, bytes.size()};
    const auto b = static_cast<unsigned char>(bytes[i]);
    const unsigned char lo = i == 1 ? rule.second_lo : 0x80;
    const unsigned char hi = i == 1 ? rule.second_hi : 0xBF;
    if (b < lo || b > hi) return {Sequence::kInvalid, static_cast<size_t>(i)};
  }
  return {Sequence::kValid, static_cast<size_t>(rule.length)};
}

size_t append_sanitized(std::string& out, std::string_view bytes, bool final) {
  size_t pos = 0;
  while (pos < bytes.size()) {
    // Runs of ASCII are the common case: copy them without classifying each byte.
    size_t ascii_end = pos;
    while (ascii_end < bytes.size() && static_cast<unsigned char>(bytes[ascii_end]) < 0x80)
      ++ascii_end;
    out.append(bytes.substr(pos, ascii_end - pos));
    pos = ascii_end;
    if (pos == bytes.size()) break;
    const SequenceScan scan = scan_sequence(bytes.substr(pos));
    switch (scan.kind) {
      case Sequence::kValid:
        out.append(bytes.substr(pos, scan.length));
        break;
      case Sequence::kInvalid:
        out.append(kReplacement);
        break;
      case Sequence::kIncomplete:
        if (!final) return pos;
        out.append(kReplacement);
        break;
    }
    pos += scan.length;
  }
  return pos;
}

bool is_valid(std::string_view bytes) {
  size_t pos = 0;
  while (pos < bytes.size()) {
    const SequenceScan scan = scan_sequence(bytes.substr(pos));
    if (scan.kind != Sequence::kValid) return false;
    pos += scan.length;
  }
  return true;
}

std::string encode(char32_t cp) {
  std::string out;
  append_utf8(cp, out);
  return out;
}

}  // namespace tandem::utf8

namespace tandem {

void append_sanitized_utf8(std::string& out, std::string_view bytes) {
  utf8::append_sanitized(out, bytes, /*final=*/true);
}

}  // namespace tandem
