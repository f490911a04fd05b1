// Python's case mappings and case properties, generated into unicode_tables.cpp by
// scripts/gen_unicode_case_tables.py. Internal to protocol/jinja/unicode.cpp.
#pragma once

#include <cstdint>
#include <span>

namespace tandem::jinja::unicode_tables {

// The code points first, first + stride, ... (count of them); for a mapping, each maps
// to itself + delta. Runs are sorted by first and their spans never overlap.
struct CaseRun {
  char32_t first;
  uint16_t count;
  int32_t delta;
  uint8_t stride;
};

// A code point whose mapping is several code points (trailing zeros unused).
struct CaseSpecial {
  char32_t cp;
  char32_t mapped[3];
};

extern const std::span<const CaseRun> UpperRuns;  // str.upper(), one-to-one
extern const std::span<const CaseRun> LowerRuns;
extern const std::span<const CaseRun> TitleRuns;
extern const std::span<const CaseSpecial> UpperSpecial;  // one-to-many ("ß" -> "SS")
extern const std::span<const CaseSpecial> LowerSpecial;
extern const std::span<const CaseSpecial> TitleSpecial;
extern const std::span<const CaseRun> LowerChars;  // str.islower() of the code point
extern const std::span<const CaseRun> UpperChars;  // str.isupper()
extern const std::span<const CaseRun> TitleChars;  // title-case letters (Lt)
extern const std::span<const CaseRun> CaseIgnorable;

}  // namespace tandem::jinja::unicode_tables
