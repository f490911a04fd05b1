#include "protocol/jinja/unicode.h"

#include <algorithm>

#include "protocol/jinja/unicode_tables.h"

namespace tandem::jinja {

char32_t decode_utf8(std::string_view s, size_t& pos) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char b0 = byte(pos);
  size_t extra = 0;
  char32_t cp = b0;
  if (b0 >= 0xC2 && b0 < 0xE0) {
    extra = 1;
    cp = b0 & 0x1F;
  } else if (b0 >= 0xE0 && b0 < 0xF0) {
    extra = 2;
    cp = b0 & 0x0F;
  } else if (b0 >= 0xF0 && b0 < 0xF5) {
    extra = 3;
    cp = b0 & 0x07;
  }
  if (extra == 0 || pos + extra >= s.size()) {
    ++pos;
    return b0;
  }
  for (size_t i = 1; i <= extra; ++i) {
    if ((byte(pos + i) & 0xC0) != 0x80) {
      ++pos;
      return b0;
    }
    cp = (cp << 6) | (byte(pos + i) & 0x3F);
  }
  pos += extra + 1;
  return cp;
}

void append_utf8(char32_t cp, std::string& out) {
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

bool is_valid_utf8(std::string_view s) {
  for (size_t pos = 0; pos < s.size();) {
    const size_t start = pos;
    const char32_t cp = decode_utf8(s, pos);
    const size_t len = pos - start;
    const bool overlong = (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000);
    const bool bad =
        (len == 1 && cp >= 0x80) || overlong || (cp >= 0xD800 && cp < 0xE000) || cp > 0x10FFFF;
    if (bad) return false;
  }
  return true;
}

size_t code_point_count(std::string_view s) {
  size_t count = 0;
  for (size_t pos = 0; pos < s.size(); ++count) decode_utf8(s, pos);
  return count;
}

std::vector<size_t> code_point_offsets(std::string_view s) {
  std::vector<size_t> offsets;
  offsets.reserve(s.size() + 1);
  for (size_t pos = 0; pos < s.size();) {
    offsets.push_back(pos);
    decode_utf8(s, pos);
  }
  offsets.push_back(s.size());
  return offsets;
}

bool is_space(char32_t cp) {
  if (cp == ' ' || (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x1F)) return true;
  if (cp < 0x80) return false;
  return cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) ||
         cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

bool is_word_char(char32_t cp) {
  if (cp < 0x80) {
    return (cp >= '0' && cp <= '9') || (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') ||
           cp == '_';
  }
  if (is_space(cp)) return false;
  const bool latin1_symbol = cp < 0xC0 && cp != 0xAA && cp != 0xB5 && cp != 0xBA;
  const bool punctuation = (cp >= 0x2000 && cp <= 0x2BFF) || (cp >= 0x3000 && cp <= 0x303F) ||
                           (cp >= 0xFF00 && cp <= 0xFF0F) || (cp >= 0x1F000 && cp <= 0x1FAFF);
  return !latin1_symbol && !punctuation && cp != 0xD7 && cp != 0xF7;
}

namespace {

// The run holding cp, or null.
const unicode_tables::CaseRun* find_run(std::span<const unicode_tables::CaseRun> runs,
                                        char32_t cp) {
  auto it = std::upper_bound(runs.begin(), runs.end(), cp,
                             [](char32_t c, const auto& run) { return c < run.first; });
  if (it == runs.begin()) return nullptr;
  const auto& run = *(it - 1);
  const char32_t offset = cp - run.first;
  if (offset % run.stride != 0 || offset / run.stride >= run.count) return nullptr;
  return &run;
}

void append_mapped(char32_t cp, std::span<const unicode_tables::CaseSpecial> special,
                   std::span<const unicode_tables::CaseRun> runs, std::string& out) {
  auto it = std::lower_bound(special.begin(), special.end(), cp,
                             [](const auto& entry, char32_t c) { return entry.cp < c; });
  if (it != special.end() && it->cp == cp) {
    for (char32_t mapped : it->mapped) {
      if (mapped != 0) append_utf8(mapped, out);
    }
    return;
  }
  const auto* run = find_run(runs, cp);
  append_utf8(run ? static_cast<char32_t>(static_cast<int32_t>(cp) + run->delta) : cp, out);
}

}  // namespace

void append_upper(char32_t cp, std::string& out) {
  append_mapped(cp, unicode_tables::UpperSpecial, unicode_tables::UpperRuns, out);
}

void append_lower(char32_t cp, std::string& out) {
  append_mapped(cp, unicode_tables::LowerSpecial, unicode_tables::LowerRuns, out);
}

void append_title(char32_t cp, std::string& out) {
  append_mapped(cp, unicode_tables::TitleSpecial, unicode_tables::TitleRuns, out);
}

bool is_upper(char32_t cp) { return find_run(unicode_tables::UpperChars, cp) != nullptr; }
bool is_lower(char32_t cp) { return find_run(unicode_tables::LowerChars, cp) != nullptr; }
bool is_title(char32_t cp) { return find_run(unicode_tables::TitleChars, cp) != nullptr; }
bool is_cased(char32_t cp) { return is_upper(cp) || is_lower(cp) || is_title(cp); }
bool is_case_ignorable(char32_t cp) {
  return find_run(unicode_tables::CaseIgnorable, cp) != nullptr;
}

}  // namespace tandem::jinja
