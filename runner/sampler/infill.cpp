#include "runner/sampler/infill.h"

#include <algorithm>
#include <string_view>

#include "runner/sampler/kernels.h"

namespace tandem::sampler_infill {
namespace {

// llama.cpp's constants: the end wins when kEogWeight * p_eog * n_kept > p_txt; a text token
// stays when its merged mass reaches kKeepMass.
constexpr float kEogWeight = 3.0f;
constexpr float kKeepMass = 0.2f;

bool precedes(const Token& a, const Token& b) { return a.z > b.z || (a.z == b.z && a.id < b.id); }

// A handful of ids (EOS, EOT, <|im_end|>, ...): a scan beats a lookup table.
bool is_eog(const Vocab& vocab, int32_t id) {
  return std::find(vocab.eog_ids.begin(), vocab.eog_ids.end(), id) != vocab.eog_ids.end();
}

// Moves the tokens `keep` accepts to the front, in order, and scales their p to sum 1: the
// sum taken in rank order, as llama.cpp sums while it compacts.
template <typename Keep>
std::span<Token> keep_normalized(std::span<Token> tokens, Keep keep) {
  size_t count = 0;
  float sum = 0.0f;
  for (const Token& t : tokens) {
    if (!keep(t)) continue;
    sum += t.p;
    tokens[count++] = t;
  }
  if (sum > 0.0f) {
    for (size_t i = 0; i < count; ++i) tokens[i].p /= sum;
  }
  return tokens.first(count);
}

// Step 2 over the tokens in rank order: for each token i0 not merged away and with a piece,
// each token i1 whose piece starts with i0's merges with it, in rank order, into the likelier
// of the two (i0 on a tie), until i0 itself is merged away. llama.cpp tries every pair
// (n^2 piece comparisons); here only the tokens whose piece starts with i0's are visited, in
// the same order, so every sum is the same. In piece order (ties by rank) they follow i0:
// those with i0's piece and a lower rank, which come before it, are all merged away by then
// (each took its turn as i0 first, and met this i0 unless it was merged away before).
void merge_prefixes(const TokenPieces& pieces, Scratch& s) {
  const std::span<Token> tokens(s.tokens);
  const auto n = static_cast<uint32_t>(tokens.size());
  const auto piece = [&](uint32_t rank) { return pieces[tokens[rank].id]; };
  s.by_piece.clear();
  for (uint32_t r = 0; r < n; ++r) {
    if (!piece(r).empty()) s.by_piece.push_back(r);
  }
  std::sort(s.by_piece.begin(), s.by_piece.end(), [&](uint32_t a, uint32_t b) {
    const std::string_view pa = piece(a), pb = piece(b);
    return pa < pb || (pa == pb && a < b);
  });
  s.piece_index.resize(n);
  for (size_t k = 0; k < s.by_piece.size(); ++k) s.piece_index[s.by_piece[k]] = uint32_t(k);
  for (uint32_t i0 = 0; i0 < n; ++i0) {
    const std::string_view prefix = piece(i0);
    if (prefix.empty() || tokens[i0].gone) continue;
    s.group.clear();
    for (size_t k = s.piece_index[i0] + 1;
         k < s.by_piece.size() && piece(s.by_piece[k]).starts_with(prefix); ++k) {
      if (!tokens[s.by_piece[k]].gone) s.group.push_back(s.by_piece[k]);
    }
    std::sort(s.group.begin(), s.group.end());  // rank order
    for (uint32_t i1 : s.group) {
      uint32_t dst = i0, src = i1;
      if (tokens[i1].p > tokens[i0].p) std::swap(dst, src);
      tokens[dst].p += tokens[src].p;
      tokens[src].p = 0.0f;
      tokens[src].gone = true;
      if (src == i0) break;
    }
  }
}

}  // namespace

std::span<const Token> apply(const Vocab& vocab, Scratch& scratch) {
  std::span<Token> tokens(scratch.tokens);
  if (tokens.empty()) return tokens;
  // Step 1: the softmax over the kept set, in rank order; the end when it holds enough.
  std::sort(tokens.begin(), tokens.end(), precedes);
  const float z_max = tokens[0].z;
  float sum = 0.0f;
  for (Token& t : tokens) {
    t.p = sampler_kernels::exp_shifted(t.z - z_max);
    sum += t.p;
    t.eog = is_eog(vocab, t.id);
    t.gone = false;
  }
  float p_eog = 0.0f, p_txt = 0.0f;
  for (Token& t : tokens) {
    t.p /= sum;
    (t.eog ? p_eog : p_txt) += t.p;
  }
  if (kEogWeight * p_eog * static_cast<float>(tokens.size()) > p_txt)
    return keep_normalized(tokens, [](const Token& t) { return t.eog; });

  // Step 2.
  if (vocab.pieces != nullptr) merge_prefixes(*vocab.pieces, scratch);

  // Step 3: the text tokens below kKeepMass go; the end-of-generation ones always stay.
  size_t non_eog = 0;
  for (const Token& t : tokens) non_eog += !t.eog && !(t.p < kKeepMass);
  if (non_eog == 0) {
    if (vocab.eot_id >= 0) {
      tokens[0] = Token{vocab.eot_id, tokens[0].z, 1.0f, true, false};
      return tokens.first(1);
    }
    // No end token to give (the row bans it, or there is none): the merged tokens instead.
    return keep_normalized(tokens, [](const Token& t) { return !t.gone; });
  }
  tokens = keep_normalized(tokens, [](const Token& t) { return t.eog || !(t.p < kKeepMass); });

  // Step 4: with n text tokens left, those below 1 / (n + 1) of the mass go too.
  const float threshold = 1.0f / static_cast<float>(non_eog + 1);
  return keep_normalized(tokens, [&](const Token& t) { return t.eog || !(t.p < threshold); });
}

}  // namespace tandem::sampler_infill
