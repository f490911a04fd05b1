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
#include <unordered_map>
#include <vector>

namespace tandem {

// The drafts for one request's sequence as it grows: max_tokens tokens that followed the
// most recent earlier occurrence of the longest suffix of the sequence (length min_n ..
// max_n) found earlier in it, the continuation repeating itself where it reaches the end
// (a period); empty when none is found. The sequence is `prompt` then `generated`, and
// only ever grows by appending (a preempted request keeps it); max_tokens may change per
// call. Each token is indexed once, by where each n-gram last ended, so that a lookup
// costs O(max_n^2) whatever the length (a scan took 0.3 ms a row at 32k tokens; the tests
// keep one as the reference); a long prompt is indexed over several calls, which draft
// nothing until it is in.
class NgramIndex {
 public:
  static constexpr int64_t kIndexPerCall = 4096;  // positions indexed at most per call
  NgramIndex(int32_t min_n, int32_t max_n);
  std::vector<int32_t> draft(std::span<const int32_t> prompt, std::span<const int32_t> generated,
                             int32_t max_tokens);

 private:
  int32_t min_n_, max_n_;
  // ends_[n - min_n_]: an n-gram's hash -> the position after its most recent occurrence.
  std::vector<std::unordered_map<uint64_t, int64_t>> ends_;
  int64_t indexed_ = 0;  // occurrences ending at positions up to this one are in ends_
};

// How many drafts a request proposes next, from how its last ones fared, so that drafts
// that keep failing (a sampled output rarely repeats what came before it) stop costing the
// steps rows: the most while they are all accepted, the accepted run and one more after a
// miss (doubling back up with each full acceptance), and none for 2, 4 .. 32 decode steps
// after verify rows in a row that accepted nothing. Only speed depends on it.
//
// The scheduler chains decode steps only while no row may draft in the next one (its
// drafts start from the token the step samples). So a lookup that finds nothing also
// holds the row's next lookup off for 1, 2, 4, 8 steps (lookups in a row that found
// nothing), unless the next step is built by the host anyway: text that repeats nothing
// then lets its steps be chained, and every row looks again whenever the chain breaks.
class DraftPace {
 public:
  static constexpr int32_t kLongestWait = 32;
  static constexpr int32_t kLongestIdle = 8;
  explicit DraftPace(int32_t most) : most_(most), limit_(most) {}
  // The drafts a step the host builds may propose for the row (0: none). Once per such step.
  int32_t allowance();
  // A chained step: the row decoded one token without a lookup.
  void chained();
  // What a lookup with a positive allowance found: drafts, or nothing.
  void looked_up(bool found);
  void verified(int32_t drafted, int32_t accepted);
  // Whether the row would neither draft nor look up in its next step (so it may be chained).
  bool waiting() const { return wait_ > 0 || idle_ > 0; }

 private:
  int32_t most_, limit_;
  int32_t misses_ = 0;  // verify rows in a row that accepted nothing
  int32_t empty_ = 0;   // lookups in a row that found nothing
  int32_t wait_ = 0;    // decode steps left without drafts
  int32_t idle_ = 0;    // decode steps left before a lookup of the row's own
};

}  // namespace tandem
