// llama-server's n_indent and t_max_predict_ms over an output's text, as it arrives in pieces:
// where the output is cut, what is held back until a line's indentation is known, and that
// the cut does not depend on how the text is split.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "scheduler/line_limits.h"

namespace tandem::TANDEM_UNITY_ID {
namespace {

struct Outcome {
  std::string text;
  bool stopped = false;
};

// Pushes the pieces in order (each at its elapsed time), then flushes unless stopped.
Outcome run(LineLimits limits, const std::vector<std::string>& pieces,
            const std::vector<double>& elapsed = {}) {
  Outcome out;
  for (size_t i = 0; i < pieces.size() && !out.stopped; ++i) {
    LineLimits::Output o = limits.push(pieces[i], i < elapsed.size() ? elapsed[i] : 0.0);
    out.text += o.text;
    out.stopped = o.stopped;
  }
  if (!out.stopped) out.text += limits.flush();
  return out;
}

// Every split of text into single characters and into the whole: the same result.
void expect_cut(int32_t indent, const std::string& text, const std::string& kept, bool stopped) {
  const Outcome whole = run(LineLimits(indent, 0), {text});
  EXPECT_EQ(whole.text, kept) << text;
  EXPECT_EQ(whole.stopped, stopped) << text;
  std::vector<std::string> chars;
  for (char c : text) chars.emplace_back(1, c);
  const Outcome split = run(LineLimits(indent, 0), chars);
  EXPECT_EQ(split.text, kept) << text;
  EXPECT_EQ(split.stopped, stopped) << text;
}

TEST(LineLimits, IndentCutsTheFirstShortLineBeforeItsText) {
  // The first line is never checked; later lines need 4 blanks.
  expect_cut(4, "x = 1\n    y = 2\n    z\n", "x = 1\n    y = 2\n    z\n", false);
  // llama-server keeps the short line's blanks and drops the rest.
  expect_cut(4, "if a:\n    b()\n  c()\nd()", "if a:\n    b()\n  ", true);
  expect_cut(4, "a\nb", "a\n", true);
  // Tabs count as blanks, one each.
  expect_cut(2, "a\n\t\tb\n\tc", "a\n\t\tb\n\t", true);
  // An empty line ends it too (its first character is the newline).
  expect_cut(4, "a\n    b\n\n    c", "a\n    b\n", true);
  // Blanks at the end, with no text after them, are released by the flush.
  expect_cut(4, "a\n  ", "a\n  ", false);
  // Off: nothing is cut.
  expect_cut(0, "a\nb\n", "a\nb\n", false);
}

TEST(LineLimits, HoldsALinesBlanksUntilItsTextDecides) {
  LineLimits limits(4, 0);
  EXPECT_EQ(limits.push("a\n", 0).text, "a\n");
  EXPECT_EQ(limits.push("  ", 0).text, "");  // might be a short line
  const LineLimits::Output o = limits.push("  b", 0);
  EXPECT_EQ(o.text, "    b");
  EXPECT_FALSE(o.stopped);
}

TEST(LineLimits, TimeLimitEndsAtTheNextNewline) {
  // Past the limit, text without a newline goes on; the next newline ends the output there.
  Outcome r =
      run(LineLimits(0, 100), {"a", "\n", "b", "c", "\nd", "e"}, {10, 50, 150, 160, 170, 180});
  EXPECT_EQ(r.text, "a\nbc\nd");
  EXPECT_TRUE(r.stopped);
  // Within the limit nothing ends.
  r = run(LineLimits(0, 100), {"a\n", "b\n"}, {10, 20});
  EXPECT_EQ(r.text, "a\nb\n");
  EXPECT_FALSE(r.stopped);
  // With n_indent, the held blanks go out with the newline that ends it.
  r = run(LineLimits(2, 100), {"a\n", "  "}, {200, 200});
  EXPECT_EQ(r.text, "a\n");
  EXPECT_TRUE(r.stopped);
  EXPECT_FALSE(LineLimits(0, 0).active());
  EXPECT_TRUE(LineLimits(0, 1).active());
}

}  // namespace
}  // namespace tandem::TANDEM_UNITY_ID
