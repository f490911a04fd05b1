// Tokenizers built from a GGUF file's tokenizer.* metadata:
//   tokenizer.ggml.model = "llama": SentencePiece BPE with byte fallback;
//   tokenizer.ggml.model = "gpt2":  byte-level BPE with a pre-tokenizer chosen by
//                                   tokenizer.ggml.pre (pretokenizer_table.cpp).
// A Tokenizer is immutable after construction and safe to share between threads.
// Detokenizer is per-request state and is not.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runner/gguf/gguf.h"

namespace tandem {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Throws gguf::GgufError naming the problem (missing keys, unknown model type).
  static std::unique_ptr<Tokenizer> from_gguf(const gguf::File& file);

  // Encodes text. With add_special, BOS is prepended when the model's metadata asks for it
  // (tokenizer.ggml.add_bos_token, default per model type) and EOS appended when
  // tokenizer.ggml.add_eos_token says so. With parse_special, the text of control tokens
  // (e.g. "<|im_start|>") is matched and emitted as those tokens; without it, such text is
  // encoded as plain text. User-defined tokens (added tokens that are not special) are
  // always matched, as llama.cpp and Hugging Face tokenizers do.
  virtual std::vector<int32_t> encode(std::string_view text, bool add_special,
                                      bool parse_special) const = 0;
  // A byte range [begin, end) of a text.
  struct Range {
    size_t begin = 0;
    size_t end = 0;
  };
  // Encodes text in which control-token text becomes a control token only where it lies
  // wholly inside one of `special_ranges` (sorted, disjoint); elsewhere it is plain text.
  // Chat prompts use it: the template's own text may open and close turns, text that came
  // from a request never can (law 9), yet the prompt is tokenized as one text, so pieces
  // merge across the seams exactly as in the joined prompt.
  virtual std::vector<int32_t> encode(std::string_view text, bool add_special,
                                      std::span<const Range> special_ranges) const = 0;

  // The raw bytes a token stands for when detokenized: byte tokens give their byte,
  // SentencePiece's U+2581 becomes a space, GPT-2's byte-to-unicode mapping is undone.
  // Control tokens (BOS, EOS, ...) give "" unless render_special. Out-of-range ids give "".
  virtual std::string token_bytes(int32_t id, bool render_special = false) const = 0;

  // Decodes a whole sequence (valid UTF-8; invalid bytes become U+FFFD). SentencePiece
  // drops the single leading space that encoding adds.
  std::string decode(const std::vector<int32_t>& ids, bool render_special = false) const;
  // The pieces laid end to end, as llama.cpp's tokens_to_str (llama-server's /detokenize):
  // SentencePiece's leading space stays, so decoding one token at a time and joining the
  // texts gives the whole. Valid UTF-8 (invalid bytes become U+FFFD).
  std::string join_pieces(const std::vector<int32_t>& ids, bool render_special = false) const;

  virtual int32_t vocab_size() const = 0;
  virtual int32_t bos_id() const = 0;  // -1 when the model has none
  virtual int32_t eos_id() const = 0;  // -1 when the model has none
  // The end-of-turn id the metadata names (tokenizer.ggml.eot_token_id); -1 when none.
  virtual int32_t eot_id() const { return -1; }
  // Every id that ends generation (EOS, EOT, <|im_end|>, ... as the metadata marks them).
  virtual const std::vector<int32_t>& eog_ids() const = 0;
  virtual bool add_bos() const = 0;
  // The text of a token as stored in the vocabulary (for /tokenize with pieces, debugging).
  virtual const std::string& token_text(int32_t id) const = 0;
  // Looks up a token by its exact vocabulary text; -1 when absent.
  virtual int32_t find_token(std::string_view text) const = 0;

  // The fill-in-the-middle tokens llama-server's /infill builds its prompt from; -1 where
  // the model has none. Found as llama.cpp's loader finds them: the ids the GGUF names
  // (tokenizer.ggml.fim_*_token_id, or the deprecated prefix/suffix/middle_token_id), else
  // a token whose text is one of the families' spellings (<|fim_prefix|>, <PRE>, ...).
  struct FimTokens {
    int32_t prefix = -1;
    int32_t suffix = -1;
    int32_t middle = -1;
    int32_t pad = -1;
    int32_t repo = -1;
    int32_t file_sep = -1;
    // /infill needs the three markers; pad, repo and file_sep are optional.
    bool usable() const { return prefix >= 0 && suffix >= 0 && middle >= 0; }
  };
  const FimTokens& fim() const { return fim_; }

 protected:
  // Set by tokenizers built from a vocabulary; a tokenizer without one (a test's) has none.
  FimTokens fim_;

  // Whether decode() drops one leading space (SentencePiece's add_space_prefix).
  virtual bool decode_drops_leading_space() const { return false; }

 private:
  // The pieces laid end to end as valid UTF-8, the first text's leading space dropped when
  // asked: decode and join_pieces differ only there.
  std::string joined(const std::vector<int32_t>& ids, bool render_special,
                     bool drop_leading_space) const;
};

// Incremental detokenization for streaming: push tokens as they are sampled and get
// back the text that is now final. It never returns part of a UTF-8 sequence; bytes
// that cannot start or continue a valid sequence come out as U+FFFD, so the output is
// always valid UTF-8 whatever the model emits. Generated text continues a prompt, so
// unlike decode() it keeps a leading space.
class Detokenizer {
 public:
  // render_special: control tokens give their text (skip_special_tokens false).
  explicit Detokenizer(const Tokenizer& tokenizer, bool render_special = false);

  // Returns the newly final text (possibly empty).
  std::string push(int32_t id);
  // End of stream: an incomplete trailing sequence becomes U+FFFD.
  std::string flush();

 private:
  const Tokenizer* tokenizer_;
  bool render_special_;
  std::string pending_;  // bytes of an incomplete UTF-8 sequence
};

}  // namespace tandem
