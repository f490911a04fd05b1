// `pattern`: the regex subset stated in ../json_schema.h, parsed into the same expressions
// as everything else. Each character class becomes the JSON-string spelling of its
// characters (SchemaCompiler::json_chars), so the pattern constrains the decoded string.
// The same parser, raw (compile_regex), constrains a whole output: each class becomes its
// characters' UTF-8 bytes, and the regex is anchored at both ends (full match).

#include "runner/grammar/json_schema/compiler.h"

namespace tandem::grammar::json_schema {

namespace {

constexpr uint32_t kMaxCount = 1000;

using Set = std::vector<CodepointRange>;

const Set kDigit = {{'0', '9'}};
const Set kWord = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
const Set kSpace = {{'\t', '\r'},     {' ', ' '},       {0xA0, 0xA0},     {0x1680, 0x1680},
                    {0x2000, 0x200A}, {0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F},
                    {0x3000, 0x3000}, {0xFEFF, 0xFEFF}};
const Set kDot = {{0, '\n' - 1}, {'\n' + 1, '\r' - 1}, {'\r' + 1, 0x2027}, {0x202A, 0x10FFFF}};

Set complement(Set s) {
  return GrammarBuilder::complement(GrammarBuilder::normalize(std::move(s)));
}

// Parses a regex into expressions in `b`. With a SchemaCompiler (`pattern`), classes are
// JSON string content and errors read "json_schema: at PATH: pattern: ..."; without one
// (raw), classes are raw UTF-8 and errors read "regex: ...".
class Regex {
 public:
  Regex(SchemaCompiler& c, std::string_view pattern, const std::string& path)
      : c_(&c), b_(c.builder()), path_(path) {
    decode(pattern);
  }
  Regex(GrammarBuilder& b, std::string_view pattern) : b_(b) { decode(pattern); }

  // `pattern`: anchored only where ^ / $ say, as JSON Schema specifies.
  ExprId compile() {
    const bool anchored_start = peek() == '^';
    if (anchored_start) ++i_;
    const ExprId body = alternation(0);
    if (i_ < p_.size()) fail("unbalanced ')'");
    const ExprId any = b_.star(c_ != nullptr ? c_->string_char() : b_.any_codepoint());
    return b_.sequence({anchored_start ? b_.empty() : any, body, anchored_end_ ? b_.empty() : any});
  }

  // A whole output: anchored at both ends; a leading ^ and a trailing $ add nothing.
  ExprId compile_full_match() {
    if (peek() == '^') ++i_;
    const ExprId body = alternation(0);
    if (i_ < p_.size()) fail("unbalanced ')'");
    return body;
  }

 private:
  void decode(std::string_view pattern) {
    for (size_t i = 0; i < pattern.size();) {
      const auto lead = static_cast<uint8_t>(pattern[i]);
      const size_t n = lead < 0x80 ? 1 : lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 0;
      if (n == 0 || i + n > pattern.size()) fail("not valid UTF-8");
      char32_t cp = n == 1 ? lead : lead & (0x7F >> n);
      for (size_t k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<uint8_t>(pattern[i + k]) & 0x3F);
      p_.push_back(cp);
      i += n;
    }
  }

  [[noreturn]] void fail(const std::string& message) const {
    if (c_ != nullptr) c_->fail(path_, "pattern: " + message);
    throw GrammarError("regex: " + message);
  }
  // One character of `set`: JSON string content for a pattern, raw UTF-8 for a regex.
  ExprId chars(const Set& set) { return c_ != nullptr ? c_->json_chars(set) : b_.codepoints(set); }
  char32_t peek(size_t ahead = 0) const { return i_ + ahead < p_.size() ? p_[i_ + ahead] : 0; }
  bool at_end() const { return i_ >= p_.size(); }

  ExprId alternation(int depth) {
    if (depth > 64) fail("groups nested too deeply");
    std::vector<ExprId> items{sequence(depth)};
    while (!at_end() && peek() == '|') {
      ++i_;
      items.push_back(sequence(depth));
    }
    return b_.choice(std::move(items));
  }

