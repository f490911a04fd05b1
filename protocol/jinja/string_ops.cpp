#include "protocol/jinja/string_ops.h"

#include <algorithm>
#include <string>

#include "protocol/jinja/error.h"
#include "protocol/jinja/operators.h"
#include "protocol/jinja/unicode.h"

namespace tandem::jinja {
namespace {

struct CodePoint {
  char32_t cp;
  size_t begin;
  size_t end;
};

std::vector<CodePoint> code_points(std::string_view s) {
  std::vector<CodePoint> out;
  for (size_t pos = 0; pos < s.size();) {
    const size_t begin = pos;
    const char32_t cp = decode_utf8(s, pos);
    out.push_back({cp, begin, pos});
  }
  return out;
}

std::vector<char32_t> char_set(std::string_view chars) {
  std::vector<char32_t> set;
  for (size_t pos = 0; pos < chars.size();) set.push_back(decode_utf8(chars, pos));
  return set;
}

bool is_line_break(char32_t cp) {
  return cp == '\n' || cp == '\r' || cp == 0x0B || cp == 0x0C || (cp >= 0x1C && cp <= 0x1E) ||
         cp == 0x85 || cp == 0x2028 || cp == 0x2029;
}

// str.split() without a separator: runs of non-whitespace.
std::vector<Text> split_whitespace(const Text& text, int64_t maxsplit, bool from_right) {
  const auto cps = code_points(text.str());
  std::vector<std::pair<size_t, size_t>> words;  // code point index ranges
  for (size_t i = 0; i < cps.size();) {
    while (i < cps.size() && is_space(cps[i].cp)) ++i;
    const size_t start = i;
    while (i < cps.size() && !is_space(cps[i].cp)) ++i;
    if (i > start) words.emplace_back(start, i);
    check_items(words.size());
  }
  if (maxsplit >= 0 && words.size() > static_cast<size_t>(maxsplit) + 1) {
    const auto keep = static_cast<size_t>(maxsplit);
    if (from_right) {
      const size_t merged_end = words[words.size() - keep - 1].second;
      words.erase(words.begin(), words.end() - static_cast<std::ptrdiff_t>(keep) - 1);
      words.front() = {0, merged_end};  // the rest keeps its leading whitespace
    } else {
      words.resize(keep + 1);
      words.back().second = cps.size();
    }
  }
  check_items(words.size());
  std::vector<Text> out;
  for (const auto& [first, last] : words) {
    out.push_back(text.substr(cps[first].begin, cps[last - 1].end - cps[first].begin));
  }
  return out;
}

}  // namespace

Text strip(const Text& text, std::optional<std::string_view> chars, StripSide side) {
  const auto cps = code_points(text.str());
  const auto set = chars ? char_set(*chars) : std::vector<char32_t>{};
  const auto strippable = [&](char32_t cp) {
    return chars ? std::find(set.begin(), set.end(), cp) != set.end() : is_space(cp);
  };
  size_t first = 0;
  size_t last = cps.size();
  if (side != StripSide::kRight) {
    while (first < last && strippable(cps[first].cp)) ++first;
  }
  if (side != StripSide::kLeft) {
    while (last > first && strippable(cps[last - 1].cp)) --last;
  }
  if (first == last) return Text();
  return text.substr(cps[first].begin, cps[last - 1].end - cps[first].begin);
}

std::vector<Text> split(const Text& text, std::optional<std::string_view> sep, int64_t maxsplit,
                        bool from_right) {
  if (!sep) return split_whitespace(text, maxsplit, from_right);
  if (sep->empty()) fail("empty separator");
  const std::string& s = text.str();
  std::vector<size_t> cuts;  // byte positions where a separator starts
  if (!from_right) {
    for (size_t at = s.find(*sep); at != std::string::npos; at = s.find(*sep, at + sep->size())) {
      if (maxsplit >= 0 && cuts.size() == static_cast<size_t>(maxsplit)) break;
      cuts.push_back(at);
    }
  } else {
    size_t end = s.size();
    while (end >= sep->size()) {
      if (maxsplit >= 0 && cuts.size() == static_cast<size_t>(maxsplit)) break;
      const size_t at = s.rfind(*sep, end - sep->size());
      if (at == std::string::npos) break;
      cuts.push_back(at);
      end = at;
    }
    std::reverse(cuts.begin(), cuts.end());
  }
  check_items(cuts.size() + 1);
  std::vector<Text> out;
  size_t pos = 0;
  for (size_t at : cuts) {
    out.push_back(text.substr(pos, at - pos));
    pos = at + sep->size();
  }
  out.push_back(text.substr(pos));
  return out;
}

std::vector<Text> splitlines(const Text& text, bool keepends) {
  const auto cps = code_points(text.str());
  std::vector<Text> out;
  size_t line_start = 0;
  for (size_t i = 0; i < cps.size(); ++i) {
    if (!is_line_break(cps[i].cp)) continue;
    const size_t break_begin = cps[i].begin;
    if (cps[i].cp == '\r' && i + 1 < cps.size() && cps[i + 1].cp == '\n') ++i;
    const size_t end = cps[i].end;
    const size_t content_end = keepends ? end : break_begin;
    check_items(out.size() + 1);
    out.push_back(text.substr(line_start, content_end - line_start));
    line_start = end;
  }
  if (line_start < text.size()) out.push_back(text.substr(line_start));
  return out;
}

Text replace(const Text& text, std::string_view old, const Text& replacement, int64_t count) {
  Text out;
  const std::string& s = text.str();
  int64_t done = 0;
  if (old.empty()) {
    const auto cps = code_points(s);
    for (const CodePoint& cp : cps) {
      if (count < 0 || done < count) {
        out.append(replacement);
        ++done;
      }
      out.append(text, cp.begin, cp.end - cp.begin);
    }
    if (count < 0 || done < count) out.append(replacement);
    return out;
  }
  size_t pos = 0;
  for (size_t at = s.find(old); at != std::string::npos && (count < 0 || done < count);
       at = s.find(old, pos)) {
    out.append(text, pos, at - pos);
    out.append(replacement);
    pos = at + old.size();
    ++done;
  }
  out.append(text, pos, s.size() - pos);
  return out;
}

Text join(const std::vector<Text>& parts, const Text& separator) {
  Text out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out.append(separator);
    out.append(parts[i]);
  }
  return out;
}

