#include "runner/tokenizer/utf8.h"

#include "protocol/utf8_encode.h"

namespace tandem::utf8 {

namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

}  // namespace

SequenceScan scan_sequence(std::string_view bytes) {
  const auto lead = static_cast<unsigned char>(bytes[0]);
  const Utf8Lead rule = utf8_lead(lead);
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
