// UTF-8 and the Unicode properties Python's str methods need (whitespace, case, classes).
// Invalid UTF-8 never throws: each bad byte reads as one code point of its own value.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/utf8_encode.h"  // append_utf8

namespace tandem::jinja {

// Decodes the code point at s[pos] and advances pos past it.
char32_t decode_utf8(std::string_view s, size_t& pos);
bool is_valid_utf8(std::string_view s);

// Python's len(): the number of code points.
size_t code_point_count(std::string_view s);
// The byte offset of every code point, plus s.size() at the end (size count + 1).
std::vector<size_t> code_point_offsets(std::string_view s);

// str.isspace(): ASCII whitespace, \x1c-\x1f, \x85, \xa0 and the Unicode space separators.
bool is_space(char32_t cp);
// Python's character classes of one code point, from the Unicode database of the Python
// that generated unicode_tables.inc: str.isalpha() (letters), isdecimal() (Nd), isdigit()
// (decimal digits and others such as superscripts), isnumeric() (any numeric value),
// isalnum() (any of the four) and isprintable() (what repr() leaves unescaped).
bool is_alpha(char32_t cp);
bool is_decimal(char32_t cp);
bool is_digit(char32_t cp);
bool is_numeric(char32_t cp);
bool is_alnum(char32_t cp);
bool is_printable(char32_t cp);
// Python's \w in re for str patterns: isalnum() or '_'.
bool is_word_char(char32_t cp);
// A decimal digit's value (0-9, for every script's digits, as Python's int() reads them),
// or -1 where cp is not one.
int decimal_value(char32_t cp);
// Python's full case mappings of one code point (str.upper(), lower(), title() of it; "ß"
// upper-cases to "SS") and its case properties, from the Unicode database of the Python
// that generated unicode_tables.inc. Lower-casing a capital sigma needs its context: see
// string_ops.h.
void append_upper(char32_t cp, std::string& out);
void append_lower(char32_t cp, std::string& out);
void append_title(char32_t cp, std::string& out);
bool is_upper(char32_t cp);  // str.isupper() of the code point
bool is_lower(char32_t cp);  // str.islower()
bool is_title(char32_t cp);  // a title-case letter (Lt), e.g. "ǅ"
bool is_cased(char32_t cp);  // upper, lower or title
bool is_case_ignorable(char32_t cp);

}  // namespace tandem::jinja
