// Decoding, shared by every Tokenizer: whole sequences and the streaming Detokenizer.

#include "runner/tokenizer/tokenizer.h"

#include "runner/tokenizer/utf8.h"

namespace tandem {

std::string Tokenizer::decode(const std::vector<int32_t>& ids, bool render_special) const {
  return joined(ids, render_special, decode_drops_leading_space());
}

std::string Tokenizer::join_pieces(const std::vector<int32_t>& ids, bool render_special) const {
  return joined(ids, render_special, /*drop_leading_space=*/false);
}

std::string Tokenizer::joined(const std::vector<int32_t>& ids, bool render_special,
                              bool drop_leading_space) const {
  std::string bytes;
  bool first_text = true;
  for (int32_t id : ids) {
    std::string piece = token_bytes(id, render_special);
    if (piece.empty()) continue;  // BOS and friends do not count as the first text
    if (first_text && drop_leading_space && piece.front() == ' ') piece.erase(0, 1);
    first_text = false;
    bytes += piece;
  }
  std::string out;
  out.reserve(bytes.size());
  append_sanitized_utf8(out, bytes);
  return out;
}

Detokenizer::Detokenizer(const Tokenizer& tokenizer, bool render_special)
    : tokenizer_(&tokenizer), render_special_(render_special) {}

std::string Detokenizer::push(int32_t id) {
  pending_ += tokenizer_->token_bytes(id, render_special_);
  std::string out;
  const size_t consumed = utf8::append_sanitized(out, pending_, /*final=*/false);
  pending_.erase(0, consumed);
  return out;
}

std::string Detokenizer::flush() {
  std::string out;
  append_sanitized_utf8(out, pending_);
  pending_.clear();
  return out;
}

}  // namespace tandem
