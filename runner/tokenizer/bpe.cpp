// Byte-level BPE (tokenizer.ggml.model = "gpt2"), as llama.cpp's llm_tokenizer_bpe does
// it: the pre-tokenizer splits the text, each piece's bytes are spelled in GPT-2's
// byte-to-unicode alphabet, and merges apply by rank, best first, within the piece.

#include <algorithm>
#include <array>

#include "runner/tokenizer/pretokenizer.h"
#include "runner/tokenizer/utf8.h"
#include "runner/tokenizer/vocabulary_tokenizer.h"

namespace tandem {

namespace {

// GPT-2's bytes_to_unicode(): printable Latin-1 bytes stand for themselves, the other
// 68 bytes for U+0100 onwards, in byte order.
struct ByteAlphabet {
  std::array<std::string, 256> spelling;       // byte -> UTF-8 of its code point
  std::unordered_map<char32_t, char> byte_of;  // code point -> byte

  ByteAlphabet() {
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      const char32_t cp = printable ? static_cast<char32_t>(b) : next++;
      spelling[static_cast<size_t>(b)] = utf8::encode(cp);
      byte_of[cp] = static_cast<char>(b);
    }
  }
};

const ByteAlphabet& byte_alphabet() {
  static const ByteAlphabet alphabet;
  return alphabet;
}

// A token's text back to the bytes it stands for. A code point outside the alphabet
// (a hand-made vocabulary) is kept as its own UTF-8.
std::string unspell(const std::string& text) {
  const ByteAlphabet& alphabet = byte_alphabet();
  std::string out;
  for (size_t pos = 0; pos < text.size();) {
    const utf8::SequenceScan scan = utf8::scan_sequence(std::string_view(text).substr(pos));
    if (scan.kind != utf8::Sequence::kValid) {
      out.append(text, pos, scan.length);
      pos += scan.length;
      continue;
    }
    const auto* s = reinterpret_cast<const unsigned char*>(text.data() + pos);
    char32_t cp = scan.length == 1   ? s[0]
                  : scan.length == 2 ? ((s[0] & 0x1Fu) << 6) | (s[1] & 0x3Fu)
                  : scan.length == 3
                      ? ((s[0] & 0x0Fu) << 12) | ((s[1] & 0x3Fu) << 6) | (s[2] & 0x3Fu)
                      : ((s[0] & 0x07u) << 18) | ((s[1] & 0x3Fu) << 12) | ((s[2] & 0x3Fu) << 6) |
                            (s[3] & 0x3Fu);
    if (const auto it = alphabet.byte_of.find(cp); it != alphabet.byte_of.end())
      out += it->second;
    else
      out.append(text, pos, scan.length);
    pos += scan.length;
  }
  return out;
}

uint64_t pair_key(int32_t left, int32_t right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}

class ByteLevelBpeTokenizer final : public VocabularyTokenizer {
 public:
  ByteLevelBpeTokenizer(const TokenizerVocab& vocab, PreTokenizer pre_tokenizer)
      : VocabularyTokenizer(vocab, pre_tokenizer.add_bos_by_default(), unspell),
        pre_tokenizer_(std::move(pre_tokenizer)),
        // llama.cpp: Llama 3's vocabulary (and a few others) takes a whole piece that is a
        // token as is.
        ignore_merges_(pre_tokenizer_.ignore_merges()) {
    for (int byte = 0; byte < 256; ++byte)
      byte_ids_[static_cast<size_t>(byte)] =
          find_token(byte_alphabet().spelling[static_cast<size_t>(byte)]);
    merges_.reserve(vocab.merges.size());
    for (size_t rank = 0; rank < vocab.merges.size(); ++rank) {
      const std::string& merge = vocab.merges[rank];
      const size_t space = merge.find(' ', 1);
      if (space == std::string::npos) continue;
      const int32_t left = find_token(std::string_view(merge).substr(0, space));
      const int32_t right = find_token(std::string_view(merge).substr(space + 1));
      const int32_t merged = find_token(merge.substr(0, space) + merge.substr(space + 1));
      // A merge whose parts or result are not tokens can never apply to token pieces.
      if (left < 0 || right < 0 || merged < 0) continue;
      merges_.emplace(pair_key(left, right), Merge{static_cast<int32_t>(rank), merged});
    }
  }

