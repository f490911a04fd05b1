// Shared by the grammar tests: vocabularies (a synthetic one that needs no files, and the
// ../shared GGUF vocabularies), the brute-force mask, and seeded random walks that sample
// allowed tokens until the grammar ends.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "runner/grammar/matcher.h"
#include "runner/grammar/vocabulary.h"

namespace tandem::grammar::testing {

// About 700 tokens: three control tokens (no bytes; id 1 is end-of-generation), one
// end-of-generation token that has text ("</s>", id 3), the 256 single bytes, and
// multi-byte tokens that cross JSON's structure ("},", "\":", "\"}]"), whitespace runs,
// digits, words, UTF-8 characters and partial UTF-8 sequences, and a duplicate.
std::shared_ptr<const Vocabulary> synthetic_vocabulary();

// ../shared/vocab/ggml-vocab-<name>.gguf as a Vocabulary, or nullptr when absent.
std::shared_ptr<const Vocabulary> shared_vocabulary(const std::string& name);

// The mask by brute force: every token's bytes fed to a copy of the matcher's recognizer;
// end-of-generation ids allowed exactly when it accepts.
std::vector<uint32_t> brute_force_mask(const Matcher& matcher);

std::vector<int32_t> allowed_ids(const std::vector<uint32_t>& mask, int32_t vocab_size);

struct Walk {
  std::string text;             // the bytes of the tokens taken
  std::vector<int32_t> tokens;  // end-of-generation excluded
  bool ended = false;           // the walk took an end-of-generation token
};

// Samples allowed tokens with `rng` until an end-of-generation token is taken or
// `max_tokens` are. The first `free_tokens` are uniform among the allowed ones (ending with
// probability `end_chance` whenever the grammar accepts); after that the walk heads for
// the end: a token that completes the grammar if there is one, else one-byte closers
// (" } ] ,) half of the time and random one-byte tokens the other half.
struct WalkOptions {
  size_t free_tokens = 40;
  size_t max_tokens = 2000;
  double end_chance = 0.5;
};

// `on_step`, when given, runs before each token with the matcher and its mask.
template <typename OnStep>
Walk random_walk(Matcher& matcher, std::mt19937_64& rng, const WalkOptions& options,
                 OnStep&& on_step);
Walk random_walk(Matcher& matcher, std::mt19937_64& rng, const WalkOptions& options = {});

// One step's choice, as random_walk makes it.
int32_t choose_token(const Matcher& matcher, const std::vector<int32_t>& allowed,
                     std::mt19937_64& rng, bool heading_for_the_end, double end_chance);

template <typename OnStep>
Walk random_walk(Matcher& matcher, std::mt19937_64& rng, const WalkOptions& options,
                 OnStep&& on_step) {
  Walk walk;
  const Vocabulary& vocab = matcher.compiled().vocabulary();
  std::vector<uint32_t> mask(matcher.mask_words());
  for (size_t step = 0; step < options.max_tokens && !matcher.is_terminated(); ++step) {
    matcher.fill_mask(mask);
    on_step(matcher, mask);
    const auto allowed = allowed_ids(mask, vocab.size());
    if (allowed.empty()) break;
    const int32_t token =
        choose_token(matcher, allowed, rng, step >= options.free_tokens, options.end_chance);
    if (!matcher.advance(token)) break;
    if (matcher.is_terminated()) {
      walk.ended = true;
      break;
    }
    walk.tokens.push_back(token);
    walk.text += vocab.bytes(token);
  }
  return walk;
}

}  // namespace tandem::grammar::testing
