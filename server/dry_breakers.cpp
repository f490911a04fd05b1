#include "server/dry_breakers.h"

#include <algorithm>
#include <map>
#include <string_view>

namespace tandem::server {
namespace {

// Where `word` ends with the first bytes of `breaker` (its whole text holds no breaker): at
// each such start, the breaker's rest, which the following tokens would have to spell.
template <typename F>
void for_each_overlap(std::string_view word, std::string_view breaker, F rest) {
  for (size_t pos = word.find(breaker[0]); pos != std::string_view::npos;
       pos = word.find(breaker[0], pos + 1)) {
    const std::string_view end = word.substr(pos);
    if (end.size() < breaker.size() && breaker.starts_with(end)) rest(breaker.substr(end.size()));
  }
}

}  // namespace

DryBreakers make_dry_breakers(const Tokenizer& tokenizer, const std::vector<std::string>& strings) {
  DryBreakers out;
  std::map<std::string, std::vector<int32_t>, std::less<>> spelled;  // a rest's tokens
  const auto tokens_of = [&](std::string_view rest) -> const std::vector<int32_t>& {
    auto found = spelled.find(rest);
    if (found != spelled.end()) return found->second;
    std::vector<int32_t> ids =
        tokenizer.encode(rest, /*add_special=*/false, /*parse_special=*/false);
    if (ids.size() > kMaxDryTail) ids.resize(kMaxDryTail);
    return spelled.emplace(std::string(rest), std::move(ids)).first->second;
  };
  for (int32_t id = 0; id < tokenizer.vocab_size(); ++id) {
    const std::string word = tokenizer.token_bytes(id, /*render_special=*/true);
    for (const std::string& breaker : strings) {
      if (breaker.empty()) continue;
      if (word.find(breaker) != std::string::npos) {
        out.add(id, {});
        continue;
      }
      for_each_overlap(word, breaker, [&](std::string_view rest) { out.add(id, tokens_of(rest)); });
    }
  }
  return out;
}

std::shared_ptr<const DryBreakers> DryBreakerCache::get(const std::vector<std::string>& strings) {
  {
    std::lock_guard lock(mutex_);
    for (const auto& [key, breakers] : kept_) {
      if (key == strings) return breakers;
    }
  }
  // Made outside the lock: a vocabulary's scan takes milliseconds, and two threads making the
  // same list at once only repeat the work.
  auto made = std::make_shared<const DryBreakers>(make_dry_breakers(tokenizer_, strings));
  std::lock_guard lock(mutex_);
  if (kept_.size() == kKept) kept_.erase(kept_.begin());
  kept_.emplace_back(strings, made);
  return made;
}

}  // namespace tandem::server
