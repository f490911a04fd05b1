#include "scheduler/ngram_drafter.h"

#include <algorithm>

namespace tandem {

std::vector<int32_t> ngram_draft(std::span<const int32_t> prompt,
                                 std::span<const int32_t> generated,
                                 const NgramDraftOptions& options) {
  const auto prompt_len = static_cast<int64_t>(prompt.size());
  const int64_t length = prompt_len + static_cast<int64_t>(generated.size());
  const auto token_at = [&](int64_t i) {
    return i < prompt_len ? prompt[i] : generated[i - prompt_len];
  };
  std::vector<int32_t> draft;
  if (options.max_tokens <= 0 || options.min_n <= 0) return draft;
  const int64_t longest = std::min<int64_t>(options.max_n, length - 1);
  std::vector<int32_t> suffix;
  for (int64_t n = longest; n >= options.min_n; --n) {
    suffix.resize(static_cast<size_t>(n));
    for (int64_t k = 0; k < n; ++k) suffix[k] = token_at(length - n + k);
    // Occurrences ending before the suffix itself, the most recent first: the recent
    // context is the likelier to be repeated.
    for (int64_t start = length - n - 1; start >= 0; --start) {
      int64_t k = 0;
      while (k < n && token_at(start + k) == suffix[k]) ++k;
      if (k < n) continue;
      // What followed it, copied as LZ77 copies: a continuation that runs into the suffix
      // goes on from the drafts themselves, so a repeating stretch drafts in full.
      for (int64_t i = start + n; i < start + n + options.max_tokens; ++i)
        draft.push_back(i < length ? token_at(i) : draft[static_cast<size_t>(i - length)]);
      return draft;
    }
  }
  return draft;
}

}  // namespace tandem