  ExprId sequence(int depth) {
    std::vector<ExprId> items;
    while (!at_end() && peek() != '|' && peek() != ')') {
      if (peek() == '$') {
        if (depth == 0 && i_ + 1 == p_.size()) {
          anchored_end_ = true;
          ++i_;
          break;
        }
        fail("'$' is supported only at the very end");
      }
      if (peek() == '^') fail("'^' is supported only at the very start");
      items.push_back(quantified(atom(depth)));
    }
    return b_.sequence(std::move(items));
  }

  ExprId quantified(ExprId atom) {
    uint32_t min = 1, max = 1;
    const char32_t c = peek();
    if (c == '*' || c == '+' || c == '?') {
      ++i_;
      min = c == '+' ? 1 : 0;
      max = c == '?' ? 1 : GrammarBuilder::kUnbounded;
    } else if (c != '{' || !braces(min, max)) {
      return atom;
    }
    if (peek() == '?') ++i_;  // lazy: the same strings match
    if (peek() == '*' || peek() == '+' || peek() == '?' || (peek() == '{' && is_quantifier_at(i_)))
      fail("a quantifier cannot follow a quantifier");
    if (min > max) fail("a {n,m} quantifier has n above m");
    return b_.repeat(atom, min, max);
  }

  bool is_quantifier_at(size_t at) const {
    uint32_t min, max;
    size_t end;
    return parse_braces(at, min, max, end);
  }

  // {n} {n,} {n,m} starting at p_[at]; false when the brace there is not a quantifier.
  bool parse_braces(size_t at, uint32_t& min, uint32_t& max, size_t& end) const {
    size_t j = at + 1;
    const auto number = [&](uint32_t& out) {
      const size_t start = j;
      uint64_t v = 0;
      while (j < p_.size() && p_[j] >= '0' && p_[j] <= '9')
        v = std::min<uint64_t>(v * 10 + (p_[j++] - '0'), uint64_t{1} << 30);
      out = static_cast<uint32_t>(v);
      return j > start;
    };
    if (!number(min)) return false;
    max = min;
    if (j < p_.size() && p_[j] == ',') {
      ++j;
      if (!number(max)) max = GrammarBuilder::kUnbounded;
    }
    if (j >= p_.size() || p_[j] != '}') return false;
    if (min > kMaxCount || (max != GrammarBuilder::kUnbounded && max > kMaxCount))
      fail("a quantifier count above " + std::to_string(kMaxCount));
    end = j + 1;
    return true;
  }

  bool braces(uint32_t& min, uint32_t& max) {
    size_t end;
    if (!parse_braces(i_, min, max, end)) return false;
    i_ = end;
    return true;
  }

  ExprId group(int depth) {
    ++i_;  // (
    if (peek() == '?') {
      if (peek(1) == ':') {
        i_ += 2;
      } else if (peek(1) == '<' && peek(2) != '=' && peek(2) != '!') {
        i_ += 2;
        while (!at_end() && peek() != '>') ++i_;
        ++i_;
      } else if (peek(1) == '=' || peek(1) == '!' || peek(1) == '<') {
        fail("lookaround is not supported");
      } else {
        fail("inline flags and other (?...) groups are not supported");
      }
    }
    const ExprId inner = alternation(depth + 1);
    if (peek() != ')') fail("missing ')'");
    ++i_;
    return inner;
  }

  ExprId atom(int depth) {
    const char32_t c = peek();
    if (c == '(') return group(depth);
    if (c == '[') return chars(char_class());
    ++i_;
    if (c == '.') return chars(kDot);
    if (c == '*' || c == '+' || c == '?')
      fail("nothing to repeat before '" + std::string(1, static_cast<char>(c)) + "'");
    if (c == '{' && is_quantifier_at(i_ - 1)) fail("nothing to repeat before '{'");
    if (c == '\\') return chars(escape(false));
    return chars({{c, c}});
  }

