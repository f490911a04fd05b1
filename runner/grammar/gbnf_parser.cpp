// GBNF (llama.cpp's grammar format) -> GrammarBuilder, a recursive-descent parser that
// follows llama.cpp's grammar-parser: the same tokens, escapes and newline rules. The
// syntax is summarized at parse_gbnf() in grammar.h.

#include <charconv>
#include <optional>
#include <unordered_map>

#include "runner/grammar/grammar.h"
#include "runner/tokenizer/utf8.h"

namespace tandem::grammar {

namespace {

constexpr int kMaxNesting = 128;
constexpr uint32_t kMaxRepetition = 10000;

bool is_word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_';
}

// A character for an error message: itself when printable ASCII, else its hex value.
std::string describe(char c) {
  if (c >= 0x21 && c <= 0x7E) return std::string("'") + c + "'";
  static const char kHex[] = "0123456789ABCDEF";
  const auto byte = static_cast<uint8_t>(c);
  return std::string("byte 0x") + kHex[byte >> 4] + kHex[byte & 15];
}

class GbnfParser {
 public:
  GbnfParser(std::string_view text, const BuildLimits& limits) : text_(text), limits_(limits) {}

  std::shared_ptr<const Grammar> parse() {
    skip_space(true);
    while (pos_ < text_.size()) parse_rule();
    const auto root = b_.find_rule("root");
    if (!root || !b_.defined(*root)) throw GrammarError("gbnf: the grammar has no 'root' rule");
    std::optional<std::pair<size_t, RuleId>> undefined;  // the first one in the text
    for (const auto& [rule, pos] : first_use_) {
      if (!b_.defined(rule) && (!undefined || pos < undefined->first)) undefined = {pos, rule};
    }
    if (undefined)
      fail(undefined->first, "undefined rule '" + b_.rule_name(undefined->second) + "'");
    try {
      return b_.build(*root, limits_);
    } catch (const GrammarError& e) {
      throw GrammarError(std::string("gbnf: ") + e.what());
    }
  }

 private:
  [[noreturn]] void fail(size_t pos, const std::string& message) const {
    size_t line = 1, line_start = 0;
    for (size_t i = 0; i < pos && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        line_start = i + 1;
      }
    }
    throw GrammarError("gbnf: line " + std::to_string(line) + ", column " +
                       std::to_string(pos - line_start + 1) + ": " + message);
  }

