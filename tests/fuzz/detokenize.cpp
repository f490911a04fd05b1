// Fuzzes the streaming Detokenizer with arbitrary token id sequences (two input bytes per
// id, including ids outside the vocabulary) for a byte-level BPE and a SentencePiece
// vocabulary. Beyond "no crash": every piece push() and flush() return is valid UTF-8
// (checked by an independent validator), and the streamed text equals decode() of the
// same ids, except that the stream keeps the leading space SentencePiece's decode drops.

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "runner/tokenizer/tokenizer.h"
#include "tests/common/utf8_oracle.h"
#include "tests/fuzz/fuzz_vocabularies.h"

namespace {

using ::tandem::testing::valid_utf8;

void require(bool condition) {
  if (!condition) std::abort();
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
