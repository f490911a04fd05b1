#include "scheduler/stop_matcher.h"

#include <gtest/gtest.h>

namespace tandem::TANDEM_UNITY_ID {
namespace {

// Feeds pieces one by one; returns everything emitted and whether it stopped.
std::pair<std::string, bool> feed(StopMatcher& m, const std::vector<std::string>& pieces) {
  std::string out;
  for (const auto& p : pieces) {
    auto r = m.push(p);
    out += r.text;
    if (r.stopped) return {out, true};
  }
  return {out + m.flush(), false};
}

TEST(StopMatcher, WithoutStopsPassesTextThroughAtOnce) {
  StopMatcher m;
  EXPECT_EQ(m.push("hello").text, "hello");
  EXPECT_EQ(m.held(), 0u);
}

TEST(StopMatcher, StopsInsideOnePieceAndDropsTheStopString) {
  StopMatcher m({"END"});
  auto r = m.push("abcENDxyz");
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.text, "abc");
}

TEST(StopMatcher, MatchesAStopSplitAcrossPieces) {
  StopMatcher m({"END"});
  auto [text, stopped] = feed(m, {"ab", "cE", "N", "Dtail"});
  EXPECT_TRUE(stopped);
  EXPECT_EQ(text, "abc");
}

TEST(StopMatcher, HoldsBackAPartialMatchUntilItIsResolved) {
  StopMatcher m({"END"});
  EXPECT_EQ(m.push("abE").text, "ab");
  EXPECT_EQ(m.held(), 1u);
  EXPECT_EQ(m.push("N").text, "");
  EXPECT_EQ(m.held(), 2u);
  auto r = m.push("x");  // "ENx" cannot become "END": released
  EXPECT_FALSE(r.stopped);
  EXPECT_EQ(r.text, "ENx");
}

TEST(StopMatcher, FlushReleasesAHeldTailWhenOutputEnds) {
  StopMatcher m({"END"});
  EXPECT_EQ(m.push("abEN").text, "ab");
  EXPECT_EQ(m.flush(), "EN");
}

TEST(StopMatcher, TheEarliestOfSeveralStopsWins) {
  StopMatcher m({"xyz", "b"});
  auto r = m.push("aaxyzb");
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.text, "aa");
  StopMatcher m2({"cd", "bcde"});
  auto [text, stopped] = feed(m2, {"ab", "c", "de"});
  EXPECT_TRUE(stopped);
  EXPECT_EQ(text, "a");  // "bcde" starts earlier than "cd"
  // matched() names the winner, which Anthropic's stop_sequence reports.
  EXPECT_EQ(m.matched(), "xyz");
  EXPECT_EQ(m2.matched(), "bcde");
  StopMatcher m3({"a", "ab"});
  EXPECT_EQ(m3.matched(), "");
  m3.push("xab");
  EXPECT_EQ(m3.matched(), "ab");  // the longest of those found at the same place
}

TEST(StopMatcher, AnOverlappingFalseStartStillFindsTheStop) {
  StopMatcher m({"aab"});
  auto [text, stopped] = feed(m, {"a", "a", "a", "b"});
  EXPECT_TRUE(stopped);
  EXPECT_EQ(text, "a");
}

TEST(StopMatcher, NothingComesOutAfterAStop) {
  StopMatcher m({"!"});
  EXPECT_TRUE(m.push("hi!").stopped);
  auto r = m.push("more");
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.text, "");
  EXPECT_EQ(m.flush(), "");
}

TEST(StopMatcher, EmptyStopStringsAreIgnored) {
  StopMatcher m({""});
  auto r = m.push("abc");
  EXPECT_FALSE(r.stopped);
  EXPECT_EQ(r.text, "abc");
}

TEST(StopMatcher, MultiByteStopsAcrossPiecesAreMatched) {
  StopMatcher m({"\xC3\xA9t\xC3\xA9"});  // "été"
  auto [text, stopped] = feed(m, {"l'\xC3\xA9", "t", "\xC3\xA9!"});
  EXPECT_TRUE(stopped);
  EXPECT_EQ(text, "l'");
}

TEST(StopMatcher, IncludeStopKeepsTheStopStringAndTheLongestAtOnePlaceWins) {
  StopMatcher m({"EN", "END"}, /*include_stop=*/true);
  auto [text, stopped] = feed(m, {"ab", "cE", "N", "Dtail"});
  EXPECT_TRUE(stopped);
  // "EN" completes first, at the push of "N": the text ends with it.
  EXPECT_EQ(text, "abcEN");
  StopMatcher both({"EN", "END"}, true);
  auto r = both.push("xENDy");
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.text, "xEND");
}

TEST(StopMatcher, WhileItMayNotStopItEmitsButStillHoldsAPossibleStart) {
  StopMatcher m({"END"});
  auto r = m.push("aEND bE", /*may_stop=*/false);
  EXPECT_FALSE(r.stopped);
  EXPECT_EQ(r.text, "aEND b");  // the complete stop passes; the tail "E" is held
  r = m.push("ND!", /*may_stop=*/true);
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.text, "");
}

}  // namespace
}  // namespace tandem::TANDEM_UNITY_ID
