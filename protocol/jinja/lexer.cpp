#include "protocol/jinja/lexer.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstdlib>

#include "protocol/jinja/error.h"
#include "protocol/jinja/unicode.h"

namespace tandem::jinja {
namespace {

bool is_ws(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
bool is_ascii_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_name_char(char c) { return is_name_start(c) || is_ascii_digit(c); }

std::string normalize_newlines(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out += source[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

class Lexer {
 public:
  explicit Lexer(std::string_view source) : src_(normalize_newlines(source)) {
    line_starts_.push_back(0);
    for (size_t i = 0; i < src_.size(); ++i) {
      if (src_[i] == '\n') line_starts_.push_back(i + 1);
    }
  }

  std::vector<Token> run() {
    while (pos_ < src_.size()) lex_text_and_tag();
    tokens_.push_back(make(TokenType::kEnd, "", src_.size()));
    return std::move(tokens_);
  }

 private:
  Token make(TokenType type, std::string value, size_t at) const {
    Token token;
    token.type = type;
    token.value = std::move(value);
    const auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), at);
    token.line = static_cast<int>(it - line_starts_.begin());
    token.column = static_cast<int>(at - *(it - 1)) + 1;
    return token;
  }

  [[noreturn]] void error(const std::string& message, size_t at) const {
    const Token where = make(TokenType::kEnd, "", at);
    throw Error(ErrorKind::kSyntax, message, where.line, where.column);
  }

  size_t find_tag(size_t from) const {
    for (size_t i = src_.find('{', from); i != std::string::npos; i = src_.find('{', i + 1)) {
      if (i + 1 < src_.size() && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) {
        return i;
      }
    }
    return std::string::npos;
  }

  // The text before a tag, with "-" or lstrip_blocks applied.
  void emit_text(std::string text, size_t at, char kind, char modifier) {
    if (modifier == '-') {
      while (!text.empty() && is_ws(text.back())) text.pop_back();
    } else if (kind != '{' && modifier != '+') {
      const size_t line_pos = text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1;
      const bool only_blanks = text.find_first_not_of(" \t", line_pos) == std::string::npos;
      if ((line_pos > 0 || line_starting_) && only_blanks) text.resize(line_pos);
    }
    if (!text.empty()) tokens_.push_back(make(TokenType::kData, std::move(text), at));
  }

  void lex_text_and_tag() {
    const size_t start = find_tag(pos_);
    if (start == std::string::npos) {
      tokens_.push_back(make(TokenType::kData, src_.substr(pos_), pos_));
      pos_ = src_.size();
      return;
    }
    const char kind = src_[start + 1];
    const char modifier = start + 2 < src_.size() ? src_[start + 2] : '\0';
    const bool has_modifier = modifier == '-' || (modifier == '+' && kind != '{');
    emit_text(src_.substr(pos_, start - pos_), pos_, kind, has_modifier ? modifier : '\0');
    pos_ = start + 2 + (has_modifier ? 1 : 0);
    if (kind == '#') {
      lex_comment(start);
    } else if (kind == '%' && lex_raw(start)) {
      return;
    } else {
      lex_tag(kind == '{', start);
    }
  }

  // After a tag's closing characters: "-" eats all whitespace, a block's end one newline.
  void after_tag_end(bool strip, bool trim_newline) {
    if (strip) {
      while (pos_ < src_.size() && is_ws(src_[pos_])) ++pos_;
    } else if (trim_newline && pos_ < src_.size() && src_[pos_] == '\n') {
      ++pos_;
    }
    line_starting_ = pos_ > 0 && src_[pos_ - 1] == '\n';
  }

  void lex_comment(size_t start) {
    const size_t end = src_.find("#}", pos_);
    if (end == std::string::npos) error("missing end of comment tag", start);
    const char before = end > pos_ ? src_[end - 1] : '\0';
    pos_ = end + 2;
    after_tag_end(before == '-', before != '+');
  }

  // {% raw %}...{% endraw %}: the body is text. Returns false when the tag is not raw.
  bool lex_raw(size_t start) {
    size_t p = pos_;
    while (p < src_.size() && is_ws(src_[p])) ++p;
    if (src_.compare(p, 3, "raw") != 0 || (p + 3 < src_.size() && is_name_char(src_[p + 3]))) {
      return false;
    }
    p += 3;
    while (p < src_.size() && is_ws(src_[p])) ++p;
    const bool strip_after = p < src_.size() && src_[p] == '-';
    if (p < src_.size() && (src_[p] == '-' || src_[p] == '+')) ++p;
    if (src_.compare(p, 2, "%}") != 0) error("expected '%}' after 'raw'", p);
    pos_ = p + 2;
    after_tag_end(strip_after, false);
    for (size_t q = src_.find("{%", pos_); q != std::string::npos; q = src_.find("{%", q + 1)) {
      size_t r = q + 2;
      const char modifier = r < src_.size() ? src_[r] : '\0';
      if (modifier == '-' || modifier == '+') ++r;
      while (r < src_.size() && is_ws(src_[r])) ++r;
      if (src_.compare(r, 6, "endraw") != 0) continue;
      emit_text(src_.substr(pos_, q - pos_), pos_, '%', modifier);
      r += 6;
      while (r < src_.size() && is_ws(src_[r])) ++r;
      const char end_modifier = r < src_.size() ? src_[r] : '\0';
      if (end_modifier == '-' || end_modifier == '+') ++r;
      if (src_.compare(r, 2, "%}") != 0) error("expected '%}' after 'endraw'", r);
      pos_ = r + 2;
      after_tag_end(end_modifier == '-', end_modifier != '+');
      return true;
    }
    error("missing '{% endraw %}' for this raw block", start);
  }

  // Whether the tag ends at pos_; consumes the end and what whitespace control takes.
  bool at_tag_end(bool variable) {
    const std::string_view close = variable ? "}}" : "%}";
    const char c = src_[pos_];
    const bool strip = c == '-' && src_.compare(pos_ + 1, 2, close) == 0;
    const bool keep = !variable && c == '+' && src_.compare(pos_ + 1, 2, close) == 0;
    if (!strip && !keep && src_.compare(pos_, 2, close) != 0) return false;
    tokens_.push_back(make(variable ? TokenType::kVariableEnd : TokenType::kBlockEnd, "", pos_));
    pos_ += (strip || keep) ? 3 : 2;
    after_tag_end(strip, !variable && !keep);
    return true;
  }

  void lex_tag(bool variable, size_t start) {
    tokens_.push_back(
        make(variable ? TokenType::kVariableBegin : TokenType::kBlockBegin, "", start));
    std::vector<char> brackets;
    while (true) {
      while (pos_ < src_.size() && is_ws(src_[pos_])) ++pos_;
      if (pos_ >= src_.size()) {
        error(variable ? "unexpected end of template, expected '}}'"
                       : "unexpected end of template, expected '%}'",
              start);
      }
      if (brackets.empty() && at_tag_end(variable)) return;
      lex_token(brackets);
    }
  }

  void lex_token(std::vector<char>& brackets) {
    const char c = src_[pos_];
    if (c == '\'' || c == '"') return lex_string();
    if (is_ascii_digit(c)) return lex_number();
    if (is_name_start(c)) {
      const size_t begin = pos_;
      while (pos_ < src_.size() && is_name_char(src_[pos_])) ++pos_;
      tokens_.push_back(make(TokenType::kName, src_.substr(begin, pos_ - begin), begin));
      return;
    }
    lex_operator(brackets);
  }

  void lex_operator(std::vector<char>& brackets) {
    static constexpr std::array<std::string_view, 6> kTwo = {"**", "//", "==", "!=", "<=", ">="};
    static constexpr std::string_view kOne = "+-*/%~<>=.:|,;()[]{}";
    for (std::string_view op : kTwo) {
      if (src_.compare(pos_, 2, op) == 0) {
        tokens_.push_back(make(TokenType::kOperator, std::string(op), pos_));
        pos_ += 2;
        return;
      }
    }
    const char c = src_[pos_];
    if (kOne.find(c) == std::string_view::npos) {
      error(std::string("unexpected character '") + c + "'", pos_);
    }
    if (c == '(' || c == '[' || c == '{') brackets.push_back(c);
    if (c == ')' || c == ']' || c == '}') {
      const char open = c == ')' ? '(' : c == ']' ? '[' : '{';
      if (brackets.empty() || brackets.back() != open) {
        error(std::string("unexpected '") + c + "'", pos_);
      }
      brackets.pop_back();
    }
    tokens_.push_back(make(TokenType::kOperator, std::string(1, c), pos_));
    ++pos_;
  }

  void lex_number() {
    const size_t begin = pos_;
    const bool after_dot = !tokens_.empty() && tokens_.back().type == TokenType::kOperator &&
                           tokens_.back().value == ".";
    if (src_[pos_] == '0' && pos_ + 1 < src_.size() &&
        std::string_view("bBoOxX").find(src_[pos_ + 1]) != std::string_view::npos) {
      return lex_prefixed_integer();
    }
    auto digits = [&] {
      while (pos_ < src_.size() && (is_ascii_digit(src_[pos_]) || src_[pos_] == '_')) ++pos_;
    };
    digits();
    bool is_float = false;
    if (!after_dot && pos_ + 1 < src_.size() && src_[pos_] == '.' &&
        is_ascii_digit(src_[pos_ + 1])) {
      is_float = true;
      ++pos_;
      digits();
    }
    if (!after_dot && pos_ < src_.size() && (src_[pos_] == 'e' || src_[pos_] == 'E')) {
      size_t p = pos_ + 1;
      if (p < src_.size() && (src_[p] == '+' || src_[p] == '-')) ++p;
      if (p < src_.size() && is_ascii_digit(src_[p])) {
        is_float = true;
        pos_ = p;
        digits();
      }
    }
    std::string text;
    for (size_t i = begin; i < pos_; ++i) {
      if (src_[i] != '_') text += src_[i];
    }
    Token token = make(is_float ? TokenType::kFloat : TokenType::kInteger, text, begin);
    if (is_float) {
      token.number = std::strtod(text.c_str(), nullptr);
    } else {
      errno = 0;
      token.integer = std::strtoll(text.c_str(), nullptr, 10);
      if (errno == ERANGE) error("integer literal beyond 64 bits", begin);
    }
    tokens_.push_back(std::move(token));
  }

  void lex_prefixed_integer() {
    const size_t begin = pos_;
    const char base_char = static_cast<char>(src_[pos_ + 1] | 0x20);
    const int base = base_char == 'b' ? 2 : base_char == 'o' ? 8 : 16;
    pos_ += 2;
    std::string digits;
    while (pos_ < src_.size() &&
           (std::isxdigit(static_cast<unsigned char>(src_[pos_])) || src_[pos_] == '_')) {
      if (src_[pos_] != '_') digits += src_[pos_];
      ++pos_;
    }
    char* end = nullptr;
    errno = 0;
    Token token = make(TokenType::kInteger, src_.substr(begin, pos_ - begin), begin);
    token.integer = std::strtoll(digits.c_str(), &end, base);
    if (digits.empty() || *end != '\0' || errno == ERANGE) error("bad integer literal", begin);
    tokens_.push_back(std::move(token));
  }

  void lex_string() {
    const size_t begin = pos_;
    const char quote = src_[pos_++];
    std::string raw;
    while (pos_ < src_.size() && src_[pos_] != quote) {
      if (src_[pos_] == '\\' && pos_ + 1 < src_.size()) raw += src_[pos_++];
      raw += src_[pos_++];
    }
    if (pos_ >= src_.size()) error("unterminated string", begin);
    ++pos_;
    tokens_.push_back(make(TokenType::kString, unescape(raw, begin), begin));
  }

  // Python's "unicode-escape" decoding, as Jinja2 applies it to string literals.
  std::string unescape(std::string_view raw, size_t at) const;

  std::string src_;
  std::vector<size_t> line_starts_;
  std::vector<Token> tokens_;
  size_t pos_ = 0;
  bool line_starting_ = true;
};

std::string Lexer::unescape(std::string_view raw, size_t at) const {
  std::string out;
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] != '\\' || i + 1 >= raw.size()) {
      out += raw[i];
      continue;
    }
    const char c = raw[++i];
    const std::string_view simple = "\\\\''\"\"a\ab\bf\fn\nr\rt\tv\v";
    const size_t k = simple.find(c);
    if (k != std::string_view::npos && k % 2 == 0) {
      out += simple[k + 1];
    } else if (c == '\n') {
    } else if (c >= '0' && c <= '7') {
      size_t len = 1;
      while (len < 3 && i + len < raw.size() && raw[i + len] >= '0' && raw[i + len] <= '7') ++len;
      append_utf8(
          static_cast<char32_t>(std::strtol(std::string(raw.substr(i, len)).c_str(), nullptr, 8)),
          out);
      i += len - 1;
    } else if (c == 'x' || c == 'u' || c == 'U') {
      const size_t len = c == 'x' ? 2 : c == 'u' ? 4 : 8;
      const std::string hex(raw.substr(i + 1, len));
      char* end = nullptr;
      const long cp = std::strtol(hex.c_str(), &end, 16);
      if (hex.size() != len || *end != '\0' || cp > 0x10FFFF || (cp >= 0xD800 && cp < 0xE000)) {
        error(std::string("bad \\") + c + " escape in string literal", at);
      }
      append_utf8(static_cast<char32_t>(cp), out);
      i += len;
    } else if (c == 'N' || static_cast<unsigned char>(c) >= 0x80) {
      error("unsupported escape in string literal", at);
    } else {
      out += '\\';
      out += c;
    }
  }
  return out;
}

}  // namespace

std::vector<Token> tokenize(std::string_view source) {
  if (!is_valid_utf8(source)) {
    throw Error(ErrorKind::kSyntax, "the template source is not valid UTF-8");
  }
  return Lexer(source).run();
}

}  // namespace tandem::jinja
