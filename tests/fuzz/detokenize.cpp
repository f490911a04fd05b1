// Fuzzes the streaming Detokenizer with arbitrary token id sequences (two input bytes per
// id, including ids outside the vocabulary) for a byte-level BPE and a SentencePiece
// vocabulary. Beyond "no crash": every piece push() and flush() return is valid UTF-8
// (checked by an independent validator), and the streamed text equals decode() of the
// same ids, except that the stream keeps the leading space SentencePiece's decode drops.

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "runner/tokenizer.h"
#include "tests/fuzz/fuzz_vocabularies.h"

namespace {

void require(bool condition) {
  if (!condition) std::abort();
}

// Well-formed UTF-8 per Unicode Table 3-7, decoded arithmetically (no shared code with
// runner/utf8): no overlong forms, no surrogates, nothing past U+10FFFF.
bool valid_utf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    const auto b = static_cast<uint8_t>(s[i]);
    const size_t n = b < 0x80           ? 1
                     : (b >> 5) == 0x6  ? 2
                     : (b >> 4) == 0xE  ? 3
                     : (b >> 3) == 0x1E ? 4
                                        : 0;
    if (n == 0 || i + n > s.size()) return false;
    uint32_t cp = n == 1 ? b : b & (0x7Fu >> n);
    for (size_t k = 1; k < n; ++k) {
      const auto c = static_cast<uint8_t>(s[i + k]);
      if ((c & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (c & 0x3F);
    }
    static constexpr uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += n;
  }
  return true;
}

void check_stream(const tandem::Tokenizer& tokenizer, const uint8_t* data, size_t size,
                  bool drops_leading_space) {
  // Ids from -1 to vocab_size: out-of-range ids decode to nothing and must not break it.
  const int32_t span = tokenizer.vocab_size() + 2;
  std::vector<int32_t> ids;
  for (size_t i = 0; i + 1 < size; i += 2) ids.push_back((data[i] | data[i + 1] << 8) % span - 1);

  tandem::Detokenizer detokenizer(tokenizer);
  std::string streamed;
  for (int32_t id : ids) {
    const std::string piece = detokenizer.push(id);
    require(valid_utf8(piece));
    streamed += piece;
  }
  const std::string tail = detokenizer.flush();
  require(valid_utf8(tail));
  streamed += tail;
  require(detokenizer.flush().empty());

  const std::string decoded = tokenizer.decode(ids);
  bool leading_space = false;
  for (int32_t id : ids) {
    const std::string piece = tokenizer.token_bytes(id);
    if (piece.empty()) continue;
    leading_space = drops_leading_space && piece.front() == ' ';
    break;
  }
  require(streamed == (leading_space ? " " + decoded : decoded));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const auto bpe = tandem::fuzzing::byte_level_bpe_tokenizer("llama3");
  static const auto spm = tandem::fuzzing::sentencepiece_tokenizer();
  check_stream(*bpe, data, size, false);
  check_stream(*spm, data, size, true);
  return 0;
}
