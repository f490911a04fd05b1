// The byte-level BPE pre-tokenizers: each splits as its Hugging Face regex does.

#include "runner/tokenizer/pretokenizer.h"

#include <random>

#include <gtest/gtest.h>

#include "runner/gguf/gguf.h"

namespace tandem::TANDEM_UNITY_ID {
namespace {

using Pieces = std::vector<std::string>;

Pieces split(std::string_view pre, std::string_view text) {
  Pieces out;
  for (std::string_view piece : PreTokenizer(pre).split(text)) out.emplace_back(piece);
  return out;
}

TEST(PreTokenizer, Gpt2KeepsTheSpaceBeforeAWordAndLeavesOneSpaceBehind) {
  EXPECT_EQ(split("gpt-2", "Hello world's  end"), (Pieces{"Hello", " world", "'s", " ", " end"}));
}

TEST(PreTokenizer, Gpt2KeepsDigitRunsWholeAndContractionsLowercaseOnly) {
  EXPECT_EQ(split("gpt2", "abc 12345 I'M"), (Pieces{"abc", " 12345", " I", "'", "M"}));
}

TEST(PreTokenizer, DefaultAndEmptyNamesMeanLlamaCppsFallbackList) {
  // Punctuation runs apart (even from the space before them), then GPT-2's regex, then
  // digits in threes.
  EXPECT_EQ(split("", "a  b\n"), (Pieces{"a", " ", " b", "\n"}));
  EXPECT_EQ(split("default", "x, 12345!"), (Pieces{"x", ",", " ", "123", "45", "!"}));
  EXPECT_FALSE(PreTokenizer("default").ignore_merges());
  EXPECT_FALSE(PreTokenizer("").add_bos_by_default());
}

TEST(PreTokenizer, Llama3FamilyIgnoresMergesAndAddsBosButDbrxOnlySharesItsRegex) {
  EXPECT_TRUE(PreTokenizer("llama-bpe").ignore_merges());
  EXPECT_TRUE(PreTokenizer("llama-bpe").add_bos_by_default());
  EXPECT_EQ(PreTokenizer("dbrx").regexes(), PreTokenizer("llama3").regexes());
  EXPECT_FALSE(PreTokenizer("dbrx").ignore_merges());
  EXPECT_FALSE(PreTokenizer("dbrx").add_bos_by_default());
}

TEST(PreTokenizer, SuperbpeSplitsDigitRunsInThreesFromTheRightWithAnEmptyMatch) {
  EXPECT_EQ(split("superbpe", "x1234567 12"), (Pieces{"x", "1", "234", "567", " ", "12"}));
}

TEST(PreTokenizer, LongDigitRunsGroupInThreesFromTheRightForTinyAyaAndSuperbpe) {
  // Their lookaheads rescan the rest of the run at every position; PreTokenizer groups the
  // run by arithmetic instead, with the regexes' result (the oracle checks short runs).
  const std::string digits(20000, '7');  // 20000 = 2 + 3 * 6666
  for (std::string_view pre : {"tiny_aya", "superbpe"}) {
    const Pieces pieces = split(pre, digits + " x");
    ASSERT_EQ(pieces.size(), 1u + 6666u + 1u) << pre;
    EXPECT_EQ(pieces.front(), "77") << pre;
    EXPECT_EQ(pieces[1], "777") << pre;
    EXPECT_EQ(pieces[6666], "777") << pre;
    EXPECT_EQ(pieces.back(), " x") << pre;
  }
  // tiny_aya's \b: a run that a word character follows is not grouped from the right; its
  // second regex then takes the digits from the left, three at a time.
  EXPECT_EQ(split("tiny_aya", "1234x 1234"), (Pieces{"123", "4", "x", " ", "1", "234"}));
}

TEST(PreTokenizer, DeepseekLlmRunsItsSixRegexesInOrder) {
  EXPECT_EQ(split("deepseek-llm", "Hi 中文 42!\nok"),
            (Pieces{"Hi", " ", "中文", " ", "42", "!", "\n", "ok"}));
}

TEST(PreTokenizer, Llama3GroupsDigitsByThree) {
  EXPECT_EQ(split("llama-bpe", "12345 x1234567"), (Pieces{"123", "45", " x", "123", "456", "7"}));
}

TEST(PreTokenizer, Llama3MatchesContractionsInAnyCase) {
  EXPECT_EQ(split("llama3", "I'M you'Re"), (Pieces{"I", "'M", " you", "'Re"}));
}

TEST(PreTokenizer, Llama3AttachesOnePunctuationCharacterToTheFollowingWord) {
  // [^\r\n\p{L}\p{N}]?\p{L}+ takes one leading non-letter, so "(hello" stays one piece;
  // " $" is two, so the punctuation alternative takes them and "world" stands alone.
  EXPECT_EQ(split("llama3", "(hello) $world"), (Pieces{"(hello", ")", " $", "world"}));
}

TEST(PreTokenizer, Llama3KeepsNewlinesWithPunctuationAndApartFromWords) {
  EXPECT_EQ(split("llama3", "hi!!\n\nthere\n \n  x"),
            (Pieces{"hi", "!!\n\n", "there", "\n \n", " ", " x"}));
}

TEST(PreTokenizer, Llama3TreatsNonLatinLettersAndNumbersByUnicodeCategory) {
  // CJK ideographs are letters; "½" and Arabic-Indic digits are numbers.
  EXPECT_EQ(split("llama3", "我想在apple工作 ½ ١٢٣٤"),
            (Pieces{"我想在apple工作", " ", "½", " ", "١٢٣", "٤"}));
}

TEST(PreTokenizer, Qwen2SplitsDigitsOneByOne) {
  EXPECT_EQ(split("qwen2", "abc 2024!\n"), (Pieces{"abc", " ", "2", "0", "2", "4", "!\n"}));
}

TEST(PreTokenizer, Qwen2SharesLlama3sRulesForWordsAndContractions) {
  EXPECT_EQ(split("qwen2", "We'LL see\tnow"), (Pieces{"We", "'LL", " see", "\tnow"}));
}

TEST(PreTokenizer, SmollmSplitsDigitsOneByOneThenAppliesGpt2) {
  EXPECT_EQ(split("smollm", "abc123 de"), (Pieces{"abc", "1", "2", "3", " de"}));
}

std::string error_for(std::string_view name) {
  try {
    PreTokenizer pre(name);
  } catch (const gguf::GgufError& e) {
    return e.what();
  }
  return "";
}

TEST(PreTokenizer, UnknownNameIsAOneLineErrorNamingItAndListingTheSupportedNames) {
  const std::string message = error_for("no-such-pre");
  EXPECT_NE(message.find("'no-such-pre'"), std::string::npos) << message;
  EXPECT_NE(message.find("supported: default, llama3, "), std::string::npos) << message;
  EXPECT_NE(message.find("tekken"), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

TEST(PreTokenizer, NamesLlamaCppKnowsButTandemCannotRunAreRefusedWithTheReason) {
  EXPECT_NE(error_for("kimi-k2").find("'kimi-k2' is not supported: "), std::string::npos);
  EXPECT_NE(error_for("gemma4").find("not byte-level BPE"), std::string::npos);
  EXPECT_NE(error_for("roberta-bpe").find("SEP"), std::string::npos);
}

TEST(PreTokenizer, InvalidUtf8BytesComeOutAsTheirOwnPieces) {
  EXPECT_EQ(split("llama3", "ab\xFF\xC0 cd"), (Pieces{"ab", "\xFF\xC0", " cd"}));
}

TEST(PreTokenizer, PiecesAreNonEmptyAndConcatenateBackToTheInput) {
  const std::vector<std::string> alphabet = {"a", "Z", " ", "  ", "\n",   "\r\n", "\t", "7",
                                             "'", "s", "é", "中", "🦙", "!",    ".",  "\xFF"};
  std::mt19937 rng(7);
  for (std::string_view pre : PreTokenizer::supported_names()) {
    const PreTokenizer tokenizer(pre);
    for (int round = 0; round < 200; ++round) {
      std::string text;
      const int length = static_cast<int>(rng() % 40);
      for (int i = 0; i < length; ++i) text += alphabet[rng() % alphabet.size()];
      std::string joined;
      for (std::string_view piece : tokenizer.split(text)) {
        ASSERT_FALSE(piece.empty());
        joined += piece;
      }
      ASSERT_EQ(joined, text) << pre;
    }
  }
}

}  // namespace
}  // namespace tandem::TANDEM_UNITY_ID