  // The set an escape stands for (inside a class when `in_class`: \b is backspace there).
  Set escape(bool in_class) {
    if (at_end()) fail("a trailing '\\' escapes nothing");
    const char32_t c = peek();
    ++i_;
    switch (c) {
      case 'd':
        return kDigit;
      case 'D':
        return complement(kDigit);
      case 'w':
        return kWord;
      case 'W':
        return complement(kWord);
      case 's':
        return kSpace;
      case 'S':
        return complement(kSpace);
      case 't':
        return {{'\t', '\t'}};
      case 'n':
        return {{'\n', '\n'}};
      case 'r':
        return {{'\r', '\r'}};
      case 'f':
        return {{'\f', '\f'}};
      case 'v':
        return {{'\v', '\v'}};
      case '0':
        return {{0, 0}};
      case 'x':
        return single(hex(2));
      case 'u':
        return single(surrogate_pair(hex(4)));
      case 'b':
        if (in_class) return {{'\b', '\b'}};
        fail("word boundaries (\\b) are not supported");
      case 'B':
        fail("word boundaries (\\B) are not supported");
      case 'p':
      case 'P':
        fail("Unicode property escapes (\\p{...}) are not supported");
      case 'k':
        fail("named backreferences are not supported");
      default:
        break;
    }
    if (c >= '1' && c <= '9') fail("backreferences are not supported");
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
      fail("unsupported escape '\\" + std::string(1, static_cast<char>(c)) + "'");
    return {{c, c}};
  }

  static Set single(char32_t v) { return {{v, v}}; }

  // A high surrogate's escape followed by a low one's is the one code point they encode,
  // as ECMAScript reads "\uD83D\uDE00" (with or without the u flag, it matches "😀"); a
  // lone surrogate stays itself (no decoded string holds one, so it matches nothing).
  char32_t surrogate_pair(char32_t high) {
    if (high < 0xD800 || high > 0xDBFF || peek() != '\\' || peek(1) != 'u') return high;
    char32_t low = 0;
    for (size_t k = 2; k < 6; ++k) {
      const char32_t c = peek(k);
      const bool digit = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
      if (!digit) return high;
      low = low * 16 + static_cast<char32_t>(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
    }
    if (low < 0xDC00 || low > 0xDFFF) return high;
    i_ += 6;
    return 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);
  }

  char32_t hex(int digits) {
    char32_t v = 0;
    for (int k = 0; k < digits; ++k) {
      const char32_t c = peek();
      int d = -1;
      if (c >= '0' && c <= '9') d = static_cast<int>(c - '0');
      if (c >= 'a' && c <= 'f') d = static_cast<int>(c - 'a' + 10);
      if (c >= 'A' && c <= 'F') d = static_cast<int>(c - 'A' + 10);
      if (d < 0) fail("expected " + std::to_string(digits) + " hex digits");
      v = v * 16 + static_cast<char32_t>(d);
      ++i_;
    }
    return v;
  }

  Set char_class() {
    ++i_;  // [
    const bool negated = peek() == '^';
    if (negated) ++i_;
    Set set;
    while (peek() != ']') {
      if (at_end()) fail("unterminated character class");
      Set first = class_atom();
      if (peek() == '-' && peek(1) != ']' && i_ + 1 < p_.size()) {
        ++i_;
        const Set last = class_atom();
        if (first.size() != 1 || last.size() != 1 || first[0].first != first[0].last ||
            last[0].first != last[0].last)
          fail("a class range needs single characters at both ends");
        if (last[0].first < first[0].first) fail("a class range out of order");
        first = {{first[0].first, last[0].first}};
      }
      set.insert(set.end(), first.begin(), first.end());
    }
    ++i_;
    set = GrammarBuilder::normalize(std::move(set));
    return negated ? GrammarBuilder::complement(set) : set;
  }

  Set class_atom() {
    const char32_t c = peek();
    ++i_;
    if (c == '\\') return escape(true);
    return {{c, c}};
  }

  SchemaCompiler* c_ = nullptr;
  GrammarBuilder& b_;
  std::string path_;
  std::u32string p_;
  size_t i_ = 0;
  bool anchored_end_ = false;
};

}  // namespace

ExprId compile_pattern(SchemaCompiler& c, const std::string& pattern, const std::string& path) {
  return Regex(c, pattern, path).compile();
}

}  // namespace tandem::grammar::json_schema

namespace tandem::grammar {

std::shared_ptr<const Grammar> compile_regex(std::string_view regex, const BuildLimits& limits) {
  GrammarBuilder b;
  const ExprId start = json_schema::Regex(b, regex).compile_full_match();
  return json_schema::build_root(b, start, limits, "regex", "no text matches the regex");
}

}  // namespace tandem::grammar