namespace {

// Python's final sigma rule: a capital sigma after a cased letter (case-ignorables between)
// and not before one lower-cases to the final form. The string seen is cps[lo, hi).
bool final_sigma(const std::vector<CodePoint>& cps, size_t i, size_t lo, size_t hi) {
  size_t j = i;
  while (j > lo && is_case_ignorable(cps[j - 1].cp)) --j;
  if (j == lo || !is_cased(cps[j - 1].cp)) return false;
  size_t k = i + 1;
  while (k < hi && is_case_ignorable(cps[k].cp)) ++k;
  return k == hi || !is_cased(cps[k].cp);
}

void append_lower_at(const std::vector<CodePoint>& cps, size_t i, std::string& out, size_t lo = 0,
                     size_t hi = std::string::npos) {
  if (cps[i].cp == 0x3A3) {
    append_utf8(final_sigma(cps, i, lo, std::min(hi, cps.size())) ? 0x3C2 : 0x3C3, out);
  } else {
    append_lower(cps[i].cp, out);
  }
}

bool starts_jinja_word(char32_t cp) {
  return is_space(cp) || cp == '-' || cp == '(' || cp == '{' || cp == '[' || cp == '<';
}

// Jinja2's title filter lower-cases each word but its first letter as a string of its own.
void lower_in_jinja_word(const std::vector<CodePoint>& cps, size_t i, std::string& out) {
  size_t first = i;
  while (first > 0 && !starts_jinja_word(cps[first - 1].cp)) --first;
  size_t end = i + 1;
  while (end < cps.size() && !starts_jinja_word(cps[end].cp)) ++end;
  append_lower_at(cps, i, out, first + 1, end);
}

}  // namespace

Text map_case(const Text& text, CaseMap mode) {
  const auto cps = code_points(text.str());
  Text out;
  std::string piece;
  for (size_t i = 0; i < cps.size(); ++i) {
    const char32_t c = cps[i].cp;
    const bool after_cased = i > 0 && is_cased(cps[i - 1].cp);
    piece.clear();
    switch (mode) {
      case CaseMap::kUpper:
        append_upper(c, piece);
        break;
      case CaseMap::kLower:
        append_lower_at(cps, i, piece);
        break;
      case CaseMap::kSwap:
        if (is_upper(c)) {
          append_lower_at(cps, i, piece);
        } else if (is_lower(c)) {
          append_upper(c, piece);
        } else {
          append_utf8(c, piece);
        }
        break;
      case CaseMap::kTitle:
        after_cased ? append_lower_at(cps, i, piece) : append_title(c, piece);
        break;
      case CaseMap::kCapitalize:
        i > 0 ? append_lower_at(cps, i, piece) : append_title(c, piece);
        break;
      case CaseMap::kJinjaTitle:
        if (i == 0 || starts_jinja_word(cps[i - 1].cp)) {
          append_upper(c, piece);
        } else {
          lower_in_jinja_word(cps, i, piece);
        }
        break;
    }
    out.append(piece, text.from_input_at(cps[i].begin));
  }
  return out;
}

namespace {

// str.isupper() (upper) or str.islower(): some cased letter, all of that case.
bool all_cased_as(std::string_view s, bool upper) {
  bool cased = false;
  for (size_t pos = 0; pos < s.size();) {
    const char32_t cp = decode_utf8(s, pos);
    if ((upper ? is_lower(cp) : is_upper(cp)) || is_title(cp)) return false;
    cased = cased || (upper ? is_upper(cp) : is_lower(cp));
  }
  return cased;
}

}  // namespace

bool is_lower_text(std::string_view s) { return all_cased_as(s, false); }
bool is_upper_text(std::string_view s) { return all_cased_as(s, true); }

int64_t find(const Text& text, std::string_view needle, bool from_right) {
  const std::string& s = text.str();
  const size_t at = from_right ? s.rfind(needle) : s.find(needle);
  if (at == std::string::npos) return -1;
  return static_cast<int64_t>(code_point_count(std::string_view(s).substr(0, at)));
}

int64_t count(const Text& text, std::string_view needle) {
  const std::string& s = text.str();
  if (needle.empty()) return static_cast<int64_t>(code_point_count(s)) + 1;
  int64_t n = 0;
  for (size_t at = s.find(needle); at != std::string::npos;
       at = s.find(needle, at + needle.size())) {
    ++n;
  }
  return n;
}

}  // namespace tandem::jinja
