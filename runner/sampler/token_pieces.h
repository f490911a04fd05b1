// Every token's piece: its bytes as the detokenizer gives them for that id alone with special
// tokens not rendered (Tokenizer::token_bytes(id, /*render_special=*/false): "" for control
// tokens, SentencePiece's U+2581 already a space, a byte token its byte). The infill sampler
// step compares them (infill.h). Stored end to end with one offset per token, so a 128k
// vocabulary takes about 1.5 MB in two allocations rather than 128k strings; built once per
// model and shared, immutable, by every Sampler (thread-safe once built).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tandem {

class TokenPieces {
 public:
  TokenPieces() = default;
  explicit TokenPieces(std::span<const std::string> pieces) {
    for (const std::string& piece : pieces) push_back(piece);
  }

  // Appends the piece of the next id.
  void push_back(std::string_view piece) {
    bytes_.append(piece);
    offsets_.push_back(static_cast<uint32_t>(bytes_.size()));
  }

  int32_t size() const { return static_cast<int32_t>(offsets_.size()) - 1; }

  // "" for an id outside the table (a model whose output rows outnumber its tokens).
  std::string_view operator[](int32_t id) const {
    if (id < 0 || id >= size()) return {};
    const auto at = static_cast<size_t>(id);
    return std::string_view(bytes_).substr(offsets_[at], offsets_[at + 1] - offsets_[at]);
  }

 private:
  std::string bytes_;
  std::vector<uint32_t> offsets_ = {0};  // piece id is bytes_[offsets_[id], offsets_[id + 1])
};

}  // namespace tandem
