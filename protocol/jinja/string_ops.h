// Python's str methods on Text, keeping each byte's origin (see text.h): what the
// filters and the string methods share.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "protocol/jinja/text.h"

namespace tandem::jinja {

enum class StripSide { kBoth, kLeft, kRight };
// str.strip([chars]): chars nullopt strips Unicode whitespace.
Text strip(const Text& text, std::optional<std::string_view> chars, StripSide side);
// str.split(sep, maxsplit) and str.rsplit; sep nullopt splits on whitespace runs.
std::vector<Text> split(const Text& text, std::optional<std::string_view> sep, int64_t maxsplit,
                        bool from_right = false);
// str.splitlines(keepends)
std::vector<Text> splitlines(const Text& text, bool keepends = false);
// str.replace(old, new, count); count < 0: all.
Text replace(const Text& text, std::string_view old, const Text& replacement, int64_t count);
Text join(const std::vector<Text>& parts, const Text& separator);

enum class CaseMap {
  kUpper,
  kLower,
  kSwap,
  kTitle,       // str.title()
  kCapitalize,  // str.capitalize()
  kJinjaTitle,  // Jinja2's title filter: words start after whitespace, '-', '(', '{', '[', '<'
};
Text map_case(const Text& text, CaseMap mode);
// str.islower() and str.isupper().
bool is_lower_text(std::string_view s);
bool is_upper_text(std::string_view s);

// Python's str.count / str.find / str.rfind on code points: the index, or -1.
int64_t find(const Text& text, std::string_view needle, bool from_right);
int64_t count(const Text& text, std::string_view needle);

}  // namespace tandem::jinja
