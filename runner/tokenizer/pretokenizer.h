// The pre-tokenizer of byte-level BPE: splits text into the pieces that merges stay
// within, using llama.cpp's regexes for each tokenizer.ggml.pre, run by PCRE2 (Unicode
// properties, JIT-compiled). Immutable after construction; split() is thread-safe.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace tandem {

enum class PreTokenizerKind {
  kGpt2,    // "gpt2", "gpt-2", "default", "" (and GPT-2-style families)
  kLlama3,  // "llama3", "llama-v3", "llama-bpe": digits in groups of up to three
  kQwen2,   // "qwen2", "deepseek-r1-qwen": digits one by one
  kSmollm,  // "smollm", "starcoder", "refact": digits one by one, then the GPT-2 regex
};

class PreTokenizer {
 public:
  // Throws gguf::GgufError naming an unknown pre-tokenizer.
  explicit PreTokenizer(std::string_view pre_name);
  ~PreTokenizer();
  PreTokenizer(PreTokenizer&&) noexcept;
  PreTokenizer& operator=(PreTokenizer&&) noexcept;

  PreTokenizerKind kind() const { return kind_; }

  // Splits `text` into non-empty pieces that concatenate back to it. Bytes that are not
  // valid UTF-8 match no pattern and come out in pieces of their own.
  std::vector<std::string_view> split(std::string_view text) const;

 private:
  struct Pattern;  // one compiled PCRE2 regex
  PreTokenizerKind kind_;
  // Applied in order, each within the pieces the previous one made (as llama.cpp does).
  std::vector<std::unique_ptr<Pattern>> patterns_;
};

}  // namespace tandem
