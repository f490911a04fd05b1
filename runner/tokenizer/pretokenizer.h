// The pre-tokenizer of byte-level BPE: splits text into the pieces that merges stay
// within, using llama.cpp's regex list for each tokenizer.ggml.pre, run by PCRE2 (Unicode
// properties, JIT-compiled). Which names share which regexes, and the settings that come
// with a name, are data (pretokenizer_table.cpp). Immutable after construction; split()
// is thread-safe.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace tandem {

struct PreTokenizerFamily;

class PreTokenizer {
 public:
  // Throws gguf::GgufError naming an unknown (or known but unsupported) pre-tokenizer and
  // listing the supported names, on one line.
  explicit PreTokenizer(std::string_view pre_name);
  ~PreTokenizer();
  PreTokenizer(PreTokenizer&&) noexcept;
  PreTokenizer& operator=(PreTokenizer&&) noexcept;

  // llama.cpp's settings that come with the name. ignore_merges: a piece that is a whole
  // vocabulary token is taken as is (Llama 3, Tekken, ...). add_bos_by_default: BOS is
  // added when tokenizer.ggml.add_bos_token is absent.
  bool ignore_merges() const;
  bool add_bos_by_default() const;
  // The regexes (PCRE2 syntax), in the order they apply.
  const std::vector<std::string>& regexes() const;

  // Every name the constructor accepts, in table order ("" is the absent key).
  static std::vector<std::string_view> supported_names();

  // Splits `text` into non-empty pieces that concatenate back to it. Bytes that are not
  // valid UTF-8 match no pattern and come out in pieces of their own.
  std::vector<std::string_view> split(std::string_view text) const;

 private:
  struct Pattern;  // one compiled PCRE2 regex
  const PreTokenizerFamily* family_;
  // Applied in order, each within the pieces the previous one made (as llama.cpp does).
  std::vector<std::unique_ptr<Pattern>> patterns_;
};

}  // namespace tandem
