// The n-gram prompt-lookup drafter: which occurrence it takes, how long a suffix it
// matches, and how it continues a repeating stretch.
#include "scheduler/ngram_drafter.h"

#include <gtest/gtest.h>

#include <vector>

namespace tandem::testing::TANDEM_UNITY_ID {
namespace {

using Tokens = std::vector<int32_t>;

Tokens draft(const Tokens& prompt, const Tokens& generated, int32_t min_n, int32_t max_n,
             int32_t k) {
  return ngram_draft(prompt, generated, NgramDraftOptions{min_n, max_n, k});
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

}  // namespace
}  // namespace tandem::testing::TANDEM_UNITY_ID
