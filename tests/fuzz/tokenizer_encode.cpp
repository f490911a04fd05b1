// Fuzzes Tokenizer::encode on arbitrary bytes with a byte-level BPE vocabulary (the
// pre-tokenizer picked by the first input byte: gpt2, llama3 or qwen2) and a SentencePiece
// one. Beyond "no crash": every id is in the vocabulary, BOS comes exactly when asked for,
// and encoding loses no byte: BPE token bytes concatenate back to the input (any bytes,
// special tokens rendered), SentencePiece's to the input with its space prefix and U+2581
// read as a space; decode() equals the UTF-8-sanitized text.

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "runner/tokenizer/tokenizer.h"
#include "runner/tokenizer/utf8.h"
#include "tests/fuzz/fuzz_vocabularies.h"

namespace {

void require(bool condition) {
  if (!condition) std::abort();
}

std::string sanitized(std::string_view bytes) {
  std::string out;
  tandem::append_sanitized_utf8(out, bytes);
  return out;
}

std::string replace_space_marks(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text.substr(i, 3) == "\xE2\x96\x81") {
      out += ' ';
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

// Checks the ids and strips the BOS that add_special put in front.
std::vector<int32_t> checked_ids(const tandem::Tokenizer& tokenizer, std::vector<int32_t> ids,
                                 bool add_special) {
  for (int32_t id : ids) require(id >= 0 && id < tokenizer.vocab_size());
  if (add_special && tokenizer.add_bos()) {
    require(!ids.empty() && ids.front() == tokenizer.bos_id());
    ids.erase(ids.begin());
  }
  return ids;
}

std::string concatenated_bytes(const tandem::Tokenizer& tokenizer, const std::vector<int32_t>& ids,
                               bool render_special) {
  std::string out;
  for (int32_t id : ids) out += tokenizer.token_bytes(id, render_special);
  return out;
}

void check_bpe(const tandem::Tokenizer& bpe, std::string_view text, bool add_special,
               bool parse_special) {
  const auto ids = checked_ids(bpe, bpe.encode(text, add_special, parse_special), add_special);
  require(concatenated_bytes(bpe, ids, true) == text);
  require(bpe.decode(ids, true) == sanitized(text));
}

void check_spm(const tandem::Tokenizer& spm, std::string_view text, bool add_special,
               bool parse_special) {
  const auto ids = checked_ids(spm, spm.encode(text, add_special, parse_special), add_special);
  const std::string decoded = spm.decode(ids, parse_special);
  if (parse_special) return;  // each special token starts a new space prefix
  const std::string spaced = replace_space_marks(text);
  require(concatenated_bytes(spm, ids, false) == (text.empty() ? "" : " " + spaced));
  require(decoded == sanitized(spaced));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const auto gpt2 = tandem::fuzzing::byte_level_bpe_tokenizer("gpt2");
  static const auto llama3 = tandem::fuzzing::byte_level_bpe_tokenizer("llama3");
  static const auto qwen2 = tandem::fuzzing::byte_level_bpe_tokenizer("qwen2");
  static const auto spm = tandem::fuzzing::sentencepiece_tokenizer();
  if (size == 0) return 0;
  const uint8_t selector = data[0];
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  const bool add_special = (selector & 4) != 0;
  const bool parse_special = (selector & 8) != 0;
  const tandem::Tokenizer& bpe = selector % 3 == 0 ? *gpt2 : selector % 3 == 1 ? *llama3 : *qwen2;
  check_bpe(bpe, text, add_special, parse_special);
  check_spm(*spm, text, add_special, parse_special);
  return 0;
}
