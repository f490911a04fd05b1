#include "scheduler/ngram_drafter.h"

#include <algorithm>
#include <cstddef>

namespace tandem {

namespace {

// Token i of prompt then generated.
struct Sequence {
  std::span<const int32_t> prompt, generated;
  int64_t size() const { return static_cast<int64_t>(prompt.size() + generated.size()); }
  int32_t operator[](int64_t i) const {
    const auto p = static_cast<int64_t>(prompt.size());
    return i < p ? prompt[static_cast<size_t>(i)] : generated[static_cast<size_t>(i - p)];
  }
};

// The hash of tokens [end - n, end).
uint64_t ngram_hash(const Sequence& s, int64_t end, int32_t n) {
  uint64_t h = 0x9e3779b97f4a7c15ull ^ static_cast<uint64_t>(n);
  for (int64_t i = end - n; i < end; ++i) {
    h ^= static_cast<uint32_t>(s[i]);
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 31;
  }
  return h;
}

bool same_ngram(const Sequence& s, int64_t a_end, int64_t b_end, int32_t n) {
  for (int32_t k = 1; k <= n; ++k)
    if (s[a_end - k] != s[b_end - k]) return false;
  return true;
}

}  // namespace

NgramIndex::NgramIndex(int32_t min_n, int32_t max_n)
    : min_n_(min_n), max_n_(max_n), ends_(static_cast<size_t>(std::max(max_n - min_n + 1, 0))) {}

std::vector<int32_t> NgramIndex::draft(std::span<const int32_t> prompt,
                                       std::span<const int32_t> generated, int32_t max_tokens) {
  const Sequence s{prompt, generated};
  const int64_t length = s.size();
  std::vector<int32_t> draft;
  // Occurrences that end before the suffix's last token: ends up to length - 1. A long
  // prompt is indexed kIndexPerCall positions a call, nothing drafted until it is done,
  // so that no step of the scheduler's stalls on it (32k positions took ~30 ms at once).
  if (indexed_ == 0)
    for (auto& ends : ends_) ends.reserve(static_cast<size_t>(length));
  const int64_t until = std::min(length - 1, indexed_ + kIndexPerCall);
  for (int64_t end = indexed_ + 1; end <= until; ++end)
    for (int32_t n = min_n_; n <= max_n_ && n <= end; ++n)
      ends_[static_cast<size_t>(n - min_n_)][ngram_hash(s, end, n)] = end;
  indexed_ = std::max(indexed_, until);
  if (max_tokens <= 0 || indexed_ < length - 1) return draft;
  for (int32_t n = static_cast<int32_t>(std::min<int64_t>(max_n_, length - 1)); n >= min_n_; --n) {
    const auto& ends = ends_[static_cast<size_t>(n - min_n_)];
    const auto it = ends.find(ngram_hash(s, length, n));
    // A hash that collides with another n-gram's is no match (the scan might have found
    // an older one; drafts decide nothing but speed).
    if (it == ends.end() || !same_ngram(s, it->second, length, n)) continue;
    for (int64_t i = it->second; i < it->second + max_tokens; ++i)
      draft.push_back(i < length ? s[i] : draft[static_cast<size_t>(i - length)]);
    return draft;
  }
  return draft;
}

int32_t DraftPace::allowance() {
  idle_ = 0;  // the step is the host's anyway: the row looks
  if (wait_ == 0) return limit_;
  --wait_;
  return 0;
}

void DraftPace::chained() {
  wait_ = std::max(wait_ - 1, 0);
  idle_ = std::max(idle_ - 1, 0);
}

void DraftPace::looked_up(bool found) {
  if (found) {
    empty_ = 0;
    return;
  }
  idle_ = std::min(kLongestIdle, 1 << std::min(empty_, 3));
  ++empty_;
}

void DraftPace::verified(int32_t drafted, int32_t accepted) {
  limit_ = accepted >= drafted ? std::min(most_, limit_ * 2) : std::max(1, accepted + 1);
  if (accepted > 0) {
    misses_ = 0;
    return;
  }
  ++misses_;
  wait_ = std::min(kLongestWait, 1 << std::min(misses_, 5));
}

}  // namespace tandem
