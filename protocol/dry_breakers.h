// llama.cpp's DRY sequence breakers in token form (its "restart sequences"): made by the
// server from a request's strings against the model's vocabulary (server/dry_breakers.h),
// read by the sampler's DRY step (runner/sampler/dry.h). A plain value, shared immutable
// among the requests that send the same strings.
#pragma once

#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

namespace tandem {

class DryBreakers {
 public:
  using Tails = std::vector<std::vector<int32_t>>;

  // A restart sequence: its first token (a vocabulary id) and the tokens that follow it. An
  // empty tail: that token alone holds a breaker (a "single-token breaker", which DRY never
  // penalizes). Each tail is kept once.
  void add(int32_t head, std::vector<int32_t> tail) {
    if (head < 0) return;
    Tails& tails = tails_[head];
    if (std::find(tails.begin(), tails.end(), tail) == tails.end())
      tails.push_back(std::move(tail));
    const auto word = static_cast<size_t>(head) / 64;
    if (heads_.size() <= word) heads_.resize(word + 1, 0);
    heads_[word] |= uint64_t{1} << (head % 64);
  }

  // The tails of the sequences `id` heads, or null. DRY asks this of every token of its
  // window (4096 by default) at each step: a bit test first keeps that off the hash table,
  // which with the thousands of heads a breaker such as "\n" has in a real vocabulary took
  // about 20 µs a row (bench_sampler "+dry").
  const Tails* tails_of(int32_t id) const {
    if (id < 0 || static_cast<size_t>(id) / 64 >= heads_.size() ||
        ((heads_[static_cast<size_t>(id) / 64] >> (id % 64)) & 1u) == 0) {
      return nullptr;
    }
    const auto found = tails_.find(id);
    return found == tails_.end() ? nullptr : &found->second;
  }

  bool single_token(int32_t id) const {
    const Tails* tails = tails_of(id);
    return tails != nullptr &&
           std::any_of(tails->begin(), tails->end(), [](const auto& tail) { return tail.empty(); });
  }

  bool empty() const { return tails_.empty(); }
  // Keyed by a sequence's first token.
  const std::unordered_map<int32_t, Tails>& tails() const { return tails_; }

 private:
  std::unordered_map<int32_t, Tails> tails_;
  std::vector<uint64_t> heads_;  // bit `id`: id heads a sequence
};

}  // namespace tandem
