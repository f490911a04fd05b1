// SentencePiece BPE with byte fallback (tokenizer.ggml.model = "llama"), as llama.cpp's
// llm_tokenizer_spm does it: spaces become U+2581, then adjacent pieces are merged
// greedily, best vocabulary score first, and what no token covers falls back to bytes.

#include <array>
#include <cstdio>
#include <queue>

#include "runner/tokenizer/utf8.h"
#include "runner/tokenizer/vocabulary_tokenizer.h"

namespace tandem {

namespace {

constexpr std::string_view kSpaceMark = "\xE2\x96\x81";  // U+2581, SentencePiece's space

std::string replace_all(std::string_view text, std::string_view from, std::string_view to) {
  std::string out;
  out.reserve(text.size() + text.size() / 2);
  size_t pos = 0;
  for (size_t hit; (hit = text.find(from, pos)) != std::string_view::npos;
       pos = hit + from.size()) {
    out.append(text.substr(pos, hit - pos));
    out.append(to);
  }
  out.append(text.substr(pos));
  return out;
}

class SentencePieceTokenizer final : public VocabularyTokenizer {
 public:
  explicit SentencePieceTokenizer(const TokenizerVocab& vocab)
      : VocabularyTokenizer(
            vocab, /*add_bos_default=*/true,
            [](const std::string& text) { return replace_all(text, kSpaceMark, " "); }),
        scores_(vocab.scores),
        add_space_prefix_(vocab.add_space_prefix.value_or(true)) {
    if (scores_.empty()) scores_.assign(vocab.tokens.size(), 0.0f);
    for (int byte = 0; byte < 256; ++byte) {
      char name[8];
      std::snprintf(name, sizeof(name), "<0x%02X>", byte);
      int32_t id = find_token(name);
      if (id < 0) id = find_token(std::string(1, static_cast<char>(byte)));
      byte_ids_[static_cast<size_t>(byte)] = id >= 0 ? id : unk_id();
    }
  }

 protected:
  bool decode_drops_leading_space() const override { return add_space_prefix_; }

  void encode_text(std::string_view raw, bool after_special,
                   std::vector<int32_t>& out) const override {
    std::string text;
    text.reserve(raw.size() + raw.size() / 2 + kSpaceMark.size());
    if (add_space_prefix_ && after_special) text.append(kSpaceMark);
    for (char c : raw) {
      if (c == ' ')
        text.append(kSpaceMark);
      else
        text.push_back(c);
    }

    // One symbol per UTF-8 character, linked into a list that merges shorten.
    struct Symbol {
      int prev, next;
      uint32_t start, length;  // length 0: merged into its left neighbour
    };
    std::vector<Symbol> symbols;
    symbols.reserve(text.size());
    for (size_t offset = 0; offset < text.size();) {
      // llama.cpp trusts the lead byte; utf8::character_length makes an invalid byte a
      // character of its own, so it cannot swallow part of a following U+2581 (on valid
      // UTF-8 the two agree). Such bytes fall back to byte tokens.
      const size_t length = utf8::character_length(std::string_view(text).substr(offset));
      const int index = static_cast<int>(symbols.size());
      symbols.push_back({index - 1, offset + length == text.size() ? -1 : index + 1,
                         static_cast<uint32_t>(offset), static_cast<uint32_t>(length)});
      offset += length;
    }

    struct Bigram {
      int left, right;
      float score;
      uint32_t length;  // of the merged text, to tell a stale entry
    };
    // Best score first; on a tie the leftmost pair, as SentencePiece does.
    const auto worse = [](const Bigram& a, const Bigram& b) {
      return a.score < b.score || (a.score == b.score && a.left > b.left);
    };
    std::priority_queue<Bigram, std::vector<Bigram>, decltype(worse)> queue(worse);
    const auto try_add = [&](int left, int right) {
      if (left < 0 || right < 0) return;
      const uint32_t length = symbols[left].length + symbols[right].length;
      const int32_t id = mergeable_id(std::string_view(text).substr(symbols[left].start, length));
      if (id >= 0) queue.push({left, right, scores_[static_cast<size_t>(id)], length});
    };
    for (int i = 1; i < static_cast<int>(symbols.size()); ++i) try_add(i - 1, i);

    while (!queue.empty()) {
      const Bigram bigram = queue.top();
      queue.pop();
      Symbol& left = symbols[bigram.left];
      Symbol& right = symbols[bigram.right];
      if (left.length == 0 || right.length == 0 || left.length + right.length != bigram.length)
        continue;  // one side has merged since this pair was queued
      left.length += right.length;
      right.length = 0;
      left.next = right.next;
      if (right.next >= 0) symbols[right.next].prev = bigram.left;
      try_add(left.prev, bigram.left);
      try_add(bigram.left, left.next);
    }

    for (int i = symbols.empty() ? -1 : 0; i >= 0; i = symbols[i].next) {
      const std::string_view piece =
          std::string_view(text).substr(symbols[i].start, symbols[i].length);
      if (const int32_t id = mergeable_id(piece); id >= 0) {
        out.push_back(id);
        continue;
      }
      for (char byte : piece) {
        const int32_t id = byte_ids_[static_cast<uint8_t>(byte)];
        if (id >= 0) out.push_back(id);
      }
    }
  }

 private:
  // SentencePiece never forms control, unknown or byte pieces by merging, so the text
  // "<s>" or "<0x41>" in plain text stays plain text.
  int32_t mergeable_id(std::string_view piece) const {
    const auto it = index().find(piece);
    if (it == index().end()) return -1;
    const TokenType t = type(it->second);
    if (t == TokenType::kControl || t == TokenType::kUnknown || t == TokenType::kByte) return -1;
    return it->second;
  }

  std::vector<float> scores_;
  bool add_space_prefix_;
  std::array<int32_t, 256> byte_ids_{};
};

}  // namespace

std::unique_ptr<Tokenizer> make_sentencepiece_tokenizer(const TokenizerVocab& vocab) {
  return std::make_unique<SentencePieceTokenizer>(vocab);
}

}  // namespace tandem