 protected:
  void encode_text(std::string_view text, bool /*after_special*/,
                   std::vector<int32_t>& out) const override {
    Scratch scratch;  // reused across the pieces of one call
    for (std::string_view piece : pre_tokenizer_.split(text)) encode_piece(piece, scratch, out);
  }

 private:
  struct Merge {
    int32_t rank;
    int32_t merged;
  };
  // One symbol per byte of the piece (each byte is one character once spelled), linked
  // into a list that merges shorten.
  struct Symbol {
    int prev, next;
    int32_t id;  // -1: this byte's character is not a token
    bool alive;
  };
  struct Bigram {
    int left, right;
    int32_t rank, left_id, right_id, merged;
  };
  struct Scratch {
    std::vector<Symbol> symbols;
    std::vector<Bigram> heap;
    std::string spelled;
  };

  void encode_piece(std::string_view piece, Scratch& scratch, std::vector<int32_t>& out) const {
    const ByteAlphabet& alphabet = byte_alphabet();
    if (ignore_merges_) {
      scratch.spelled.clear();
      for (char byte : piece) scratch.spelled += alphabet.spelling[static_cast<uint8_t>(byte)];
      if (const int32_t id = find_token(scratch.spelled); id >= 0) {
        out.push_back(id);
        return;
      }
    }
    std::vector<Symbol>& symbols = scratch.symbols;
    symbols.clear();
    const int n = static_cast<int>(piece.size());
    for (int i = 0; i < n; ++i)
      symbols.push_back({i - 1, i + 1 == n ? -1 : i + 1,
                         byte_ids_[static_cast<uint8_t>(piece[static_cast<size_t>(i)])], true});

    // A binary heap of candidate merges: lowest rank first, on a tie the leftmost pair.
    std::vector<Bigram>& heap = scratch.heap;
    heap.clear();
    const auto worse = [](const Bigram& a, const Bigram& b) {
      return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
    };
    const auto try_add = [&](int left, int right) {
      if (left < 0 || right < 0 || symbols[left].id < 0 || symbols[right].id < 0) return;
      const auto it = merges_.find(pair_key(symbols[left].id, symbols[right].id));
      if (it == merges_.end()) return;
      heap.push_back(
          {left, right, it->second.rank, symbols[left].id, symbols[right].id, it->second.merged});
      std::push_heap(heap.begin(), heap.end(), worse);
    };
    for (int i = 1; i < n; ++i) try_add(i - 1, i);

    while (!heap.empty()) {
      std::pop_heap(heap.begin(), heap.end(), worse);
      const Bigram bigram = heap.back();
      heap.pop_back();
      Symbol& left = symbols[bigram.left];
      Symbol& right = symbols[bigram.right];
      // Stale when either side has merged since the pair was queued.
      if (!left.alive || !right.alive || left.id != bigram.left_id || right.id != bigram.right_id)
        continue;
      left.id = bigram.merged;
      right.alive = false;
      left.next = right.next;
      if (right.next >= 0) symbols[right.next].prev = bigram.left;
      try_add(left.prev, bigram.left);
      try_add(bigram.left, left.next);
    }

    for (int i = n == 0 ? -1 : 0; i >= 0; i = symbols[i].next) {
      if (symbols[i].id >= 0) {
        out.push_back(symbols[i].id);
        continue;
      }
      // Not a token (a vocabulary without this byte): as llama.cpp does, try each byte of
      // the character's spelling alone.
      for (char c : alphabet.spelling[static_cast<uint8_t>(piece[static_cast<size_t>(i)])])
        if (const int32_t id = find_token(std::string_view(&c, 1)); id >= 0) out.push_back(id);
    }
  }

  PreTokenizer pre_tokenizer_;
  bool ignore_merges_;
  std::unordered_map<uint64_t, Merge> merges_;  // (left id, right id) -> rank and result
  std::array<int32_t, 256> byte_ids_{};         // byte -> token of its spelling, or -1
};

}  // namespace

std::unique_ptr<Tokenizer> make_byte_level_bpe_tokenizer(const TokenizerVocab& vocab) {
  return std::make_unique<ByteLevelBpeTokenizer>(vocab, PreTokenizer(vocab.pre));
}

}  // namespace tandem
