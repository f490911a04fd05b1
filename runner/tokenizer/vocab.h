// The plain data a tokenizer is built from: what a GGUF file's tokenizer.* metadata holds,
// already read. Tokenizer::from_gguf fills one from a file; tests build them in memory.
// make_tokenizer validates it and builds the matching Tokenizer.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runner/tokenizer/tokenizer.h"

namespace tandem {

// tokenizer.ggml.token_type values (llama.cpp's numbering).
enum class TokenType : int32_t {
  kUndefined = 0,
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,      // BOS, EOS, <|im_start|>: matched in text only with parse_special
  kUserDefined = 4,  // added tokens: always matched in text, rendered as their text
  kUnused = 5,
  kByte = 6,  // SentencePiece's <0xXX> byte fallback
};

enum class TokenizerModel {
  kSentencePiece,  // tokenizer.ggml.model = "llama"
  kByteLevelBpe,   // tokenizer.ggml.model = "gpt2"
};

struct TokenizerVocab {
  TokenizerModel model = TokenizerModel::kSentencePiece;
  std::string pre;                  // tokenizer.ggml.pre; "" means the absent key
  std::vector<std::string> tokens;  // the vocabulary; an id is an index
  std::vector<float> scores;        // empty: all 0 (SentencePiece merges by score)
  std::vector<TokenType> types;     // empty: all normal
  std::vector<std::string> merges;  // byte-level BPE: "left right", best rank first; may be empty
  // -1: absent. A SentencePiece vocab without BOS/EOS keys gets llama.cpp's 1 and 2.
  int32_t bos_id = -1;
  int32_t eos_id = -1;
  int32_t eot_id = -1;
  int32_t eom_id = -1;
  int32_t pad_id = -1;
  int32_t unk_id = -1;
  // The FIM ids the metadata names (-1 each where it names none); the tokenizer finds the
  // rest by their text. An id outside the vocabulary is ignored, as llama.cpp does.
  Tokenizer::FimTokens fim;
  // nullopt: the model type's default. add_bos: true for SentencePiece and the llama3
  // pre-tokenizer, false otherwise; add_eos: false; add_space_prefix: true for SentencePiece.
  std::optional<bool> add_bos;
  std::optional<bool> add_eos;
  std::optional<bool> add_space_prefix;
  // Special tokens that swallow the whitespace after them when split out of the text
  // (llama.cpp's RSTRIP attribute; from_gguf sets it for Phi-3 as llama.cpp does).
  std::vector<int32_t> rstrip_ids;
};

// Throws gguf::GgufError naming the problem (sizes that disagree, BOS/EOS out of range,
// an unknown pre-tokenizer).
std::unique_ptr<Tokenizer> make_tokenizer(TokenizerVocab vocab);

}  // namespace tandem
