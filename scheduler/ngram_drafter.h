// Drafts for speculative decoding by n-gram prompt lookup (vLLM's "ngram" method,
// llama.cpp's lookup decoding): the sequence's last n tokens are looked up earlier in
// the sequence itself (the prompt and what was generated), and the tokens that followed
// that occurrence are proposed as the next ones. It pays where outputs copy their input
// (code edits, extraction, summaries quoting the text, a model repeating itself) and
// costs one lookup where they do not. The proposals only decide how much a step may
// accept, never what: the step samples every position as a decode step would
// (StepRow::verify), so the output is the same whatever is drafted.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace tandem {

struct NgramDraftOptions {
  int32_t min_n = 2;  // the shortest suffix matched
  int32_t max_n = 4;  // the longest; a longer match is tried first
  int32_t max_tokens = 4;
};

// options.max_tokens tokens that followed the most recent earlier occurrence of the longest
// suffix of the sequence (length min_n .. max_n) found earlier in it, the continuation
// repeating itself where it reaches the end (a period); empty when none is found. The
// sequence is `prompt` then `generated`. O(length * max_n) at worst.
std::vector<int32_t> ngram_draft(std::span<const int32_t> prompt,
                                 std::span<const int32_t> generated,
                                 const NgramDraftOptions& options);

}  // namespace tandem
