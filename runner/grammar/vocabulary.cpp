#include "runner/grammar/vocabulary.h"

#include <algorithm>
#include <stdexcept>

#include "runner/grammar/plain_text.h"
#include "runner/tokenizer/tokenizer.h"

namespace tandem::grammar {

Vocabulary::Vocabulary(std::vector<std::string> token_bytes, std::vector<int32_t> end_of_generation)
    : bytes_(std::move(token_bytes)), end_of_generation_(std::move(end_of_generation)) {
  std::erase_if(end_of_generation_, [&](int32_t id) { return id < 0 || id >= size(); });
  std::sort(end_of_generation_.begin(), end_of_generation_.end());
  end_of_generation_.erase(std::unique(end_of_generation_.begin(), end_of_generation_.end()),
                           end_of_generation_.end());
  for (int32_t id : end_of_generation_) bytes_[static_cast<size_t>(id)].clear();
  for (const std::string& b : bytes_) max_length_ = std::max(max_length_, b.size());
  // Mask-cache entries keep offsets into tokens as 16 bits.
  if (max_length_ > 65535) throw std::invalid_argument("a token is longer than 65535 bytes");
  build_trie();
  measure_text();
}

std::shared_ptr<const Vocabulary> Vocabulary::from_tokenizer(const Tokenizer& tokenizer) {
  std::vector<std::string> bytes(static_cast<size_t>(tokenizer.vocab_size()));
  for (int32_t id = 0; id < tokenizer.vocab_size(); ++id)
    bytes[static_cast<size_t>(id)] = tokenizer.token_bytes(id, /*render_special=*/false);
  return std::make_shared<const Vocabulary>(std::move(bytes), tokenizer.eog_ids());
}

// Sorting the byte strings puts every prefix before its extensions and siblings in byte
// order, so appending the new suffix of each string in turn creates the nodes in pre-order.
void Vocabulary::build_trie() {
  for (int32_t id = 0; id < size(); ++id)
    if (!bytes_[static_cast<size_t>(id)].empty()) token_order_.push_back(id);
  std::stable_sort(token_order_.begin(), token_order_.end(), [&](int32_t a, int32_t b) {
    return bytes_[static_cast<size_t>(a)] < bytes_[static_cast<size_t>(b)];
  });
  const auto add_node = [&](uint8_t byte, uint32_t depth, uint32_t first_token) {
    trie_byte_.push_back(byte);
    trie_depth_.push_back(depth);
    trie_end_.push_back(0);
    trie_first_token_.push_back(first_token);
  };
  add_node(0, 0, 0);
  std::vector<uint32_t> path{0};  // the nodes of the previous string's prefixes
  std::string_view previous;
  for (size_t i = 0; i < token_order_.size(); ++i) {
    const std::string_view s = bytes_[static_cast<size_t>(token_order_[i])];
    size_t common = 0;
    while (common < s.size() && common < previous.size() && s[common] == previous[common]) ++common;
    while (path.size() > common + 1) {
      trie_end_[path.back()] = static_cast<uint32_t>(trie_byte_.size());
      path.pop_back();
    }
    for (size_t j = common; j < s.size(); ++j) {
      path.push_back(static_cast<uint32_t>(trie_byte_.size()));
      add_node(static_cast<uint8_t>(s[j]), static_cast<uint32_t>(j + 1), static_cast<uint32_t>(i));
    }
    previous = s;
  }
  while (!path.empty()) {
    trie_end_[path.back()] = static_cast<uint32_t>(trie_byte_.size());
    path.pop_back();
  }
  trie_first_token_.push_back(static_cast<uint32_t>(token_order_.size()));
}

// Bottom-up over the trie (reverse pre-order puts children first): for each node and each
// decoder state, the most characters of plain text below it, or kUnlimited when some token
// leaves plain text. A character counts when its first byte is read.
void Vocabulary::measure_text() {
  using plain_text::kStates;
  using plain_text::kUnlimited;
  const size_t n = trie_size();
  std::vector<uint8_t> chars(n * kStates, 0);
  for (size_t node = n; node-- > 0;) {
    for (size_t child = node + 1; child < trie_end_[node]; child = trie_end_[child]) {
      for (int state = 0; state < kStates; ++state) {
        uint8_t& out = chars[node * kStates + static_cast<size_t>(state)];
        const int next = plain_text::next(state, trie_byte_[child]);
        if (next < 0 || out == kUnlimited) {
          out = kUnlimited;
          continue;
        }
        const uint8_t below = chars[child * kStates + static_cast<size_t>(next)];
        const int count = below + (plain_text::starts_character(state) ? 1 : 0);
        // Past 254 characters a count has no room: such text is treated as not plain.
        out = below == kUnlimited || count > 254 ? kUnlimited
                                                 : static_cast<uint8_t>(std::max<int>(out, count));
      }
    }
  }
  trie_text_chars_.resize(n);
  for (size_t node = 0; node < n; ++node) trie_text_chars_[node] = chars[node * kStates];
  // The deepest count a walk needs: characters started by the longest token.
  for (const std::string& b : bytes_) {
    int count = 0;
    for (char c : b) count += (static_cast<uint8_t>(c) & 0xC0) != 0x80;
    if (count <= 254) max_chars_ = static_cast<uint8_t>(std::max<int>(max_chars_, count));
  }
  index_plain_tokens();
}

// Cumulative masks: plain tokens of 1 character, of at most 2, ... of at most max_chars_.
void Vocabulary::index_plain_tokens() {
  const size_t words = mask_words();
  plain_tokens_.assign(words * max_chars_, 0);
  for (int32_t id = 0; id < size(); ++id) {
    const std::string& b = bytes_[static_cast<size_t>(id)];
    int state = plain_text::kBoundary, count = 0;
    for (size_t i = 0; i < b.size() && state >= 0; ++i) {
      count += plain_text::starts_character(state);
      state = plain_text::next(state, static_cast<uint8_t>(b[i]));
    }
    if (state < 0 || count == 0 || count > max_chars_) continue;
    plain_tokens_[static_cast<size_t>(count - 1) * words + static_cast<size_t>(id) / 32] |=
        uint32_t{1} << (id % 32);
  }
  for (size_t k = 1; k < max_chars_; ++k)
    for (size_t w = 0; w < words; ++w)
      plain_tokens_[k * words + w] |= plain_tokens_[(k - 1) * words + w];
}

std::span<const uint32_t> Vocabulary::plain_tokens(uint8_t chars) const {
  const size_t words = mask_words();
  const size_t k = std::min<size_t>(std::max<uint8_t>(chars, 1), max_chars_);
  if (k == 0) return {};
  return {plain_tokens_.data() + (k - 1) * words, words};
}

}  // namespace tandem::grammar
