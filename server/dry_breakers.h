// DRY's sequence breakers (a request's dry_sequence_breakers strings) in token form for the
// served model, as llama.cpp's get_overlapping_token_sequences makes them: a token whose text
// holds a breaker is a single-token breaker; a token whose text ends with the breaker's first
// bytes heads it, followed by the tokenization of the rest (at most kMaxDryTail tokens).
// Every token's text is read once per distinct list of strings: a cache keeps the lists
// recently asked for (llama-server's default list in particular), shared by every thread.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "protocol/dry_breakers.h"
#include "runner/tokenizer/tokenizer.h"

namespace tandem::server {

inline constexpr size_t kMaxDryTail = 20;  // llama.cpp's MAX_SEQ_LEN

// The breakers of `strings` (non-empty ones) for the tokenizer's vocabulary.
DryBreakers make_dry_breakers(const Tokenizer& tokenizer, const std::vector<std::string>& strings);

class DryBreakerCache {
 public:
  explicit DryBreakerCache(const Tokenizer& tokenizer) : tokenizer_(tokenizer) {}
  // Made on the first ask for a list; thread-safe.
  std::shared_ptr<const DryBreakers> get(const std::vector<std::string>& strings);

 private:
  static constexpr size_t kKept = 8;  // lists kept; the oldest goes first
  const Tokenizer& tokenizer_;
  std::mutex mutex_;
  std::vector<std::pair<std::vector<std::string>, std::shared_ptr<const DryBreakers>>> kept_;
};

}  // namespace tandem::server
