// The reasoning split: its rules case by case, a reference written from the rules alone
// (string searches, no state) that random outputs must agree with, and streams cut at
// every place giving, laid end to end, the whole output's split.
#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "protocol/reasoning.h"
#include "tests/common/test_support.h"

namespace tandem::TANDEM_UNITY_ID {
namespace {

const ReasoningMarkers kThink{"<think>", "</think>"};

std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

bool blank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::string strip(std::string s, bool front, bool back) {
  while (front && !s.empty() && blank(s.front())) s.erase(0, 1);
  while (back && !s.empty() && blank(s.back())) s.pop_back();
  return s;
}

// The rules of protocol/reasoning.h, read literally.
ReasoningPieces reference(const std::string& output, const ReasoningMarkers& m, bool opened) {
  std::string rest = output;
  if (!opened) {
    const std::string trimmed = strip(output, true, false);
    if (trimmed.rfind(m.open, 0) != 0) return {"", output};
    rest = trimmed.substr(m.open.size());
  }
  const size_t close = rest.find(m.close);
  if (close == std::string::npos) return {strip(rest, true, true), ""};
  return {strip(rest.substr(0, close), true, true),
          strip(rest.substr(close + m.close.size()), true, false)};
}

ReasoningPieces streamed(const std::string& output, const ReasoningMarkers& m, bool opened,
                         const std::vector<size_t>& cuts) {
  ReasoningStream stream(m, opened);
  ReasoningPieces all;
  size_t at = 0;
  for (size_t cut : cuts) {
    const ReasoningPieces piece = stream.push(std::string_view(output).substr(at, cut - at));
    EXPECT_TRUE(piece.reasoning.empty() || all.content.empty())
        << "reasoning after content in " << output;
    all.reasoning += piece.reasoning;
    all.content += piece.content;
    at = cut;
  }
  const ReasoningPieces piece = stream.push(std::string_view(output).substr(at));
  const ReasoningPieces rest = stream.finish();
  all.reasoning += piece.reasoning + rest.reasoning;
  all.content += piece.content + rest.content;
  return all;
}

void expect_split(const std::string& output, bool opened, const std::string& reasoning,
                  const std::string& content) {
  const ReasoningPieces whole = split_reasoning(output, kThink, opened);
  EXPECT_EQ(whole.reasoning, reasoning) << output;
  EXPECT_EQ(whole.content, content) << output;
}

TEST(Reasoning, TheSplitFollowsTheRules) {
  expect_split("<think>\nI should greet.\n</think>\n\nHello!", false, "I should greet.", "Hello!");
  expect_split("  \n<think>x</think>y", false, "x", "y");
  expect_split("Hello <think>x</think>", false, "", "Hello <think>x</think>");
  expect_split("  Hello", false, "", "  Hello");  // no reasoning: the content is untouched
  expect_split("<think>\n\n</think>\n\nHi", false, "", "Hi");
  expect_split("<think>cut short by the limit\n", false, "cut short by the limit", "");
  expect_split("<thin", false, "", "<thin");  // a marker's beginning that never ended
  expect_split("", false, "", "");
  expect_split("\n", false, "", "\n");
  // The prompt opened it (DeepSeek-R1's generation prompt ends with "<think>\n").
  expect_split("Okay, so...\n</think>\n\nThe answer.", true, "Okay, so...", "The answer.");
  expect_split("no close at all", true, "no close at all", "");
  expect_split("</think>Just the answer", true, "", "Just the answer");
  // Only the first close ends it; later markers are the content's.
  expect_split("a</think>b</think>c", true, "a", "b</think>c");
  expect_split("<think>a<think>b</think>c", false, "a<think>b", "c");
}

TEST(Reasoning, MarkersComeFromTheTemplate) {
  EXPECT_EQ(detect_reasoning_markers("{{ '<think>\\n' }}...{% if '</think>' in content %}"),
            kThink);
  EXPECT_EQ(detect_reasoning_markers("[THINK]{{ thinking }}[/THINK]"),
            (ReasoningMarkers{"[THINK]", "[/THINK]"}));
  EXPECT_EQ(detect_reasoning_markers("<|START_THINKING|>...<|END_THINKING|> <think>"),
            (ReasoningMarkers{"<|START_THINKING|>", "<|END_THINKING|>"}));
  EXPECT_EQ(detect_reasoning_markers("{{ '<|im_start|>assistant\\n' }}"), std::nullopt);
  const auto shared = testing::shared_dir();
  if (!shared) return;  // the published templates, where ../shared has them
  for (const char* name : {"Qwen-Qwen3-0.6B", "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B",
                           "HuggingFaceTB-SmolLM3-3B", "Kimi-K2-Thinking"}) {
    const std::string source = slurp(*shared / "chat-templates" / (std::string(name) + ".jinja"));
    EXPECT_EQ(detect_reasoning_markers(source), kThink) << name;
  }
  for (const char* name : {"Qwen-Qwen2.5-7B-Instruct", "google-gemma-2-2b-it"}) {
    const std::string source = slurp(*shared / "chat-templates" / (std::string(name) + ".jinja"));
    EXPECT_EQ(detect_reasoning_markers(source), std::nullopt) << name;
  }
}

TEST(Reasoning, APromptOpensItWhenItEndsWithTheOpenMarker) {
  EXPECT_TRUE(reasoning_opened_by("<｜Assistant｜><think>\n", kThink));
  EXPECT_TRUE(reasoning_opened_by("...<think>", kThink));
  EXPECT_FALSE(reasoning_opened_by("<|im_start|>assistant\n", kThink));
  // Qwen3 with enable_thinking false writes an empty block: closed.
  EXPECT_FALSE(reasoning_opened_by("assistant\n<think>\n\n</think>\n\n", kThink));
  EXPECT_FALSE(reasoning_opened_by("", kThink));
}

// Random outputs over the markers' pieces and blanks, cut at random places and at every
// place: the stream's pieces are the whole split, and the whole split is the reference's.
TEST(Reasoning, StreamsCutAnywhereGiveTheReferenceSplit) {
  const std::vector<std::string> atoms = {"<think>", "</think>", "<", "</", "think", ">",    "th",
                                          "a",       "b",        " ", "\n", "\t",    "ink>", "é"};
  std::mt19937 rng(7);
  for (int trial = 0; trial < 3000; ++trial) {
    std::string output;
    const int n = static_cast<int>(rng() % 12);
    for (int i = 0; i < n; ++i) output += atoms[rng() % atoms.size()];
    for (const bool opened : {false, true}) {
      const ReasoningPieces expected = reference(output, kThink, opened);
      const ReasoningPieces whole = split_reasoning(output, kThink, opened);
      ASSERT_EQ(whole.reasoning, expected.reasoning) << output << " opened " << opened;
      ASSERT_EQ(whole.content, expected.content) << output << " opened " << opened;
      std::vector<size_t> cuts;
      for (size_t at = 1; at < output.size(); ++at) {
        if (rng() % 3 == 0) cuts.push_back(at);
      }
      const ReasoningPieces pieces = streamed(output, kThink, opened, cuts);
      ASSERT_EQ(pieces.reasoning, expected.reasoning) << output << " opened " << opened;
      ASSERT_EQ(pieces.content, expected.content) << output << " opened " << opened;
      std::vector<size_t> every;
      for (size_t at = 1; at < output.size(); ++at) every.push_back(at);
      const ReasoningPieces bytes = streamed(output, kThink, opened, every);
      ASSERT_EQ(bytes.reasoning, expected.reasoning) << output << " opened " << opened;
      ASSERT_EQ(bytes.content, expected.content) << output << " opened " << opened;
    }
  }
}

// What a stream may send early: reasoning is never taken back, so text that could still be
// a marker, or blanks before one, waits.
TEST(Reasoning, AStreamHoldsBackOnlyWhatMayEndTheReasoning) {
  ReasoningStream stream(kThink, /*opened=*/false);
  EXPECT_EQ(stream.push("<thi").reasoning, "");
  EXPECT_EQ(stream.push("nk>\nStep one").reasoning, "Step one");
  EXPECT_TRUE(stream.in_reasoning());
  EXPECT_EQ(stream.push(" and two\n</th").reasoning, " and two");
  const ReasoningPieces end = stream.push("ink>\n\nDone");
  EXPECT_EQ(end.reasoning, "");
  EXPECT_EQ(end.content, "Done");
  EXPECT_FALSE(stream.in_reasoning());
  ReasoningStream plain(kThink, false);
  EXPECT_EQ(plain.push("Hi").content, "Hi");  // not a marker's beginning: sent at once
}

}  // namespace
}  // namespace tandem::TANDEM_UNITY_ID