  char peek(size_t ahead = 0) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
  }
  bool at_end() const { return pos_ >= text_.size(); }

  // Spaces, tabs and # comments; newlines too when `newlines`.
  void skip_space(bool newlines) {
    while (!at_end()) {
      const char c = peek();
      if (c == ' ' || c == '\t') {
        ++pos_;
      } else if (c == '#') {
        while (!at_end() && peek() != '\n' && peek() != '\r') ++pos_;
      } else if (newlines && (c == '\n' || c == '\r')) {
        ++pos_;
      } else {
        break;
      }
    }
  }

  std::string_view parse_name() {
    const size_t start = pos_;
    while (!at_end() && is_word_char(peek())) ++pos_;
    if (pos_ == start) fail(start, "expected a rule name");
    return text_.substr(start, pos_ - start);
  }

  void parse_rule() {
    const size_t start = pos_;
    const std::string_view name = parse_name();
    skip_space(false);
    if (text_.substr(pos_, 3) != "::=") fail(pos_, "expected '::='");
    pos_ += 3;
    skip_space(true);
    const RuleId rule = b_.rule(name);
    if (b_.defined(rule)) fail(start, "rule '" + std::string(name) + "' is defined twice");
    b_.define(rule, parse_alternatives(false, 0));
    if (peek() == '\r') ++pos_;
    if (peek() == '\n')
      ++pos_;
    else if (!at_end())
      fail(pos_, "expected a newline or the end, found " + describe(peek()));
    skip_space(true);
  }

  ExprId parse_alternatives(bool nested, int depth) {
    std::vector<ExprId> alternatives{parse_sequence(nested, depth)};
    while (peek() == '|') {
      ++pos_;
      skip_space(true);
      alternatives.push_back(parse_sequence(nested, depth));
    }
    return b_.choice(std::move(alternatives));
  }

  ExprId parse_sequence(bool nested, int depth) {
    std::vector<ExprId> items;
    while (!at_end()) {
      const size_t start = pos_;
      const char c = peek();
      if (c == '*' || c == '+' || c == '?' || c == '{') {
        if (items.empty()) fail(start, describe(c) + " must follow an item");
        items.back() = parse_repetition(items.back());
      } else if (c == '"' || c == '[' || c == '.' || c == '(' || is_word_char(c)) {
        items.push_back(parse_primary(depth));
      } else if (c == '<' || c == '!') {
        fail(start, "token references (<...>, !<...>) are not supported");
      } else {
        break;
      }
      skip_space(nested);
    }
    return b_.sequence(std::move(items));
  }

  ExprId parse_primary(int depth) {
    const size_t start = pos_;
    const char c = peek();
    if (c == '"') return parse_literal();
    if (c == '[') return parse_class();
    if (c == '.') {
      ++pos_;
      return b_.any_codepoint();
    }
    if (c == '(') {
      if (depth >= kMaxNesting) fail(start, "groups nested too deeply");
      ++pos_;
      skip_space(true);
      const ExprId inner = parse_alternatives(true, depth + 1);
      if (peek() != ')') fail(pos_, "expected ')'");
      ++pos_;
      return inner;
    }
    const RuleId rule = b_.rule(parse_name());
    first_use_.try_emplace(rule, start);
    return b_.ref(rule);
  }

  ExprId parse_repetition(ExprId item) {
    const char c = peek();
    ++pos_;
    if (c == '*') return b_.star(item);
    if (c == '+') return b_.plus(item);
    if (c == '?') return b_.optional(item);
    skip_space(false);
    const uint32_t min = parse_count();
    uint32_t max = min;
    skip_space(false);
    if (peek() == ',') {
      ++pos_;
      skip_space(false);
      max = peek() == '}' ? GrammarBuilder::kUnbounded : parse_count();
      skip_space(false);
    }
    if (peek() != '}') fail(pos_, "expected '}'");
    ++pos_;
    if (min > max) fail(pos_ - 1, "repetition minimum above its maximum");
    return b_.repeat(item, min, max);
  }

  uint32_t parse_count() {
    const size_t start = pos_;
    while (!at_end() && peek() >= '0' && peek() <= '9') ++pos_;
    uint32_t n = 0;
    const auto [end, error] = std::from_chars(text_.data() + start, text_.data() + pos_, n);
    if (start == pos_) fail(start, "expected a number");
    if (error != std::errc() || n > kMaxRepetition)
      fail(start, "repetition count above " + std::to_string(kMaxRepetition));
    return n;
  }

  ExprId parse_literal() {
    ++pos_;  // the opening quote
    std::string bytes;
    while (peek() != '"') {
      if (at_end()) fail(pos_, "unterminated string literal");
      append_utf8(bytes, parse_char());
    }
    ++pos_;
    return b_.literal(bytes);
  }

  ExprId parse_class() {
    ++pos_;  // [
    bool negated = false;
    if (peek() == '^') {
      negated = true;
      ++pos_;
    }
    std::vector<CodepointRange> ranges;
    while (peek() != ']') {
      if (at_end()) fail(pos_, "unterminated character class");
      const char32_t first = parse_char();
      char32_t last = first;
      if (peek() == '-' && peek(1) != ']' && pos_ + 1 < text_.size()) {
        ++pos_;
        const size_t at = pos_;
        last = parse_char();
        if (last < first) fail(at, "character range out of order");
      }
      ranges.push_back({first, last});
    }
    ++pos_;
    ranges = GrammarBuilder::normalize(std::move(ranges));
    return b_.codepoints(negated ? GrammarBuilder::complement(ranges) : ranges);
  }

  char32_t parse_hex(int digits) {
    const size_t start = pos_;
    char32_t value = 0;
    for (int i = 0; i < digits; ++i) {
      const char c = peek();
      int v = -1;
      if (c >= '0' && c <= '9') v = c - '0';
      if (c >= 'a' && c <= 'f') v = c - 'a' + 10;
      if (c >= 'A' && c <= 'F') v = c - 'A' + 10;
      if (v < 0) fail(pos_, "expected " + std::to_string(digits) + " hex digits");
      value = value * 16 + static_cast<char32_t>(v);
      ++pos_;
    }
    if (value > 0x10FFFF) fail(start, "code point above U+10FFFF");
    return value;
  }

  // One character of a literal or class: an escape or one UTF-8 encoded code point.
  char32_t parse_char() {
    const size_t start = pos_;
    if (peek() == '\\') {
      ++pos_;
      if (at_end()) fail(start, "unterminated escape");
      const char c = peek();
      ++pos_;
      switch (c) {
        case 'x':
          return parse_hex(2);
        case 'u':
          return parse_hex(4);
        case 'U':
          return parse_hex(8);
        case 'n':
          return '\n';
        case 'r':
          return '\r';
        case 't':
          return '\t';
        case '\\':
        case '"':
        case '[':
        case ']':
        case '-':
          return static_cast<char32_t>(c);
        default:
          fail(start, "unknown escape \\" + describe(c));
      }
    }
    return decode_utf8(start);
  }

  char32_t decode_utf8(size_t start) {
    const auto lead = static_cast<uint8_t>(peek());
    const int length = lead < 0x80 ? 1 : lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 0;
    if (length == 0 || pos_ + static_cast<size_t>(length) > text_.size())
      fail(start, "invalid UTF-8");
    char32_t cp = length == 1 ? lead : lead & (0x7F >> length);
    for (int i = 1; i < length; ++i) {
      const auto cont = static_cast<uint8_t>(text_[pos_ + static_cast<size_t>(i)]);
      if ((cont & 0xC0) != 0x80) fail(start, "invalid UTF-8");
      cp = (cp << 6) | (cont & 0x3F);
    }
    static constexpr char32_t kMinimum[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMinimum[length] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
      fail(start, "invalid UTF-8");
    pos_ += static_cast<size_t>(length);
    return cp;
  }

  void append_utf8(std::string& out, char32_t cp) {
    if (cp >= 0xD800 && cp <= 0xDFFF) fail(pos_, "a surrogate code point cannot be matched");
    out += utf8::encode(cp);
  }

  std::string_view text_;
  const BuildLimits& limits_;
  size_t pos_ = 0;
  GrammarBuilder b_;
  std::unordered_map<RuleId, size_t> first_use_;
};

}  // namespace

std::shared_ptr<const Grammar> parse_gbnf(std::string_view text, const BuildLimits& limits) {
  return GbnfParser(text, limits).parse();
}

}  // namespace tandem::grammar
