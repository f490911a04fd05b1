#include "runner/tokenizer/pretokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <stdexcept>

#include "runner/gguf/gguf.h"
#include "runner/tokenizer/pretokenizer_table.h"
#include "runner/tokenizer/utf8.h"

namespace tandem {

namespace {

std::string supported_list() {
  std::string names;
  for (std::string_view name : PreTokenizer::supported_names()) {
    if (name.empty()) continue;  // the absent key, not a name to write
    if (!names.empty()) names += ", ";
    names += name;
  }
  return names;
}

const PreTokenizerFamily& family_for(std::string_view name) {
  for (const PreTokenizerFamily& family : pre_tokenizer_families())
    for (std::string_view known : family.names)
      if (known == name) return family;
  std::string why = "is not a pre-tokenizer tandem knows";
  for (const UnsupportedPreTokenizer& unsupported : unsupported_pre_tokenizers())
    if (unsupported.name == name) why = "is not supported: " + std::string(unsupported.reason);
  throw gguf::GgufError("tokenizer.ggml.pre = '" + std::string(name) + "' " + why +
                        " (supported: " + supported_list() + ")");
}

// The tokenizer.json regexes mean \s as HF's engine (Oniguruma) and llama.cpp read it, the
// White_Space property: \t-\r, U+0085 and the separators (Z). PCRE2's UCP \s takes \h's
// U+180E too (a format character since Unicode 6.3), which split " \u180eb" where they
// keep " \u180e" whole (QA S). So each \s becomes that class, spelled out (inside a class,
// its members; \S, never inside one here, the negated class).
constexpr std::string_view kWhiteSpace = R"(\t-\r\x{85}\p{Z})";

std::string with_white_space(std::string_view regex) {
  std::string out;
  bool in_class = false;
  for (size_t i = 0; i < regex.size(); ++i) {
    const char c = regex[i];
    if (c == '\\' && i + 1 < regex.size()) {
      const char next = regex[++i];
      // Quoted text (\Q...\E), where \s is no class, is beyond this walk.
      if (next == 'Q') throw std::logic_error("pre-tokenizer regex: \\Q is not supported");
      if (next == 's') {
        out += in_class ? std::string(kWhiteSpace) : "[" + std::string(kWhiteSpace) + "]";
      } else if (next == 'S') {
        if (in_class) throw std::logic_error("pre-tokenizer regex: \\S inside a class");
        out += "[^" + std::string(kWhiteSpace) + "]";
      } else {
        out += c;
        out += next;
      }
      continue;
    }
    if (c == '[') {
      // A ']' first in a class, or a POSIX class, would end the class early in this walk.
      const std::string_view rest = regex.substr(i);
      if (rest.starts_with("[]") || rest.starts_with("[^]") || rest.starts_with("[:"))
        throw std::logic_error("pre-tokenizer regex: a class this rewrite cannot follow");
      in_class = true;
    } else if (c == ']' && in_class) {
      in_class = false;
    }
    out += c;
  }
  return out;
}

pcre2_code* compile(std::string_view regex, uint32_t extra_options = 0) {
  int error = 0;
  PCRE2_SIZE error_offset = 0;
  // UCP: \s, \d and friends follow Unicode properties, as in the HF tokenizers' regexes.
  // MATCH_INVALID_UTF: invalid bytes match nothing instead of failing the whole match.
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(regex.data()), regex.size(),
                                   PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF | extra_options,
                                   &error, &error_offset, nullptr);
  if (code == nullptr) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof(message));
    throw std::logic_error("pre-tokenizer regex does not compile: " +
                           std::string(reinterpret_cast<const char*>(message)));
  }
  // Without JIT (a platform that lacks it) PCRE2 interprets the pattern: slower, same result.
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
  return code;
}

// pcre2_match, with a retry on the interpreter when a match backtracks deeper than JIT's
// stack (the interpreter keeps that on the heap). Returns false on no match.
bool find(const pcre2_code* code, std::string_view text, size_t pos, uint32_t options,
          pcre2_match_data* match) {
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  int rc = pcre2_match(code, subject, text.size(), pos, options, match, nullptr);
  if (rc == PCRE2_ERROR_JIT_STACKLIMIT)
    rc = pcre2_match(code, subject, text.size(), pos, options | PCRE2_NO_JIT, match, nullptr);
  if (rc == PCRE2_ERROR_NOMATCH) return false;
  if (rc < 0) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(rc, message, sizeof(message));
    throw std::runtime_error("pre-tokenizer: " +
                             std::string(reinterpret_cast<const char*>(message)));
  }
  return true;
}

}  // namespace

struct PreTokenizer::Pattern {
  enum class Mode {
    kRegex,
    kDigitGroups,  // kDigitGroupsRegex: each group of a run is a match
    kDigitSplits,  // kDigitSplitsRegex: an empty match before each group but the first
  };
  Mode mode = Mode::kRegex;
  pcre2_code* code = nullptr;  // the regex; \d+ (the digit runs) in the digit modes
  // kDigitGroups: a word character, anchored (is there a \b after a run?), as Oniguruma's
  // \w: letters, marks, numbers and connector punctuation. PCRE2 10.42's UCP \w leaves out
  // marks and all but '_' of Pc, so "1234\u0301" was grouped 1|234 where HF gives 123|4.
  pcre2_code* word = nullptr;

