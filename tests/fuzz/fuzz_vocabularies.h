// Small SentencePiece and byte-level BPE vocabularies built in memory for the tokenizer
// fuzzers, so they need no model files: every byte is covered (byte tokens / the GPT-2
// byte alphabet), a few hundred merges over common words and scripts give the merge loops
// real work, and control and user-defined tokens exercise special-token splitting.
#pragma once

#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "runner/model/make_model.h"
#include "runner/tokenizer/tokenizer.h"
#include "runner/tokenizer/vocab.h"

namespace tandem::fuzzing {

// Words whose merges the vocabularies learn, in rank order (spaces included on purpose).
inline const std::vector<std::string>& merge_words() {
  static const std::vector<std::string> words = {
      " the",      " and",   "ing",    " of",     " to",   "tion", " in",    "er",
      " is",       "Hello",  " world", " llama",  "  ",    "    ", "\n\n",   "\t",
      "123",       "2024",   "'s",     "'ll",     " über", "ñ",    "日本語", "中文",
      "한국어",    "Привет", "мир",    "العربية", "हिन्दी", "🦙", "😀",      "👩‍👩‍👧",
      "e\xCC\x81", "…",      " —",     "http",    "://",   ".com", "{\"",    "\":",
      "<|",        "|>",     " </",
  };
  return words;
}

// Ranked merges that build each word left to right from its first symbol, spelled with
// `symbols` (one entry per symbol of the word), adding the new tokens to `tokens`.
inline void add_word_merges(const std::vector<std::string>& symbols,
                            std::vector<std::string>& tokens, std::vector<std::string>& merges,
                            std::unordered_set<std::string>& known) {
  if (symbols.empty()) return;
  std::string current = symbols[0];
  for (size_t i = 1; i < symbols.size(); ++i) {
    const std::string merged = current + symbols[i];
    if (known.insert(merged).second) {
      tokens.push_back(merged);
      merges.push_back(current + " " + symbols[i]);
    }
    current = merged;
  }
}

// A gpt2-style vocabulary: the 256 byte tokens, <|bos|>, <|eos|>, the word merges,
// two control tokens and one user-defined token; `pre` picks the pre-tokenizer.
inline std::unique_ptr<Tokenizer> byte_level_bpe_tokenizer(const std::string& pre) {
  TokenizerVocab vocab;
  vocab.model = TokenizerModel::kByteLevelBpe;
  vocab.pre = pre;
  vocab.tokens = make_model::byte_level_tokens();
  std::unordered_set<std::string> known(vocab.tokens.begin(), vocab.tokens.end());
  std::vector<std::string> spelling(vocab.tokens.begin(), vocab.tokens.begin() + 256);
  for (const std::string& word : merge_words()) {
    std::vector<std::string> symbols;
    for (char c : word) symbols.push_back(spelling[static_cast<unsigned char>(c)]);
    add_word_merges(symbols, vocab.tokens, vocab.merges, known);
  }
  vocab.types.assign(vocab.tokens.size(), TokenType::kNormal);
  vocab.types[256] = vocab.types[257] = TokenType::kControl;
  for (auto [text, type] : {std::pair{"<|im_start|>", TokenType::kControl},
                            {"<|im_end|>", TokenType::kControl},
                            {"<tool>", TokenType::kUserDefined}}) {
    vocab.tokens.push_back(text);
    vocab.types.push_back(type);
  }
  vocab.bos_id = 256;
  vocab.eos_id = 257;
  return make_tokenizer(std::move(vocab));
}

// The bytes of each UTF-8 character of `word` (assumed valid), one string per character.
inline std::vector<std::string> utf8_characters(std::string_view word) {
  std::vector<std::string> out;
  for (size_t i = 0; i < word.size();) {
    const auto lead = static_cast<unsigned char>(word[i]);
    const size_t n = lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
    out.emplace_back(word.substr(i, n));
    i += n;
  }
  return out;
}

// A llama-style SentencePiece vocabulary: <unk>, <s>, </s>, the 256 <0xXX> byte tokens,
// every character of the words and their left-to-right prefixes (spaces as U+2581), longer
// pieces scoring higher, and one control token. No user-defined tokens, so that encoding
// without special parsing maps every input byte to exactly one place in the output.
inline std::unique_ptr<Tokenizer> sentencepiece_tokenizer() {
  TokenizerVocab vocab;
  vocab.model = TokenizerModel::kSentencePiece;
  vocab.tokens = {"<unk>", "<s>", "</s>"};
  vocab.types = {TokenType::kUnknown, TokenType::kControl, TokenType::kControl};
  for (int byte = 0; byte < 256; ++byte) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", byte);
    vocab.tokens.push_back(name);
    vocab.types.push_back(TokenType::kByte);
  }
  std::unordered_set<std::string> known(vocab.tokens.begin(), vocab.tokens.end());
  std::vector<std::string> pieces;
  std::vector<std::string> unused_merges;
  for (const std::string& word : merge_words()) {
    std::vector<std::string> symbols = utf8_characters(word);
    for (std::string& s : symbols)
      if (s == " ") s = "\xE2\x96\x81";
    for (const std::string& s : symbols)
      if (known.insert(s).second) pieces.push_back(s);
    add_word_merges(symbols, pieces, unused_merges, known);
  }
  vocab.scores.assign(vocab.tokens.size(), 0.0f);
  for (const std::string& piece : pieces) {
    vocab.tokens.push_back(piece);
    vocab.types.push_back(TokenType::kNormal);
    vocab.scores.push_back(static_cast<float>(piece.size()) - 100.0f);
  }
  vocab.tokens.push_back("<|im_start|>");
  vocab.types.push_back(TokenType::kControl);
  vocab.scores.push_back(0.0f);
  vocab.bos_id = 1;
  vocab.eos_id = 2;
  vocab.unk_id = 0;
  return make_tokenizer(std::move(vocab));
}

}  // namespace tandem::fuzzing
