#include "runner/grammar/vocabulary.h"

#include <algorithm>

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
  build_trie();
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

}  // namespace tandem::grammar