  explicit Pattern(const std::string& regex) {
    if (regex == kDigitGroupsRegex) mode = Mode::kDigitGroups;
    if (regex == kDigitSplitsRegex) mode = Mode::kDigitSplits;
    code = compile(mode == Mode::kRegex ? with_white_space(regex) : R"(\d+)");
    if (mode == Mode::kDigitGroups) word = compile(R"([\p{L}\p{M}\p{N}\p{Pc}])", PCRE2_ANCHORED);
  }
  ~Pattern() {
    pcre2_code_free(code);
    pcre2_code_free(word);
  }
  Pattern(const Pattern&) = delete;
  Pattern& operator=(const Pattern&) = delete;

  void split(std::string_view text, pcre2_match_data* match,
             std::vector<std::string_view>& out) const {
    if (mode == Mode::kRegex)
      split_by_regex(text, match, out);
    else
      split_digit_runs(text, match, out);
  }

  // Appends the pieces of `text`: each non-empty match, and each stretch between matches.
  // An empty match (a lookahead) splits the text where it matches; the search then goes on
  // from there as Python's finditer does: a non-empty match may start at the same place,
  // another empty one only a character later.
  void split_by_regex(std::string_view text, pcre2_match_data* match,
                      std::vector<std::string_view>& out) const {
    size_t pos = 0;
    size_t unmatched_from = 0;
    bool after_empty = false;
    while (pos < text.size()) {
      const uint32_t options = after_empty ? PCRE2_NOTEMPTY_ATSTART | PCRE2_ANCHORED : 0;
      if (!find(code, text, pos, options, match)) {
        if (!after_empty) break;
        pos += utf8::character_length(text.substr(pos));
        after_empty = false;
        continue;
      }
      const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match);
      const size_t begin = ovector[0];
      const size_t end = ovector[1];
      if (begin > unmatched_from)
        out.push_back(text.substr(unmatched_from, begin - unmatched_from));
      if (end > begin) out.push_back(text.substr(begin, end - begin));
      pos = unmatched_from = end;
      after_empty = end == begin;
    }
    if (unmatched_from < text.size()) out.push_back(text.substr(unmatched_from));
  }

  // The digit modes, by arithmetic on each run of \d found: the groups are its last
  // characters in threes and what is left before them. kDigitGroups matches only a run
  // that a \b ends (the lookahead's \b: no \w after it); kDigitSplits needs no such thing.
  void split_digit_runs(std::string_view text, pcre2_match_data* match,
                        std::vector<std::string_view>& out) const {
    size_t unmatched_from = 0;
    std::vector<size_t> group_starts;
    for (size_t pos = 0; pos < text.size() && find(code, text, pos, 0, match);) {
      const size_t begin = pcre2_get_ovector_pointer(match)[0];
      const size_t end = pcre2_get_ovector_pointer(match)[1];
      pos = end;
      if (mode == Mode::kDigitGroups && end < text.size() && find(word, text, end, 0, match))
        continue;                 // no \b after the run: no group of it matches
      std::vector<size_t> chars;  // byte offset of each character of the run
      for (size_t at = begin; at < end; at += utf8::character_length(text.substr(at)))
        chars.push_back(at);
      group_starts.clear();
      for (size_t k = chars.size() % 3; k < chars.size(); k += 3)
        if (k > 0) group_starts.push_back(chars[k]);
      if (mode == Mode::kDigitGroups) {
        group_starts.insert(group_starts.begin(), begin);
        group_starts.push_back(end);
      }
      for (size_t cut : group_starts) {
        if (cut > unmatched_from) out.push_back(text.substr(unmatched_from, cut - unmatched_from));
        unmatched_from = cut;
      }
    }
    if (unmatched_from < text.size()) out.push_back(text.substr(unmatched_from));
  }
};

PreTokenizer::PreTokenizer(std::string_view pre_name) : family_(&family_for(pre_name)) {
  for (const std::string& regex : family_->regexes)
    patterns_.push_back(std::make_unique<Pattern>(regex));
}

PreTokenizer::~PreTokenizer() = default;
PreTokenizer::PreTokenizer(PreTokenizer&&) noexcept = default;
PreTokenizer& PreTokenizer::operator=(PreTokenizer&&) noexcept = default;

bool PreTokenizer::ignore_merges() const { return family_->ignore_merges; }
bool PreTokenizer::add_bos_by_default() const { return family_->add_bos; }
const std::vector<std::string>& PreTokenizer::regexes() const { return family_->regexes; }

std::vector<std::string_view> PreTokenizer::supported_names() {
  std::vector<std::string_view> names;
  for (const PreTokenizerFamily& family : pre_tokenizer_families())
    names.insert(names.end(), family.names.begin(), family.names.end());
  return names;
}

std::vector<std::string_view> PreTokenizer::split(std::string_view text) const {
  std::vector<std::string_view> pieces;
  if (text.empty()) return pieces;
  pieces.push_back(text);
  for (const auto& pattern : patterns_) {
    // Match data is per call, so one PreTokenizer serves many threads.
    std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> match(
        pcre2_match_data_create_from_pattern(pattern->code, nullptr), &pcre2_match_data_free);
    std::vector<std::string_view> next;
    next.reserve(pieces.size() + text.size() / 4);
    for (std::string_view piece : pieces) pattern->split(piece, match.get(), next);
    pieces = std::move(next);
  }
  return pieces;
}

}  // namespace tandem
