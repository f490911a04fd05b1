// A model's vocabulary as the grammar engine sees it: each token's bytes (what the
// detokenizer emits for it), the end-of-generation ids, and a trie over the byte strings
// laid out in pre-order, so that a walk visits a node's subtree as one contiguous run and
// skips it with one jump when the grammar rejects the node's prefix.
//
// Tokens with no bytes (control tokens: BOS, EOS, <|im_start|>; Tokenizer::token_bytes
// gives them "") are never in the trie, so no mask ever allows them. End-of-generation ids
// are never in the trie either, whatever their bytes: a mask allows them exactly when the
// grammar accepts (Matcher::fill_mask). Built once per model; immutable, thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tandem {
class Tokenizer;
}

namespace tandem::grammar {

class Vocabulary {
 public:
  // `token_bytes[id]` is token id's bytes; `end_of_generation` lists the ids that end
  // generation (they get no bytes here, whatever their text).
  Vocabulary(std::vector<std::string> token_bytes, std::vector<int32_t> end_of_generation);
  // token_bytes(id, render_special = false) for every id, and the tokenizer's eog_ids().
  static std::shared_ptr<const Vocabulary> from_tokenizer(const Tokenizer& tokenizer);

  int32_t size() const { return static_cast<int32_t>(bytes_.size()); }
  // Words of a mask: bit (id % 32) of word (id / 32) stands for token id.
  size_t mask_words() const { return (bytes_.size() + 31) / 32; }
  std::string_view bytes(int32_t id) const { return bytes_[static_cast<size_t>(id)]; }
  std::span<const int32_t> end_of_generation() const { return end_of_generation_; }
  size_t max_token_length() const { return max_length_; }

  // The trie, in pre-order; node 0 is the root (the empty prefix).
  size_t trie_size() const { return trie_byte_.size(); }
  uint8_t trie_byte(size_t node) const { return trie_byte_[node]; }
  uint32_t trie_depth(size_t node) const { return trie_depth_[node]; }
  // One past the node's last descendant.
  uint32_t trie_subtree_end(size_t node) const { return trie_end_[node]; }
  // The tokens spelled by the node's prefix are token_order()[first_token(node),
  // first_token(node + 1)); those of its whole subtree end at first_token(subtree_end).
  uint32_t first_token(size_t node) const { return trie_first_token_[node]; }
  std::span<const int32_t> token_order() const { return token_order_; }
  // How many characters of plain text (plain_text.h) the tokens below the node spell
  // after it, at most; plain_text::kUnlimited when one of them is not plain text there.
  uint8_t trie_text_chars(size_t node) const { return trie_text_chars_[node]; }
  // The most characters any token's bytes start (the walk's search depth).
  uint8_t max_token_chars() const { return max_chars_; }
  // The tokens that are plain text of at most `chars` characters (1 <= chars; more than
  // max_token_chars() counts as max_token_chars()), as a mask: a walk from a state that
  // reads any such text starts from it.
  std::span<const uint32_t> plain_tokens(uint8_t chars) const;

 private:
  void build_trie();
  void measure_text();
  void index_plain_tokens();

  std::vector<std::string> bytes_;
  std::vector<int32_t> end_of_generation_;
  size_t max_length_ = 0;
  std::vector<uint8_t> trie_byte_;
  std::vector<uint32_t> trie_depth_;
  std::vector<uint32_t> trie_end_;
  std::vector<uint32_t> trie_first_token_;  // one more entry than nodes
  std::vector<int32_t> token_order_;
  std::vector<uint8_t> trie_text_chars_;
  uint8_t max_chars_ = 0;
  std::vector<uint32_t> plain_tokens_;  // max_chars_ masks, the k-th for k + 1 characters
};

}  // namespace tandem::grammar
