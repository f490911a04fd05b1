// The n-gram prompt-lookup drafter (NgramIndex): which occurrence it takes, how long a
// suffix it matches, how it continues a repeating stretch, and that its index drafts at
// every length what a plain scan of the sequence, written here for clarity, drafts.
#include "scheduler/ngram_drafter.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

namespace tandem::testing::TANDEM_UNITY_ID {
namespace {

using Tokens = std::vector<int32_t>;

// The reference: the most recent earlier occurrence of the longest suffix (min_n ..
// max_n tokens) of prompt + generated, found by scanning back, and the k tokens after it,
// those past the end copied from the drafts themselves.
Tokens scan(const Tokens& prompt, const Tokens& generated, int32_t min_n, int32_t max_n,
            int32_t k) {
  Tokens seq = prompt;
  seq.insert(seq.end(), generated.begin(), generated.end());
  const auto length = static_cast<int64_t>(seq.size());
  Tokens out;
  if (k <= 0) return out;
  for (int64_t n = std::min<int64_t>(max_n, length - 1); n >= min_n; --n) {
    for (int64_t start = length - n - 1; start >= 0; --start) {
      if (!std::equal(seq.begin() + start, seq.begin() + start + n, seq.end() - n)) continue;
      for (int64_t i = start + n; i < start + n + k; ++i)
        out.push_back(i < length ? seq[i] : out[i - length]);
      return out;
    }
  }
  return out;
}

// A fresh index's drafts for the whole sequence.
Tokens draft(const Tokens& prompt, const Tokens& generated, int32_t min_n, int32_t max_n,
             int32_t k) {
  return NgramIndex(min_n, max_n).draft(prompt, generated, k);
}

TEST(NgramDrafter, ProposesWhatFollowedTheSuffixEarlier) {
  // ... 5 6 7 8 9 ... 5 6 -> 7 8 9
  EXPECT_EQ(draft({1, 5, 6, 7, 8, 9, 2, 3}, {5, 6}, 2, 2, 3), (Tokens{7, 8, 9}));
  // Fewer asked for: the first ones.
  EXPECT_EQ(draft({1, 5, 6, 7, 8, 9, 2, 3}, {5, 6}, 2, 2, 1), (Tokens{7}));
}

TEST(NgramDrafter, TheSequenceIsThePromptThenTheOutput) {
  // The match lies in the output, the suffix spans the prompt's end.
  EXPECT_EQ(draft({4, 5}, {6, 1, 4, 5, 6}, 3, 3, 2), (Tokens{1, 4}));
  EXPECT_EQ(draft({4, 5, 6, 1, 4}, {5, 6}, 3, 3, 2), (Tokens{1, 4}));
}

TEST(NgramDrafter, TheLongestSuffixWinsThenTheMostRecentOccurrence) {
  // "3 4" occurs twice; "2 3 4" only first: the longer match decides.
  const Tokens prompt = {2, 3, 4, 10, 11, 9, 3, 4, 20, 21, 2, 3, 4};
  EXPECT_EQ(draft(prompt, {}, 2, 3, 2), (Tokens{10, 11}));
  // With only pairs: the most recent earlier "3 4".
  EXPECT_EQ(draft(prompt, {}, 2, 2, 2), (Tokens{20, 21}));
}

TEST(NgramDrafter, NothingWhenNoSuffixRecurs) {
  EXPECT_TRUE(draft({1, 2, 3, 4, 5}, {6, 7}, 1, 3, 4).empty());
  // A suffix shorter than min_n does not count.
  EXPECT_TRUE(draft({1, 2, 3, 9, 3}, {}, 2, 3, 4).empty());
  EXPECT_EQ(draft({1, 2, 3, 9, 3}, {}, 1, 3, 2), (Tokens{9, 3}));
  EXPECT_TRUE(draft({}, {}, 1, 3, 4).empty());
  EXPECT_TRUE(draft({5}, {}, 1, 3, 4).empty());
  EXPECT_TRUE(draft({1, 2, 1, 2}, {}, 1, 3, 0).empty());
}

TEST(NgramDrafter, ARepeatingStretchDraftsInFull) {
  // "7 7 7": the latest earlier "7 7" ends one before the end; its continuation runs on
  // into the drafts themselves, a period of one.
  EXPECT_EQ(draft({1, 7, 7, 7}, {}, 2, 2, 5), (Tokens{7, 7, 7, 7, 7}));
  // A period of three.
  EXPECT_EQ(draft({1, 2, 3, 1, 2, 3, 1, 2}, {}, 2, 4, 5), (Tokens{3, 1, 2, 3, 1}));
}

// The index, fed a sequence as it grows (a token or a few at a time, drafts asked after
// each), proposes what the scan proposes at every length.
TEST(NgramDrafter, TheIndexDraftsWhatTheScanDrafts) {
  std::mt19937 rng(5);
  int64_t drafted = 0;
  for (int round = 0; round < 60; ++round) {
    const int32_t alphabet = 2 + static_cast<int32_t>(rng() % 6);
    const int32_t min_n = 1 + static_cast<int32_t>(rng() % 3);
    const int32_t max_n = min_n + static_cast<int32_t>(rng() % 3);
    Tokens prompt(rng() % 12);
    for (int32_t& t : prompt) t = static_cast<int32_t>(rng() % alphabet);
    NgramIndex index(min_n, max_n);
    Tokens generated;
    for (int step = 0; step < 80; ++step) {
      const int32_t k = static_cast<int32_t>(rng() % 6);
      const Tokens want = scan(prompt, generated, min_n, max_n, k);
      ASSERT_EQ(index.draft(prompt, generated, k), want)
          << "round " << round << " length " << prompt.size() + generated.size();
      drafted += static_cast<int64_t>(want.size());
      for (int add = 1 + static_cast<int>(rng() % 3); add > 0; --add)
        generated.push_back(static_cast<int32_t>(rng() % alphabet));
    }
  }
  EXPECT_GT(drafted, 1000);
}

// A prompt longer than a call indexes is indexed over several calls, drafting nothing
// until it is all in, then what the scan drafts.
TEST(NgramDrafter, ALongPromptIsIndexedOverSeveralCalls) {
  Tokens prompt(static_cast<size_t>(NgramIndex::kIndexPerCall * 2 + 100));
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int32_t>(i % 1000);
  NgramIndex index(2, 4);
  EXPECT_TRUE(index.draft(prompt, {}, 3).empty());
  EXPECT_TRUE(index.draft(prompt, {}, 3).empty());
  const Tokens want = scan(prompt, {}, 2, 4, 3);
  ASSERT_EQ(want.size(), 3u);
  EXPECT_EQ(index.draft(prompt, {}, 3), want);
}

TEST(DraftPace, FullAcceptanceKeepsTheMostAMissCutsToTheRunAndNothingAcceptedWaits) {
  DraftPace pace(8);
  EXPECT_EQ(pace.allowance(), 8);
  pace.verified(8, 8);
  EXPECT_EQ(pace.allowance(), 8);
  pace.verified(8, 3);  // the run and one more
  EXPECT_EQ(pace.allowance(), 4);
  pace.verified(4, 4);  // doubles back up
  EXPECT_EQ(pace.allowance(), 8);
  pace.verified(8, 0);  // one draft, after 2 steps without
  EXPECT_EQ(pace.allowance(), 0);
  EXPECT_EQ(pace.allowance(), 0);
  EXPECT_EQ(pace.allowance(), 1);
  pace.verified(1, 0);  // then 4
  for (int i = 0; i < 4; ++i) EXPECT_EQ(pace.allowance(), 0);
  EXPECT_EQ(pace.allowance(), 1);
  for (int miss = 0; miss < 6; ++miss) pace.verified(1, 0);  // at most 32
  for (int i = 0; i < DraftPace::kLongestWait; ++i) EXPECT_EQ(pace.allowance(), 0);
  EXPECT_EQ(pace.allowance(), 1);
  pace.verified(1, 1);  // an acceptance ends the waits
  EXPECT_EQ(pace.allowance(), 2);
}

TEST(DraftPace, LookupsThatFindNothingHoldTheNextOffUnlessTheHostBuildsTheStep) {
  DraftPace pace(4);
  // Chained steps while the row waits: 1, 2, 4, then 8 at most.
  const auto idle = [&pace] {
    int n = 0;
    for (; pace.waiting(); ++n) pace.chained();
    return n;
  };
  EXPECT_FALSE(pace.waiting());
  pace.looked_up(false);
  EXPECT_EQ(idle(), 1);
  pace.looked_up(false);
  EXPECT_EQ(idle(), 2);
  pace.looked_up(false);
  EXPECT_EQ(idle(), 4);
  pace.looked_up(false);
  EXPECT_EQ(idle(), DraftPace::kLongestIdle);
  pace.looked_up(false);
  EXPECT_EQ(idle(), DraftPace::kLongestIdle);
  // A step the host builds anyway looks at once, with the full allowance.
  pace.looked_up(false);
  EXPECT_TRUE(pace.waiting());
  EXPECT_EQ(pace.allowance(), 4);
  EXPECT_FALSE(pace.waiting());
  pace.looked_up(true);  // a find starts the holds over
  pace.looked_up(false);
  EXPECT_EQ(idle(), 1);
  // A refused draft's wait holds in host-built steps too.
  pace.verified(4, 0);
  EXPECT_TRUE(pace.waiting());
  EXPECT_EQ(pace.allowance(), 0);
  pace.chained();
  EXPECT_FALSE(pace.waiting());
  EXPECT_EQ(pace.allowance(), 1);
}

}  // namespace
}  // namespace tandem::testing::TANDEM_UNITY_ID
