// What the SentencePiece and byte-level BPE tokenizers share: the token table and its
// lookup, special ids, splitting special-token text out before the model-specific
// encoding, and the bytes each token decodes to. Immutable after construction.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "runner/tokenizer/tokenizer.h"
#include "runner/tokenizer/vocab.h"

namespace tandem {

struct StringHash {
  using is_transparent = void;  // lookups by string_view without building a string
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using TokenIndex = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

class VocabularyTokenizer : public Tokenizer {
 public:
  std::vector<int32_t> encode(std::string_view text, bool add_special,
                              bool parse_special) const final;
  std::vector<int32_t> encode(std::string_view text, bool add_special,
                              std::span<const Range> special_ranges) const final;
  std::string token_bytes(int32_t id, bool render_special = false) const final;
  int32_t vocab_size() const final { return static_cast<int32_t>(tokens_.size()); }
  int32_t bos_id() const final { return bos_id_; }
  int32_t eos_id() const final { return eos_id_; }
  int32_t eot_id() const final { return eot_id_; }
  const std::vector<int32_t>& eog_ids() const final { return eog_ids_; }
  bool add_bos() const final { return add_bos_; }
  const std::string& token_text(int32_t id) const final;
  int32_t find_token(std::string_view text) const final;

 protected:
  // `decoded_piece` turns a normal token's text into the bytes it stands for.
  VocabularyTokenizer(const TokenizerVocab& vocab, bool add_bos_default,
                      const std::function<std::string(const std::string&)>& decoded_piece);

  // Encodes text that holds no special token. `after_special` is true at the start of
  // the input and right after a special token (SentencePiece adds its space prefix there).
  virtual void encode_text(std::string_view text, bool after_special,
                           std::vector<int32_t>& out) const = 0;

  TokenType type(int32_t id) const { return types_[static_cast<size_t>(id)]; }
  const TokenIndex& index() const { return index_; }
  int32_t unk_id() const { return unk_id_; }

 private:
  void find_marked_tokens(const TokenizerVocab& vocab);
  void find_fim_tokens(const FimTokens& named);
  struct Fragment {
    int32_t token;  // -1 for raw text
    std::string_view text;
  };
  // Which control-token matches to split out: all, none, or those inside given ranges.
  struct SpecialPolicy {
    bool all = false;
    std::span<const Range> ranges;
    bool allows(size_t begin, size_t end) const;
  };
  std::vector<Fragment> split_special(std::string_view text, SpecialPolicy policy) const;
  std::vector<int32_t> encode_split(std::string_view text, bool add_special,
                                    SpecialPolicy policy) const;

  std::vector<std::string> tokens_;
  std::vector<TokenType> types_;
  std::vector<std::string> pieces_;  // decoded bytes, "" for control tokens
  TokenIndex index_;
  std::vector<int32_t> special_ids_;  // control, user-defined, unknown: longest text first
  std::vector<bool> rstrip_;          // per id: whitespace after it is dropped
  std::vector<int32_t> eog_ids_;
  int32_t bos_id_;
  int32_t eos_id_;
  int32_t eot_id_ = -1;  // tokenizer.ggml.eot_token_id, when it names a token
  int32_t unk_id_;
  bool add_bos_;
  bool add_eos_;
};

// The two models (tokenizer_spm.cpp, tokenizer_bpe.cpp); make_tokenizer picks one.
std::unique_ptr<Tokenizer> make_sentencepiece_tokenizer(const TokenizerVocab& vocab);
std::unique_ptr<Tokenizer> make_byte_level_bpe_tokenizer(const TokenizerVocab& vocab);

}  // namespace tandem
