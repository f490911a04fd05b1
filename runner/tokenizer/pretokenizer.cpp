#include "runner/tokenizer/pretokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <stdexcept>

#include "runner/gguf/gguf.h"

namespace tandem {

namespace {

// llama.cpp's llama-vocab.cpp, with the case-insensitive contraction group spelled out
// as it does there. GPT-2's regex gets the trailing \s+ that tokenizer.json's has; llama.cpp
// matches that behaviour in its hand-written splitter.
constexpr std::string_view kGpt2Regex =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
constexpr std::string_view kLlama3Regex =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kQwen2Regex =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kDigitRegex = R"(\p{N})";
constexpr std::string_view kSmollmRegex =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";

PreTokenizerKind kind_for(std::string_view name) {
  if (name.empty() || name == "default" || name == "gpt2" || name == "gpt-2" || name == "phi-2" ||
      name == "mpt" || name == "olmo")
    return PreTokenizerKind::kGpt2;
  if (name == "llama3" || name == "llama-v3" || name == "llama-bpe" || name == "falcon3")
    return PreTokenizerKind::kLlama3;
  if (name == "qwen2" || name == "deepseek-r1-qwen") return PreTokenizerKind::kQwen2;
  if (name == "smollm" || name == "starcoder" || name == "refact") return PreTokenizerKind::kSmollm;
  throw gguf::GgufError("unknown pre-tokenizer tokenizer.ggml.pre = '" + std::string(name) + "'");
}

}  // namespace

struct PreTokenizer::Pattern {
  pcre2_code* code = nullptr;

  explicit Pattern(std::string_view regex) {
    int error = 0;
    PCRE2_SIZE error_offset = 0;
    // UCP: \s, \d and friends follow Unicode properties, as in the HF tokenizers' regexes.
    // MATCH_INVALID_UTF: invalid bytes match nothing instead of failing the whole match.
    code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(regex.data()), regex.size(),
                         PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &error, &error_offset,
                         nullptr);
    if (code == nullptr) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(error, message, sizeof(message));
      throw std::logic_error("pre-tokenizer regex does not compile: " +
                             std::string(reinterpret_cast<const char*>(message)));
    }
    // Without JIT (a platform that lacks it) PCRE2 interprets the pattern: slower, same result.
    pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
  }
  ~Pattern() { pcre2_code_free(code); }
  Pattern(const Pattern&) = delete;
  Pattern& operator=(const Pattern&) = delete;

  // Appends the pieces of `text`: each match, and each stretch between matches.
  void split(std::string_view text, pcre2_match_data* match,
             std::vector<std::string_view>& out) const {
    const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
    size_t pos = 0;
    size_t unmatched_from = 0;
    while (pos < text.size()) {
      const int rc = pcre2_match(code, subject, text.size(), pos, 0, match, nullptr);
      if (rc == PCRE2_ERROR_NOMATCH) break;
      if (rc < 0) {
        PCRE2_UCHAR message[256];
        pcre2_get_error_message(rc, message, sizeof(message));
        throw std::runtime_error("pre-tokenizer: " +
                                 std::string(reinterpret_cast<const char*>(message)));
      }
      const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match);
      const size_t begin = ovector[0];
      const size_t end = ovector[1];
      if (end == begin) {  // none of the patterns matches empty; guard anyway
        pos = begin + 1;
        continue;
      }
      if (begin > unmatched_from)
        out.push_back(text.substr(unmatched_from, begin - unmatched_from));
      out.push_back(text.substr(begin, end - begin));
      pos = unmatched_from = end;
    }
    if (unmatched_from < text.size()) out.push_back(text.substr(unmatched_from));
  }
};

PreTokenizer::PreTokenizer(std::string_view pre_name) : kind_(kind_for(pre_name)) {
  switch (kind_) {
    case PreTokenizerKind::kGpt2:
      patterns_.push_back(std::make_unique<Pattern>(kGpt2Regex));
      break;
    case PreTokenizerKind::kLlama3:
      patterns_.push_back(std::make_unique<Pattern>(kLlama3Regex));
      break;
    case PreTokenizerKind::kQwen2:
      patterns_.push_back(std::make_unique<Pattern>(kQwen2Regex));
      break;
    case PreTokenizerKind::kSmollm:
      patterns_.push_back(std::make_unique<Pattern>(kDigitRegex));
      patterns_.push_back(std::make_unique<Pattern>(kSmollmRegex));
      break;
  }
}

PreTokenizer::~PreTokenizer() = default;
PreTokenizer::PreTokenizer(PreTokenizer&&) noexcept = default;
PreTokenizer& PreTokenizer::operator=(PreTokenizer&&) noexcept = default;

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
