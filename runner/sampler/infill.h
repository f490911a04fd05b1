// llama.cpp's "infill" sampler step (llama_sampler_infill_apply), which llama-server's /infill
// endpoint (code completion: the llama.vscode and llama.vim plugins) puts after top_k and
// top_p. The fused sampler runs it on the tokens its filters kept, for rows with
// SamplingParams::infill; sampler.h (step 5) states the rule. In short: end the completion
// when the end-of-generation tokens hold enough of the mass; else let a token whose piece
// is a prefix of another's absorb it (or be absorbed, by the likelier one), so the mass of
// "re", "ret" and "return" backs one choice; then keep only the clearly likely tokens.
//
// Everything here is scalar float code in a fixed order over the kept set, and the Sampler
// draws among the survivors with the kernels' noise (bit-identical on every path), so the
// token never depends on the ISA.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "runner/sampler/token_pieces.h"

namespace tandem::sampler_infill {

struct Token {
  int32_t id = 0;
  float z = 0;        // the tempered logit (finite)
  float p = 0;        // the probability, as the step leaves it
  bool eog = false;   // an end-of-generation id
  bool gone = false;  // merged into another token (its p is then 0)
};

// What the step needs of the vocabulary and the row.
struct Vocab {
  const TokenPieces* pieces = nullptr;  // null: every piece is "" (nothing merges)
  std::span<const int32_t> eog_ids;
  // The one token of the "nothing likely is left" outcome; -1 where the vocabulary has none
  // or the row bans it, and the step then keeps the merged tokens instead (sampler.h).
  int32_t eot_id = -1;
};

// Per-Sampler scratch: each vector grows to the largest kept set seen and keeps its capacity,
// so a warm Sampler allocates nothing per row.
struct Scratch {
  std::vector<Token> tokens;          // the kept set in; reordered and cut by apply()
  std::vector<uint32_t> by_piece;     // ranks with a non-empty piece, sorted by piece
  std::vector<uint32_t> piece_index;  // rank -> its index in by_piece
  std::vector<uint32_t> group;        // the ranks whose piece extends one token's
};

// Steps 1-4 over scratch.tokens (the kept set: ids distinct, z finite, in any order; each
// token's id and z set). Returns the survivors in rank order (z descending, ties to the
// lower id) with their final probabilities, which sum to 1 but for rounding (zero for an
// end-of-generation token that was merged away); a span into scratch.tokens.
std::span<const Token> apply(const Vocab& vocab, Scratch& scratch);

}  // namespace tandem::sampler_infill
