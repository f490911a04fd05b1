// The bytes of token masks that compiled grammars may keep, all of them together. A
// grammar's masks are computed the first time a matcher meets a state and kept for the
// next (compiled_grammar.h); a large grammar meets thousands of states, each mask a bit per
// token (16 KB on a 128k vocabulary), and the grammars running requests hold are not the
// cache's to evict: four regexes of 16 alternatives of 1,000 characters each, sent with
// n 16, held 1.05 GB of masks while they ran (QA). Past the budget a mask is computed for
// its use and not kept, so memory stays bounded and the output is the same (a mask is a
// function of the grammar's state), only slower: the walk runs in the step's sampling, so
// every request of the step waits on it (tandem_grammar_masks_not_kept_total counts them).
// Thread-safe.
#pragma once

#include <atomic>
#include <cstddef>

namespace tandem::grammar {

class MaskBudget {
 public:
  explicit MaskBudget(size_t limit_bytes) : limit_(limit_bytes) {}
  // Counts `bytes` against the budget if they fit in what is left; false (nothing counted)
  // if not.
  bool take(size_t bytes) {
    size_t used = used_.load(std::memory_order_relaxed);
    do {
      if (bytes > limit_ || used > limit_ - bytes) return false;
    } while (!used_.compare_exchange_weak(used, used + bytes, std::memory_order_relaxed));
    return true;
  }
  void give_back(size_t bytes) { used_.fetch_sub(bytes, std::memory_order_relaxed); }
  size_t used() const { return used_.load(std::memory_order_relaxed); }
  size_t limit() const { return limit_; }
  // A mask computed for one use because the budget had no room (/metrics).
  void count_not_kept() { not_kept_.fetch_add(1, std::memory_order_relaxed); }
  uint64_t not_kept() const { return not_kept_.load(std::memory_order_relaxed); }

 private:
  const size_t limit_;
  std::atomic<size_t> used_{0};
  std::atomic<uint64_t> not_kept_{0};
};

}  // namespace tandem::grammar
